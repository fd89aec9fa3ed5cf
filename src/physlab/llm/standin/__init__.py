"""The project's own OpenAI-compatible stand-in server (for tests and benchmarks)."""

from physlab.llm.standin.responders import (
    EchoResponder,
    RandomToolResponder,
    Reply,
    ScriptedResponder,
    random_instance,
)
from physlab.llm.standin.server import FAULT_KINDS, Habits, StandinServer, StandinStats, count_tokens

__all__ = ["EchoResponder", "FAULT_KINDS", "Habits", "ModelResponder", "RandomToolResponder", "Reply",
           "ScenarioResponder", "ScriptedResponder", "StandinServer", "StandinStats", "count_tokens",
           "random_instance"]


def __getattr__(name: str):  # these responders import pydantic-ai: only when asked for
    if name == "ScenarioResponder":
        from physlab.llm.standin.scenario import ScenarioResponder

        return ScenarioResponder
    if name == "ModelResponder":
        from physlab.llm.standin.player import ModelResponder

        return ModelResponder
    raise AttributeError(name)
