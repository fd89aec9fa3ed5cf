"""Shared plumbing for the roles: prompt files, the per-call agent, and the sandbox tool."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, RunContext as CallContext
from pydantic_ai.messages import CachePoint, ToolCallPart, UserContent
from pydantic_ai.settings import CacheConfig, ModelSettings
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.usage import UsageLimits

from physlab.lab.context import RolePrompt, clip, guide
from physlab.llm.context_fit import fitting
from physlab.llm.output import structured_output
from physlab.run.environment import RunEnvironment
from physlab.run.events import Emit, RoleEnd, RoleStart, System, ignore
from physlab.sandbox.types import SandboxLimits


class RoleTools(Protocol):
    """The run's tools beyond Python (physlab.lab.tools.LabTools): what each role gets of them."""

    def tools(self, role: str) -> list[Any]: ...

    def capabilities(self, role: str, model: Any) -> list[Any]: ...

    def guide(self, role: str) -> str: ...


@dataclass
class LabEnv:
    """What a role call needs from the run: the RunEnvironment pieces, settings and an event hook."""

    ctx: RunEnvironment
    code_timeout_s: float = 120.0
    code_memory_mb: int = 4096
    tool_retries: int = 3
    request_limit: int = 24                   # model requests per role call (bounded tool loops)
    model_settings: dict[str, Any] | None = None
    notify: Emit = field(default=ignore)  # the run's progress events (the engine's emit)
    toolbox: RoleTools | None = None        # --tools: computer algebra, the literature, web search
    judges_compute: bool = True             # the reviewer and the adjudicator may run code (LabSettings)
    standards: bool = True                  # roles/standards.md opens the physics roles' instructions
    max_output_tokens: dict[str, int] = field(default_factory=dict)   # per role (LabSettings)

    def extra_tools(self, role: str) -> list[Any]:
        return self.toolbox.tools(role) if self.toolbox is not None else []

    def model(self, role: str):
        return self.ctx.models.for_role(role)


def prompt(role: str) -> str:
    return resources.files("physlab.lab.roles").joinpath(f"{role}.md").read_text(encoding="utf-8")


# Roles that do or judge physics also get the lab's standards (conventions, routine checks,
# pitfalls): one text, so every role is held to the same ones.
WITH_STANDARDS = {"surveyor", "planner", "researcher", "computer", "reviewer", "critic", "adjudicator"}


# Shrink levels (a prompt that does not fit the model's context window, see run_role) at which the
# guide to the context's sections, then the standards, are left out: after the older windows, and
# never the role's own task.
NO_GUIDE_LEVEL, NO_STANDARDS_LEVEL = 3, 4


# The judges whose prompts say how they check: by computing themselves (PhysLab) or by assessing
# what is given, with no tools (physics-intern's reviewer and adjudicator).
JUDGES = {"reviewer", "adjudicator"}


def role_prompt(role: str, *, computes: bool = True) -> str:
    """The role's prompt file, each ``[[part]]`` in it replaced by ``<role>_<part>_compute.md`` or,
    for a judge that does not compute, ``<role>_<part>_assess.md``."""
    variant = "compute" if computes or role not in JUDGES else "assess"
    return re.sub(r"\[\[(\w+)\]\]\n?", lambda m: prompt(f"{role}_{m.group(1)}_{variant}"), prompt(role))


def instructions(role: str, level: int = 0, *, standards: bool = True, computes: bool = True) -> str:
    """The lab's standards where they apply, then the role's prompt file, then what each section of
    its context is (from the same table the context is built with, so the two cannot drift apart).
    The standards come first: every role that gets them then shares them as a prefix.
    ``standards=False`` leaves them out (physics-intern has none); ``computes=False`` gives the
    reviewer and the adjudicator the prompt of a judge with no tools."""
    with_standards = standards and role in WITH_STANDARDS and level < NO_STANDARDS_LEVEL
    parts = [prompt("standards").rstrip()] if with_standards else []
    parts.append(role_prompt(role, computes=computes).rstrip())
    if level < NO_GUIDE_LEVEL:
        parts.append("## What your context contains\n\n" + guide(role))
    return "\n\n".join(parts) + "\n"


def system_prompt(role: str, head: str, level: int = 0, *, standards: bool = True, computes: bool = True) -> str:
    """The problem first (the same text for every role of the run, so every request of the run
    shares it as a prefix), then the role's own instructions."""
    return f"{head}\n\n{instructions(role, level, standards=standards, computes=computes)}"


def user_content(prompt: RolePrompt, cache_point: bool = True) -> list[UserContent]:
    """The stable sections, a cache point, the volatile ones. The cache point is where Anthropic
    stores the prefix the next call of the role will read; providers that cache implicitly drop it."""
    if not prompt.stable:
        return [prompt.volatile]
    return [prompt.stable, CachePoint(), prompt.volatile] if cache_point else [prompt.stable, prompt.volatile]


def registry_cache(model: Any) -> Any:
    """The model registry's ``prompt_cache`` for this model (None when it says nothing): the user's
    choice, which the model seam applies and the lab does not override."""
    return getattr(getattr(model, "defaults", None), "prompt_cache", None)


def cache_settings(model: Any, multi_turn: bool) -> ModelSettings:
    """Cache the tool definitions and the instructions (pydantic-ai places the breakpoints), and the
    growing conversation only for a role whose call is several requests (a tool loop): a one-request
    call would pay to write a cache entry nobody reads. Unless the registry says otherwise."""
    if registry_cache(model) is not None:
        return {}
    return ModelSettings(cache=CacheConfig(messages=multi_turn))


def correct_or_drop(ctx: CallContext[Any], problems: list[str], how: str) -> bool:
    """Send ``problems`` back to the model as a corrective message while it has retries left; on
    its last try return True instead, so the caller keeps the valid part of the output and drops
    (and records) the rest rather than losing the whole call."""
    if problems and ctx.retry < ctx.max_retries:
        raise ModelRetry("; ".join(problems) + ". " + how)
    return bool(problems)


def carries_nothing(output: Any) -> bool:
    """Every field of a role's reply is empty: its default, an empty or blank string, an empty list,
    False. What a reply of other keys comes to (a small model's ``{"type": "user-assistant"}``: the
    keys an output model does not know are dropped), and what a server-held schema whose fields all
    have defaults lets a model write (``{}``)."""
    if not isinstance(output, BaseModel):
        return False
    for name in type(output).model_fields:
        value = getattr(output, name)
        if isinstance(value, str):
            if value.strip():
                return False
        elif value not in (None, False, [], {}, ()):
            return False
    return True


def acted(messages: Sequence[Any], tools: Sequence[Any]) -> bool:
    """The call already did its work through its own tools (an orchestrator's transitions): a bare
    reply after them ends a turn that did something."""
    names = {getattr(t, "__name__", getattr(t, "name", None)) for t in tools}
    return any(isinstance(p, ToolCallPart) and p.tool_name in names
               for m in messages for p in getattr(m, "parts", []))


# Roles whose empty reply is an answer: a critic that finds nothing to file files nothing.
EMPTY_IS_AN_ANSWER = frozenset({"critic"})


def substance(role: str, output_type: type, tools: Sequence[Any]) -> Callable[[CallContext[Any], Any], Any]:
    """The output validator every role call has first (issue #47 point 9): a reply that carries none of
    what the role exists to give is a failed reply, sent back while the call has retries left (then
    the call fails: the engine records it), never an empty survey or turn."""
    fields = ", ".join(type_fields(output_type))

    def check(ctx: CallContext[Any], output: Any) -> Any:
        if role not in EMPTY_IS_AN_ANSWER and carries_nothing(output) and not acted(ctx.messages, tools):
            raise ModelRetry(f"Your reply carries none of what the {role} gives ({fields}): it is not an answer. "
                             "Reply again with the fields filled in from your work on the problem.")
        return output

    return check


def type_fields(output_type: type) -> list[str]:
    return list(getattr(output_type, "model_fields", {}))


PromptSource = RolePrompt | Callable[[int], RolePrompt]


async def run_role(env: LabEnv, role: str, user_prompt: PromptSource, output_type: type, *,
                   tools: Sequence[Any] = (), deps: Any = None, output_name: str = "submit",
                   output_validator: Callable | None = None, on_request: Callable[[], None] | None = None,
                   on_attempt: Callable[[], None] | None = None, capabilities: Sequence[Any] = ()) -> Any:
    """One fresh agent call for ``role``. Validation errors and ModelRetry from tools are sent back
    to the model as corrective messages (bounded by ``env.tool_retries``); after that pydantic-ai
    raises UnexpectedModelBehavior, which the engine records.

    ``user_prompt`` may be a builder ``level -> prompt`` (``level`` 0 is the full context): when the
    model's server says the prompt does not fit its context window, the call starts again with the
    prompt built one level shorter: older windows dropped first (``context.Windows.shrunk``), then
    the guide to the context and the standards from the instructions (a model with a small window).
    A prompt given as it is gets the same instruction levels.

    The request is the problem and the role's instructions, then the stable sections, a cache
    point and the volatile ones (``user_content``), so a provider's prompt cache serves what
    consecutive calls share.

    ``on_request`` is called before each model request of the call (after the tools the previous
    reply asked for have run): the engine starts work there that the rest of the call cannot change.
    ``on_attempt`` is called before each start of the call (the first, and each shorter one), so
    what the tools of an abandoned attempt did can be undone before it starts again.
    ``capabilities``: pydantic-ai capabilities of this role's call (the orchestrator's state summary).
    The role's output-token limit (``env.max_output_tokens``) goes to the model seam as the
    request's ``max_tokens``."""
    build = user_prompt if callable(user_prompt) else (lambda level: user_prompt)
    model = env.model(role)
    tools = [*tools, *env.extra_tools(role)]
    extra = list(capabilities)
    capabilities = [*(env.toolbox.capabilities(role, model) if env.toolbox is not None else []), *extra]
    tool_guide = env.toolbox.guide(role) if env.toolbox is not None else ""
    settings = {**cache_settings(model, bool(tools)), **(env.model_settings or {})}
    if role in env.max_output_tokens:
        settings["max_tokens"] = env.max_output_tokens[role]
    tried: dict[tuple[RolePrompt, str], BaseException] = {}  # a level that shortens nothing is not sent again

    async def call(level: int) -> Any:
        prompt = build(level)
        instr = system_prompt(role, prompt.head, level, standards=env.standards,
                              computes=env.judges_compute) + (f"\n{tool_guide}\n" if tool_guide else "")
        if (prompt, instr) in tried:
            raise tried[(prompt, instr)]
        if on_attempt is not None:
            on_attempt()
        agent = Agent(model, instructions=instr, deps_type=type(deps) if deps is not None else None,
                      output_type=structured_output(model, output_type, name=output_name), tools=list(tools),
                      retries=env.tool_retries, capabilities=capabilities or None)
        agent.output_validator(substance(role, output_type, tools))
        if output_validator is not None:
            agent.output_validator(output_validator)
        # Tools here are state transitions (create RQ-1, then a WH that depends on it...): they must
        # apply in the order the model emitted them, never concurrently, or ids and dependencies
        # would depend on scheduling.
        try:
            with ToolManager.parallel_execution_mode("sequential"):
                async with agent.iter(user_content(prompt, registry_cache(model) is not False), deps=deps,
                                      model_settings=settings,
                                      usage_limits=UsageLimits(request_limit=env.request_limit)) as run:
                    async for node in run:
                        if on_request is not None and Agent.is_model_request_node(node):
                            on_request()
        except Exception as exc:
            tried[(prompt, instr)] = exc
            raise
        assert run.result is not None      # the graph ran to its end
        return run.result.output

    env.notify(RoleStart(role=role))
    try:
        return await fitting(call, levels=NO_STANDARDS_LEVEL,
                             on_shrink=lambda level, exc: env.notify(System(
                                 what="context_shrunk",
                                 text=f"{role}: prompt too long for the model's context window; "
                                      f"sent again with older context dropped (level {level})")))
    finally:
        env.notify(RoleEnd(role=role))


async def run_python(env: LabEnv, code: str) -> tuple[str, str]:
    """Run a self-contained script in the run's sandbox; returns (display text, raw output)."""
    res = await env.ctx.sandbox.run(code, limits=SandboxLimits(timeout_s=env.code_timeout_s,
                                                               memory_mb=env.code_memory_mb))
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    # No timings in what the model sees: the same script must give the same tool return, so a
    # recorded run replays exactly (replay compares requests).
    raw = f"[{status}{', output truncated' if res.truncated else ''}]\nSTDOUT:\n{res.stdout}\nSTDERR:\n{res.stderr}"
    return clip(raw, 8000), raw
