"""`manager`: AutoPhysicist (physics-intern write-up, §4, and its public code) -- one Research
Manager, nothing else hard-coded.

The manager works in iterations (at most 50). Each iteration is a fresh pydantic-ai run whose prompt
holds the problem, the permanent memory (in full, entries tagged with their iteration) and the last
``scratchpad_window`` (5) scratchpad entries; no conversation carries over. Its tools:

- ``dispatch_subagent(system_prompt, user_message, execute_code=False)`` -- an ephemeral helper
  (role ``subagent``) with exactly the prompts the manager wrote and no tools; with ``execute_code``
  the one Python script of its reply runs in ``ctx.sandbox``, and a failing script goes back to the
  helper with its error, up to ``code_attempts`` (3) tries in all;
- ``write_to_permanent_memory(content)``, ``write_to_scratchpad(content)``;
- ``submit_final_answer(answer_text, answer_code)`` (an output tool: it ends the run). A plain-text
  reply ends the iteration (the public code's ``end_turn``).

Per iteration (the public code's numbers): once ``iteration_tokens`` (64K, the manager's and its
helpers' tokens together) are spent or ``tool_call_cap`` (15) tool calls made, the dispatch tool is
withdrawn and the manager told to wrap up; at ``hard_stop_factor`` (1.5) times the token budget, or
after ``max_rounds`` (30) manager requests, the iteration is cut off (``hard_stop``: at the reply that
crosses, PhysLab's; or after that round's tool calls, the public code's). A helper's reply longer than
``helper_reply_chars`` (10,000; unset: whole, the public code's) reaches the manager with its middle cut. A run that ends without a
submission has no answer, as in the public code; ``wrap_up=true`` (PhysLab's switch) instead keeps
room within the run's budget for one last request that may only submit.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext as AgentContext, Tool
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import ModelMessage
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

from physlab.grading.extract import extract_code
from physlab.llm.errors import ModelFailure, budget_error
from physlab.llm.output import structured_output
from physlab.run.environment import RunEnvironment
from physlab.run.events import Iteration
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

_MAX_TOOL_OUTPUT = 10_000  # the public code's truncation of a script's output (head and tail kept)
_CODE = "physics-intern public code, src/open_dirac/autophysicist/"
_WRAP_UP_SHARE = 0.1  # of a token or cost cap, kept for the wrap-up request when wrap_up is on


class ManagerParams(ModelParams):
    max_iterations: int = param(50, "Iterations (each a fresh run of the manager).",
                                f"{_CODE}runner.py: --max-iterations default 50", ge=1)
    iteration_tokens: int = param(
        64_000, "Tokens of one iteration (the manager's and its helpers') after which the dispatch tool "
        "is withdrawn and the manager told to wrap up.", f"{_CODE}runner.py: --token-budget default 64000 "
        "(tools.py: the soft wind-down trigger)", ge=1000)
    hard_stop_factor: float = param(
        1.5, "The iteration is cut off at this multiple of iteration_tokens (unsaved work is lost).",
        f"{_CODE}tools.py: HARD_BUDGET_MULTIPLIER = 1.5", ge=1.0)
    tool_call_cap: int = param(15, "Tool calls in one iteration after which the dispatch tool is withdrawn.",
                               f"{_CODE}runner.py: --tool-call-cap default 15", ge=1)
    max_rounds: int = param(30, "Manager requests one iteration may make.",
                            f"{_CODE}runner.py: --max-rounds default 30", ge=1)
    scratchpad_window: int = param(5, "Scratchpad entries shown to the manager (the most recent).",
                                   f"{PHYSICS_INTERN} §4, AutoPhysicist: 'only the last 5 entries shown'; "
                                   f"{_CODE}runner.py --scratchpad-window 5", ge=1)
    code_timeout_s: float = param(60.0, "Seconds one helper script may run in the sandbox.",
                                  f"{_CODE}runner.py: --sandbox-timeout default 60", ge=1.0)
    code_attempts: int = param(3, "Tries a helper gets to write a script that runs (the first included).",
                               f"{_CODE}subagent.py: max_retries=3", ge=1)
    wrap_up: bool = param(
        False, "When the manager never submits, one last request (only submit_final_answer offered, from "
        "room kept within the run's budget) turns its memory into an answer.",
        f"PhysLab's switch; off by default as in {_CODE}runner.py, which writes no answer when the manager "
        "never submits")
    helper_reply_chars: int | None = param(
        _MAX_TOOL_OUTPUT, "A helper's reply (its reasoning) longer than this reaches the manager with its middle "
                          "cut (head and tail kept); unset: whole. A script's output is cut at 10,000 either way.",
        f"PhysLab: one helper's essay cannot fill the manager's context (the cut is the public code's own for a "
        f"script's output); {_CODE}subagent.py (format_for_manager) returns the reply whole -- --protocol paper "
        "unsets it", ge=1000)
    hard_stop: Literal["at_reply", "after_round"] = param(
        "at_reply", "When the iteration's tokens pass hard_stop_factor x iteration_tokens: 'at_reply' ends it at "
                    "the manager's reply that crosses (its tool calls are not run); 'after_round' runs that "
                    "round's tool calls first, then ends it.",
        f"PhysLab: nothing is spent past the hard cap (pydantic-ai's token limit); {_CODE}tools.py (end_round, "
        "after each round's tool results) is 'after_round' -- --protocol paper")

    protocols = {"paper": {"helper_reply_chars": None, "hard_stop": "after_round"}}  # --protocol paper


class FinalAnswer(BaseModel):
    """Submit the final answer and end the research."""

    answer_text: str = Field(description="The answer with a short justification (Markdown).")
    answer_code: str = Field(default="", description="The completed answer template (Python); "
                             "empty when the problem has no template.")


@dataclass
class ManagerState:
    memory: list[tuple[int, str]] = field(default_factory=list)  # (iteration, entry)
    scratchpad: list[tuple[int, str]] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    final: FinalAnswer | None = None

    def scratch_window(self, window: int) -> list[tuple[int, int, str]]:
        """The last ``window`` entries as (entry number, iteration, text)."""
        start = max(0, len(self.scratchpad) - window)
        return [(i + 1, *self.scratchpad[i]) for i in range(start, len(self.scratchpad))]


def iteration_prompt(ctx: RunEnvironment, state: ManagerState, iteration: int, max_iterations: int,
                     window: int, note: str) -> str:
    memory = "\n\n".join(f"[{i + 1}, iteration {it}] {m}" for i, (it, m) in enumerate(state.memory)) or \
        "(empty: no results recorded yet)"
    scratch = "\n\n".join(f"[{n}, iteration {it}] {s}" for n, it, s in state.scratch_window(window)) or \
        "(empty: no working notes yet)"
    return render("manager_iteration", iteration=str(iteration),
                  max_iterations=str(max_iterations), problem=ctx.problem.statement.strip(),
                  requirements=answer_requirements(ctx.problem), memory=memory,
                  window=str(window), scratch_total=str(len(state.scratchpad)),
                  scratchpad=scratch, note=note)


def _clip(text: str, limit: int | None = _MAX_TOOL_OUTPUT) -> str:
    if limit is None or len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n\n[... {len(text) - limit} characters cut ...]\n\n" + text[-half:]


_FENCED = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def first_script(reply: str) -> str | None:
    """The first fenced Python block of a helper's reply (the public code runs that one)."""
    m = _FENCED.search(reply)
    return m.group(1).strip() or None if m else None


class _IterationOver(Exception):
    """The iteration's requests are used up (max_rounds): it ends like a cut-off iteration."""


class _Session:
    """One run of the manager: its memory and scratchpad, the iteration under way (``current``: its
    tool calls, requests, dispatches and how it ended) and the tools the manager calls on them."""

    def __init__(self, ctx: RunEnvironment, p: ManagerParams, settings: ModelSettings | None):
        self.ctx, self.p, self.settings = ctx, p, settings
        self.state = ManagerState()
        self.current: dict[str, Any] = {}
        self.hard_limit = int(p.iteration_tokens * p.hard_stop_factor)

    def tools(self) -> list[Tool[None]]:
        return [Tool(self.dispatch_subagent, name="dispatch_subagent", prepare=self.prepare_dispatch),
                Tool(self.write_to_permanent_memory), Tool(self.write_to_scratchpad)]

    def _tool_called(self) -> None:
        self.current["tool_calls"] = self.current.get("tool_calls", 0) + 1

    async def run_script(self, code: str) -> tuple[bool, str]:
        timeout = self.p.code_timeout_s
        res = await self.ctx.sandbox.run(code, limits=SandboxLimits(timeout_s=timeout))
        if res.timed_out:
            return False, f"TIMEOUT: the script ran past {timeout:g} s."
        if res.exit_code == 0:
            out = res.stdout + (f"\n\nSTDERR (warnings):\n{res.stderr}" if res.stderr.strip() else "")
            return True, out
        return False, (f"STDOUT:\n{res.stdout}\n\nSTDERR:\n{res.stderr}" if res.stdout.strip()
                       else res.stderr or f"exit code {res.exit_code}")

    async def dispatch_subagent(self, rctx: AgentContext[None], system_prompt: str,
                                user_message: str, execute_code: bool = False) -> str:
        """Start a fresh helper that knows only the system prompt and the message you write, and
        return its reply. With execute_code=True the one Python script of its reply is run in a
        sandbox (NumPy, SciPy, SymPy) and a failing script goes back to it to be corrected."""
        p = self.p
        self._tool_called()
        record: dict[str, Any] = {"system_prompt": system_prompt, "user_message": user_message,
                                  "execute_code": execute_code}
        self.current.setdefault("dispatches", []).append(record)
        instructions = system_prompt + (render("manager_code_rules", timeout=f"{p.code_timeout_s:g}")
                                        if execute_code else "")
        sub: Agent[None, str] = Agent(self.ctx.models.for_role("subagent"), instructions=instructions)
        try:
            if not execute_code:
                # usage=rctx.usage: the helper's tokens count against the iteration's budget.
                result = await sub.run(user_message, usage=rctx.usage, model_settings=self.settings,
                                       usage_limits=UsageLimits(request_limit=None))
                record["reply"] = result.output
                return _clip(result.output, p.helper_reply_chars)
            return await self._coding_helper(sub, rctx, user_message, record)
        except ModelFailure as exc:
            record["error"] = error_text(exc)
            return f"[the helper failed: {exc}]"

    async def _coding_helper(self, sub: Agent[None, str], rctx: AgentContext[None], prompt: str,
                             record: dict[str, Any]) -> str:
        """A helper whose script runs: a failing one goes back to it with its error, up to
        ``code_attempts`` tries in all."""
        p = self.p
        history: list[ModelMessage] | None = None
        for attempt in range(1, p.code_attempts + 1):
            result = await sub.run(prompt, message_history=history, usage=rctx.usage,
                                   model_settings=self.settings, usage_limits=UsageLimits(request_limit=None))
            reply = result.output
            code = first_script(reply) or record.get("code")
            if code is None:
                record.update(reply=reply, status="no_code")
                return (f"<subagent_reasoning>\n{_clip(reply, p.helper_reply_chars)}\n</subagent_reasoning>"
                        "\n\n<execution status=\"no_code\">No Python script in the reply.</execution>")
            ok, output = await self.run_script(code)
            record.update(reply=reply, code=code, attempts=attempt)
            if ok:
                record["status"] = "success"
                return _helper_report(reply, code, "success", output, p.helper_reply_chars)
            if attempt == p.code_attempts:
                record["status"] = "failed_after_retries"
                return _helper_report(reply, code, "failed_after_retries",
                                      f"{_clip(output, 5000)}\n\nThe script failed {attempt} times.",
                                      p.helper_reply_chars)
            history = result.all_messages()
            prompt = render("manager_code_retry", attempt=str(attempt), attempts=str(p.code_attempts),
                            error=_clip(output, 5000))
        return ""  # not reached: the loop returns on its last attempt

    def write_to_permanent_memory(self, content: str) -> str:
        """Append an entry to the permanent memory (shown in full in every later iteration).
        Only for checked results, each self-contained: what, how it was checked, assumptions."""
        self._tool_called()
        if not content.strip():
            return "ERROR: content cannot be empty."
        self.state.memory.append((self.current["iteration"], content))
        return f"stored as memory entry {len(self.state.memory)} (iteration {self.current['iteration']})"

    def write_to_scratchpad(self, content: str) -> str:
        """Append a working note to the scratchpad (only the most recent notes stay in view)."""
        self._tool_called()
        if not content.strip():
            return "ERROR: content cannot be empty."
        self.state.scratchpad.append((self.current["iteration"], content))
        return f"stored as scratchpad entry {len(self.state.scratchpad)} (iteration {self.current['iteration']})"

    def wind_down_reason(self, rctx: AgentContext[None]) -> str | None:
        spent = rctx.usage.total_tokens
        if spent >= self.p.iteration_tokens:
            return f"{spent:,} of {self.p.iteration_tokens:,} tokens used"
        if self.current.get("tool_calls", 0) >= self.p.tool_call_cap:
            return f"{self.current['tool_calls']} of {self.p.tool_call_cap} tool calls made"
        return None

    async def prepare_dispatch(self, rctx: AgentContext[None], tool_def: ToolDefinition) -> ToolDefinition | None:
        if self.wind_down_reason(rctx) is not None:
            self.current["wound_down"] = True
            return None  # wind-down: the dispatch tool is withdrawn
        return tool_def

    def each_request(self, rctx: AgentContext[None]) -> str:
        """The instructions' last part, made before each manager request: the wind-down notice,
        and the end of an iteration whose requests are used up."""
        self.current["requests"] = self.current.get("requests", 0) + 1
        if self.current["requests"] > self.p.max_rounds:
            raise _IterationOver(f"{self.p.max_rounds} manager requests made")
        spent = rctx.usage.total_tokens
        if self.p.hard_stop == "after_round" and spent >= self.hard_limit:  # the round that crossed has run
            raise _IterationOver(f"{spent:,} tokens used, past the hard cap of {self.hard_limit:,}")
        why = self.wind_down_reason(rctx)
        return render("manager_wind_down", why=why).strip() if why else ""

    async def iterate(self, agent: Agent[None, str | FinalAnswer], prompt: str) -> str | FinalAnswer:
        """One iteration's run of the manager: its reply (a submission or its turn's text). Raises
        what ended it early (the iteration's limits: ``UsageLimitExceeded``, ``_IterationOver``)."""
        # at_reply: pydantic-ai stops at the reply that crosses; after_round: each_request does, after it
        token_limit = self.hard_limit if self.p.hard_stop == "at_reply" else None
        result = await agent.run(with_images(self.ctx, prompt), model_settings=self.settings,
                                 usage_limits=UsageLimits(total_tokens_limit=token_limit, request_limit=None))
        self.current["tokens"] = result.usage.total_tokens
        return result.output

    def ended(self, how: str, **more: Any) -> None:
        """The iteration under way ended so (its record kept, with ``more``)."""
        self.current["ended"] = how
        self.current.update(more)
        self.state.iterations.append(_iteration_record(self.current))


_CUT_OFF = ("(The previous iteration was cut off when its budget ran out; anything not "
            "written to memory or the scratchpad was lost.)")


class Manager(Strategy[ManagerParams]):
    """AutoPhysicist: one research manager dispatching subagents it writes the prompts of."""

    name = "manager"
    Params = ManagerParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        p = self.params
        settings = cast("ModelSettings | None", model_settings(p))  # the TypedDict pydantic-ai reads
        started = time.monotonic()
        session = _Session(ctx, p, settings)
        state = session.state
        system = render("manager_system", window=str(p.scratchpad_window))
        if p.wrap_up:
            ctx.usage.set_aside(calls=1, share=_WRAP_UP_SHARE)
        manager = ctx.models.for_role("manager")
        tools = session.tools()
        stop_reason = "max_iterations"
        note = ""
        for iteration in range(1, p.max_iterations + 1):
            session.current = {"iteration": iteration}
            agent: Agent[None, str | FinalAnswer] = Agent(
                manager, instructions=[system, session.each_request], tools=tools,
                output_type=structured_output(manager, FinalAnswer, name="submit_final_answer", allow_text=True,
                                              description="Submit the final answer and end the research."))
            prompt = iteration_prompt(ctx, state, iteration, p.max_iterations, p.scratchpad_window, note)
            session.current["scratchpad_shown"] = [n for n, _, _ in state.scratch_window(p.scratchpad_window)]
            ctx.events(Iteration(strategy=self.name, iteration=iteration))
            try:
                output = await session.iterate(agent, prompt)
            except (UsageLimitExceeded, _IterationOver) as exc:
                session.ended(f"iteration_limit: {exc}")
                note = _CUT_OFF
                continue
            except Exception as exc:  # noqa: BLE001
                if budget_error(exc) is None:
                    session.ended(f"error: {error_text(exc)}")
                    return self._attempt(ctx, state, started, "error", "model_error", error=error_text(exc))
                session.ended("budget")
                stop_reason = budget_reason(exc)
                break
            if isinstance(output, FinalAnswer):
                state.final = output
                session.ended("submitted")
                return self._attempt(ctx, state, started, "complete", "submitted")
            session.ended("turn_ended", status=output[:2000])
            note = ""
        if not p.wrap_up:  # the public code: no submission, no answer
            return self._attempt(ctx, state, started, "no_answer", stop_reason)
        return await self._wrap_up(ctx, state, started, stop_reason, settings)

    async def _wrap_up(self, ctx: RunEnvironment, state: ManagerState, started: float, reason: str,
                       settings: ModelSettings | None) -> Attempt:
        """The forced wind-down (wrap_up=true): only submit_final_answer is offered, once, from the
        room kept for it within the run's budget."""
        manager = ctx.models.for_role("manager")
        agent: Agent[None, FinalAnswer] = Agent(
            manager, instructions=load_prompt("manager_system_final"),
            output_type=structured_output(manager, FinalAnswer, name="submit_final_answer",
                                          description="Submit the final answer."))
        prompt = iteration_prompt(ctx, state, len(state.iterations) + 1, len(state.iterations) + 1,
                                  10**6, load_prompt("manager_wind_down_final").strip())
        try:
            with ctx.usage.finishing():
                result = await agent.run(prompt, model_settings=settings, usage_limits=UsageLimits(request_limit=2))
        except Exception as exc:  # noqa: BLE001 - no answer could be forced
            return self._attempt(ctx, state, started, "no_answer", reason, error=error_text(exc))
        state.final = result.output
        return self._attempt(ctx, state, started, "partially_complete", reason)

    def _attempt(self, ctx: RunEnvironment, state: ManagerState, started: float, status: AttemptStatus, reason: str,
                 error: str | None = None) -> Attempt:
        text = code = None
        if state.final is not None:
            text = state.final.answer_text.strip() or None
            raw = state.final.answer_code.strip()
            if ctx.problem.has_template and raw:
                code = extract_code(raw) if "```" in raw else raw
        details = {"iterations": state.iterations, "memory": [m for _, m in state.memory],
                   "scratchpad": [s for _, s in state.scratchpad], "forced_wrap_up": reason != "submitted"}
        if error:
            details["error"] = error
        return finish(ctx, self.name, status, reason, started=started, answer_text=text,
                      answer_code=code, details=details)


def _helper_report(reasoning: str, code: str, status: str, output: str, reply_chars: int | None) -> str:
    """What the manager reads of a coding helper: its reasoning, the last script, what it printed."""
    prose = _FENCED.sub("", reasoning, count=1).strip()
    return (f"<subagent_reasoning>\n{_clip(prose, reply_chars)}\n</subagent_reasoning>\n\n<code>\n{code}\n</code>\n\n"
            f"<execution_output status=\"{status}\">\n{_clip(output)}\n</execution_output>")


def _iteration_record(current: dict[str, Any]) -> dict[str, Any]:
    rec = dict(current)
    rec["dispatches"] = [
        {k: (v[:2000] if isinstance(v, str) else v) for k, v in d.items()}
        for d in current.get("dispatches", [])
    ]
    return rec
