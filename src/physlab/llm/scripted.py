"""``scripted:NAME`` - deterministic models that play a fixed scenario (pydantic-ai FunctionModel).

A scenario is created fresh for each run by its factory and is shared by all the run's roles, so it
can keep state across roles (e.g. "the critic objects once, then agrees"). It is called with the
role of each request::

    def my_scenario() -> Scenario:
        def respond(role: str, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse | str:
            ...
        return respond

    register_scenario("my-scenario", my_scenario, description="...")

A reply may be a ModelResponse (text and/or tool calls) or a plain string (one text part). Other
modules register their scenarios at import; a module that only registers scenarios can be made
discoverable with :func:`register_scenario_module`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from physlab.errors import UserError

Reply = ModelResponse | str
Scenario = Callable[[str, list[ModelMessage], AgentInfo], Reply]
ScenarioFactory = Callable[[], Scenario]


@dataclass
class _Entry:
    factory: ScenarioFactory
    description: str
    role_markers: Callable[[], Mapping[str, str]] | None = None


_SCENARIOS: dict[str, _Entry] = {}
# Modules imported (lazily, once) before a scenario lookup fails: built-in scenario providers.
_SCENARIO_MODULES: list[str] = ["physlab.strategies.oneshot", "physlab.strategies.sampling_scenarios",
                                  "physlab.lab.scenarios.qec", "physlab.lab.scenarios.long", "physlab.lab.scenarios.dirac",
                                  "physlab.strategies.minions.scenarios", "physlab.strategies.scalar.scenarios",
                                  "physlab.strategies.student_scenarios"]


def register_scenario(name: str, factory: ScenarioFactory, *, description: str = "",
                      role_markers: Callable[[], Mapping[str, str]] | None = None) -> None:
    """Add (or replace) a scripted scenario available as ``scripted:<name>``. ``role_markers``: how a
    request over HTTP is told to be one role's (role -> the text that opens its instructions), for a
    scenario whose roles the stand-in plays (`python -m physlab.llm.standin --scenario NAME`)."""
    _SCENARIOS[name] = _Entry(factory, description, role_markers)


def scenario_role_markers(name: str) -> dict[str, str]:
    """The role markers the scenario ``name`` (``scripted:`` or not) registered ({} when none: every
    request is one role's)."""
    name = name.removeprefix("scripted:")
    get_scenario(name)
    markers = _SCENARIOS[name].role_markers
    return dict(markers()) if markers is not None else {}


def register_scenario_module(module: str) -> None:
    """Name a module whose import registers scenarios (imported on the first failed lookup)."""
    if module not in _SCENARIO_MODULES:
        _SCENARIO_MODULES.append(module)


def _load_modules() -> None:
    for mod in list(_SCENARIO_MODULES):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def scenario_names() -> dict[str, str]:
    _load_modules()
    return {k: v.description for k, v in sorted(_SCENARIOS.items())}


def get_scenario(name: str) -> ScenarioFactory:
    if name not in _SCENARIOS:
        _load_modules()
    if name not in _SCENARIOS:
        known = ", ".join(sorted(_SCENARIOS)) or "none"
        close = difflib.get_close_matches(name, sorted(_SCENARIOS), n=1, cutoff=0.6)
        hint = f": did you mean 'scripted:{close[0]}'?" if close else ""
        raise UserError(f"unknown scripted scenario '{name}'{hint} (known: {known})", field="--model")
    return _SCENARIOS[name].factory


def scripted_model(scenario: Scenario, role: str, name: str) -> FunctionModel:
    """A FunctionModel that answers ``role``'s requests from ``scenario``."""

    # async, so the scenario runs on the event loop: FunctionModel would run a plain function in a
    # worker thread, and concurrent roles would then race on the scenario's state.
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = scenario(role, messages, info)
        if isinstance(reply, str):
            return ModelResponse(parts=[TextPart(reply)], finish_reason="stop")
        return reply

    return FunctionModel(respond, model_name=f"scripted:{name}")


# ---- helpers for scenario authors -------------------------------------------------------------

def text(content: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content)])


def tool_call(tool: str, args: dict[str, Any] | str, *, content: str | None = None) -> ModelResponse:
    parts: list[Any] = [TextPart(content)] if content else []
    parts.append(ToolCallPart(tool, args))
    return ModelResponse(parts=parts)


def _user_texts(messages: list[ModelMessage]):
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if isinstance(part, UserPromptPart):
                    c = part.content
                    yield c if isinstance(c, str) else "\n".join(x for x in c if isinstance(x, str))


def last_user_text(messages: list[ModelMessage]) -> str:
    """The text of the most recent user prompt (multimodal parts skipped)."""
    texts = list(_user_texts(messages))
    return texts[-1] if texts else ""


def first_user_text(messages: list[ModelMessage]) -> str:
    """The text of the first user prompt of the conversation (multimodal parts skipped)."""
    return next(_user_texts(messages), "")


def final_answer(info: AgentInfo, value: Any) -> ModelResponse:
    """Answer with the agent's output tool when it has one (structured output), else as text."""
    if info.output_tools:
        return tool_call(info.output_tools[0].name, value if isinstance(value, dict) else {"response": value})
    return text(value if isinstance(value, str) else str(value))


class Turns:
    """A scenario from fixed per-role reply lists, played in order (a clear error when one runs out)."""

    def __init__(self, turns: dict[str, list[Reply | Callable[[list[ModelMessage], AgentInfo], Reply]]],
                 *, default: list[Any] | None = None) -> None:
        self.turns = {k: list(v) for k, v in turns.items()}
        self.default = list(default or [])
        self.used: dict[str, int] = {}

    def __call__(self, role: str, messages: list[ModelMessage], info: AgentInfo) -> Reply:
        queue = self.turns.get(role, self.default)
        i = self.used.get(role, 0)
        if i >= len(queue):
            raise RuntimeError(f"scripted scenario has no reply #{i + 1} for role '{role}'")
        self.used[role] = i + 1
        item = queue[i]
        return item(messages, info) if callable(item) else item


def _echo() -> Scenario:
    def respond(role: str, messages: list[ModelMessage], info: AgentInfo) -> Reply:
        return f"[{role}] {last_user_text(messages)}"

    return respond


register_scenario("echo", _echo, description="replies with the last user prompt, prefixed by the role")
