"""The model ``python -m physlab.llm.standin`` plays: one that follows the request's instructions.

PhysLab's preflight probes (``physlab models check``, recognised by the mark that opens their
instructions) are answered as a capable model answers them: the tool called, then the structured
answer, in whatever output mode the request asks for. Every other request is played by a scripted
scenario (``physlab.llm.scripted``) when one is given, with the lab's role read from the first line
of its prompt file that opens the request's instructions (any other request is played as
``default_role``); without a scenario by ``fallback`` (the echo, or a fixed reply).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_ai.messages import ModelMessage, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from physlab.llm.preflight import PREFLIGHT_MARK, PROBE_ROLE, PROBE_TOOL
from physlab.llm.scripted import Reply, final_answer, tool_call
from physlab.llm.standin.responders import EchoResponder, Responder, last_user_text
from physlab.llm.standin.scenario import ScenarioResponder, system_text


def preflight_scenario():
    """A model that does what the preflight's probes ask: call the tool once, then answer with what
    it returned; a request without tools gets "ready"."""

    def respond(role: str, messages: list[ModelMessage], info: AgentInfo) -> Reply:
        returned = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if any(t.name == PROBE_TOOL for t in info.function_tools) and not returned:
            return tool_call(PROBE_TOOL, {"a": 6, "b": 7})
        if info.output_tools:
            return final_answer(info, {"value": int(str(returned[-1].content).strip()) if returned else 42})
        return "ready"

    return respond


class ModelResponder:
    """See the module doc. ``scenario`` is a ``scripted:`` name (with or without the prefix);
    ``role_markers`` maps a role to the text that marks its requests (the command line passes the lab's
    roles; the stand-in itself knows no lab)."""

    def __init__(self, scenario: str | None = None, *, default_role: str = "solver",
                 fallback: Responder | None = None, role_markers: Mapping[str, str] | None = None) -> None:
        self._preflight = ScenarioResponder(preflight_scenario, lambda body: PROBE_ROLE)
        self.default_role = default_role
        self.fallback: Responder = fallback or EchoResponder()
        self.scenario: ScenarioResponder | None = None
        if scenario is not None:
            self.markers = dict(role_markers or {})
            self.scenario = ScenarioResponder(scenario.removeprefix("scripted:"), self.role_of)

    def role_of(self, body: dict[str, Any]) -> str:
        system = system_text(body)
        return next((role for role, mark in self.markers.items() if mark and mark in system), self.default_role)

    @property
    def modes(self) -> dict[str, int]:
        """How the scenario's requests came (tools, text_tools, structured, text, off_script)."""
        return dict(self.scenario.modes) if self.scenario is not None else {}

    def __call__(self, body: dict[str, Any]) -> Any:
        if PREFLIGHT_MARK in system_text(body) or PREFLIGHT_MARK in last_user_text(body):
            return self._preflight(body)
        if self.scenario is not None:
            return self.scenario(body)
        return self.fallback(body)
