"""`manager`: AutoPhysicist (physics-intern write-up, §4) -- one Research Manager, nothing else
hard-coded.

The manager works in iterations. Each iteration is a fresh pydantic-ai run whose prompt holds the
problem, the permanent memory (in full) and the last ``scratchpad_window`` (5) scratchpad entries;
no conversation carries over. Its tools:

- ``dispatch_subagent(system_prompt, user_message, execute_code=False)`` -- an ephemeral agent
  (role ``subagent``) with exactly the prompts the manager wrote; with ``execute_code`` it gets a
  ``run_python`` tool backed by ``ctx.sandbox``;
- ``write_to_permanent_memory(content)``, ``write_to_scratchpad(content)``;
- ``submit_final_answer(answer_text, answer_code)`` (an output tool: it ends the run).

Per-iteration token budget (``iteration_tokens``, counting the subagents' tokens too): once
``wind_down_fraction`` of it is spent the dispatch tool is withdrawn from the tool list and the
manager is told to wrap up; at the full budget the iteration is cut. The last iteration runs in
wind-down from its start. If the run ends without a submission (iterations or the run's Budget
exhausted), one forced wind-down request (only ``submit_final_answer`` offered; granted past the
budget through ``ctx.usage.grace``) turns the memory into the best supported answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext as AgentContext, Tool
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

from physlab.grading.extract import extract_code
from physlab.llm.errors import ModelFailure, budget_error
from physlab.llm.output import structured_output
from physlab.run.environment import RunEnvironment
from physlab.sandbox import SandboxLimits
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.params import PHYSICS_INTERN, ModelParams, param
from physlab.strategies.sampling import (
    answer_requirements,
    budget_reason,
    error_text,
    finish,
    load_prompt,
    model_settings,
    render,
    with_images,
)

_MAX_TOOL_OUTPUT = 20_000
_OURS = "PhysLab: the write-up gives no number"


class ManagerParams(ModelParams):
    max_iterations: int = param(10, "Iterations (each a fresh run of the manager).", _OURS, ge=1)
    iteration_tokens: int = param(200_000, "Token budget of one iteration, its subagents included.",
                                  _OURS, ge=1000)
    wind_down_fraction: float = param(0.8, "Share of the iteration budget after which the dispatch tool "
                                      "is withdrawn and the manager told to wrap up.", _OURS, ge=0.0, le=1.0)
    scratchpad_window: int = param(5, "Scratchpad entries shown to the manager (the most recent).",
                                   f"{PHYSICS_INTERN} §4, AutoPhysicist: 'only the last 5 entries shown'", ge=1)
    code_timeout_s: float = param(60.0, "Seconds one subagent script may run in the sandbox.", _OURS, ge=1.0)
    max_requests_per_iteration: int = param(60, "Model requests one iteration may make (tool loops included).",
                                            _OURS, ge=1)


class FinalAnswer(BaseModel):
    """Submit the final answer and end the research."""

    answer_text: str = Field(description="The answer with a short justification (Markdown).")
    answer_code: str = Field(default="", description="The completed answer template (Python); "
                             "empty when the problem has no template.")


@dataclass
class ManagerState:
    memory: list[str] = field(default_factory=list)
    scratchpad: list[str] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    final: FinalAnswer | None = None

    def scratch_window(self, window: int) -> list[tuple[int, str]]:
        start = max(0, len(self.scratchpad) - window)
        return [(i + 1, self.scratchpad[i]) for i in range(start, len(self.scratchpad))]


def iteration_prompt(ctx: RunEnvironment, state: ManagerState, iteration: int, max_iterations: int,
                     window: int, note: str) -> str:
    memory = "\n\n".join(f"[{i + 1}] {m}" for i, m in enumerate(state.memory)) or "(empty)"
    scratch = "\n\n".join(f"[{n}] {s}" for n, s in state.scratch_window(window)) or "(empty)"
    return render("manager_iteration", iteration=str(iteration),
                  max_iterations=str(max_iterations), problem=ctx.problem.statement.strip(),
                  requirements=answer_requirements(ctx.problem), memory=memory,
                  window=str(window), scratch_total=str(len(state.scratchpad)),
                  scratchpad=scratch, note=note)


def _clip(text: str, limit: int = _MAX_TOOL_OUTPUT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} chars cut]"


class Manager(Strategy[ManagerParams]):
    """AutoPhysicist: one research manager dispatching subagents it writes the prompts of."""

    name = "manager"
    Params = ManagerParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        p = self.params
        max_iterations, iteration_tokens, window = p.max_iterations, p.iteration_tokens, p.scratchpad_window
        code_timeout, max_requests = p.code_timeout_s, p.max_requests_per_iteration
        settings = cast("ModelSettings | None", model_settings(p))  # the TypedDict pydantic-ai reads
        started = time.monotonic()
        state = ManagerState()
        system = render("manager_system", window=str(window))
        wind_down_at = int(iteration_tokens * p.wind_down_fraction)

        async def run_python(code: str) -> str:
            """Run a Python script in the sandbox and return its exit code, stdout and stderr."""
            res = await ctx.sandbox.run(code, limits=SandboxLimits(timeout_s=code_timeout))
            status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
            return _clip(f"[{status}]\nSTDOUT:\n{res.stdout}\nSTDERR:\n{res.stderr}")

        current: dict[str, Any] = {}

        async def dispatch_subagent(rctx: AgentContext[None], system_prompt: str,
                                    user_message: str, execute_code: bool = False) -> str:
            """Start a fresh helper agent with the system prompt and message you write and return
            its reply. With execute_code=True it can run Python (SymPy, NumPy, SciPy) in a
            sandbox."""
            tools = [Tool(run_python, name="run_python")] if execute_code else []
            sub: Agent[None, str] = Agent(ctx.models.for_role("subagent"),
                                          instructions=system_prompt, tools=tools)
            record = {"system_prompt": system_prompt, "user_message": user_message,
                      "execute_code": execute_code}
            current.setdefault("dispatches", []).append(record)
            try:
                # usage=rctx.usage: the helper's tokens count against this iteration's budget.
                result = await sub.run(user_message, usage=rctx.usage, model_settings=settings,
                                       usage_limits=UsageLimits(request_limit=None))
            except ModelFailure as exc:
                record["error"] = error_text(exc)
                return f"[the subagent failed: {exc}]"
            record["reply"] = result.output
            return _clip(result.output)

        def write_to_permanent_memory(content: str) -> str:
            """Append text to the permanent memory (always shown in full)."""
            state.memory.append(content)
            return f"stored as memory entry {len(state.memory)}"

        def write_to_scratchpad(content: str) -> str:
            """Append a note to the scratchpad (only the most recent notes are shown)."""
            state.scratchpad.append(content)
            return f"stored as scratchpad entry {len(state.scratchpad)}"

        def winding_down(rctx: AgentContext[None]) -> bool:
            return bool(current.get("final_iteration")) or rctx.usage.total_tokens >= wind_down_at

        async def prepare_dispatch(rctx: AgentContext[None], tool_def: ToolDefinition
                                   ) -> ToolDefinition | None:
            if winding_down(rctx):
                current["wound_down"] = True
                return None  # wind-down: the dispatch tool is withdrawn
            return tool_def

        def wind_down_note(rctx: AgentContext[None]) -> str:
            if winding_down(rctx):
                return load_prompt("manager_wind_down").strip()
            return ""

        manager = ctx.models.for_role("manager")
        tools: list[Tool[None]] = [Tool(dispatch_subagent, name="dispatch_subagent", prepare=prepare_dispatch),
                                   Tool(write_to_permanent_memory), Tool(write_to_scratchpad)]
        stop_reason = "max_iterations"
        budget_hit: BaseException | None = None
        note = ""
        for iteration in range(1, max_iterations + 1):
            current = {"iteration": iteration, "final_iteration": iteration == max_iterations}
            agent: Agent[None, str | FinalAnswer] = Agent(
                manager, instructions=[system, wind_down_note], tools=tools,
                output_type=structured_output(manager, FinalAnswer, name="submit_final_answer", allow_text=True,
                                              description="Submit the final answer and end the research."))
            prompt = iteration_prompt(ctx, state, iteration, max_iterations, window, note)
            current["scratchpad_shown"] = [n for n, _ in state.scratch_window(window)]
            ctx.events("iteration", strategy=self.name, iteration=iteration)
            try:
                result = await agent.run(
                    with_images(ctx, prompt), model_settings=settings,
                    usage_limits=UsageLimits(total_tokens_limit=iteration_tokens,
                                             request_limit=max_requests))
            except UsageLimitExceeded as exc:
                current["ended"] = f"iteration_limit: {exc}"
                note = ("(The previous iteration was cut off when its token budget ran out; "
                        "anything not written to memory or the scratchpad was lost.)")
                state.iterations.append(_iteration_record(current))
                continue
            except Exception as exc:  # noqa: BLE001
                if budget_error(exc) is None:
                    current["ended"] = f"error: {error_text(exc)}"
                    state.iterations.append(_iteration_record(current))
                    return self._attempt(ctx, state, started, "error", "model_error",
                                         error=error_text(exc))
                budget_hit = exc
                current["ended"] = "budget"
                state.iterations.append(_iteration_record(current))
                stop_reason = budget_reason(exc)
                break
            current["tokens"] = result.usage.total_tokens
            if isinstance(result.output, FinalAnswer):
                state.final = result.output
                current["ended"] = "submitted"
                state.iterations.append(_iteration_record(current))
                return self._attempt(ctx, state, started, "complete", "submitted")
            current["ended"] = "turn_ended"
            current["status"] = result.output[:2000]
            state.iterations.append(_iteration_record(current))
            note = ""
        return await self._wrap_up(ctx, state, started, "partially_complete", stop_reason,
                                   settings, graced=budget_hit is not None)

    async def _wrap_up(self, ctx: RunEnvironment, state: ManagerState, started: float, status: AttemptStatus,
                       reason: str, settings: ModelSettings | None, *, graced: bool) -> Attempt:
        """The forced wind-down: only submit_final_answer is offered, once."""
        manager = ctx.models.for_role("manager")
        agent: Agent[None, FinalAnswer] = Agent(
            manager, instructions=load_prompt("manager_system_final"),
            output_type=structured_output(manager, FinalAnswer, name="submit_final_answer",
                                          description="Submit the final answer."))
        prompt = iteration_prompt(ctx, state, len(state.iterations) + 1, len(state.iterations) + 1,
                                  10**6, load_prompt("manager_wind_down_final").strip())
        try:
            if graced:
                with ctx.usage.grace(1):
                    result = await agent.run(prompt, model_settings=settings,
                                             usage_limits=UsageLimits(request_limit=2))
            else:
                result = await agent.run(prompt, model_settings=settings,
                                         usage_limits=UsageLimits(request_limit=2))
        except Exception as exc:  # noqa: BLE001 - no answer could be forced
            return self._attempt(ctx, state, started, "no_answer", reason,
                                 error=error_text(exc))
        state.final = result.output
        return self._attempt(ctx, state, started, status, reason)

    def _attempt(self, ctx: RunEnvironment, state: ManagerState, started: float, status: AttemptStatus, reason: str,
                 error: str | None = None) -> Attempt:
        text = code = None
        if state.final is not None:
            text = state.final.answer_text.strip() or None
            raw = state.final.answer_code.strip()
            if ctx.problem.has_template and raw:
                code = extract_code(raw) if "```" in raw else raw
        details = {"iterations": state.iterations, "memory": state.memory,
                   "scratchpad": state.scratchpad, "forced_wrap_up": reason != "submitted"}
        if error:
            details["error"] = error
        return finish(ctx, self.name, status, reason, started=started, answer_text=text,
                      answer_code=code, details=details)


def _iteration_record(current: dict[str, Any]) -> dict[str, Any]:
    rec = dict(current)
    rec["dispatches"] = [
        {k: (v[:2000] if isinstance(v, str) else v) for k, v in d.items()}
        for d in current.get("dispatches", [])
    ]
    return rec

