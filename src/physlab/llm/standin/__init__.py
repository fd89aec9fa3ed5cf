"""The project's own OpenAI-compatible stand-in server (for tests and benchmarks)."""

from physlab.llm.standin.responders import (
    EchoResponder,
    RandomToolResponder,
    Reply,
    ScriptedResponder,
    random_instance,
)
from physlab.llm.standin.server import FAULT_KINDS, Habits, StandinServer, StandinStats, count_tokens

__all__ = ["EchoResponder", "FAULT_KINDS", "Habits", "RandomToolResponder", "Reply", "ScriptedResponder",
           "ScenarioResponder", "StandinServer", "StandinStats", "count_tokens", "random_instance"]


def __getattr__(name: str):  # the scenario responder imports pydantic-ai: only when asked for
    if name == "ScenarioResponder":
        from physlab.llm.standin.scenario import ScenarioResponder

        return ScenarioResponder
    raise AttributeError(name)
