"""The project's own OpenAI-compatible stand-in server (for tests and benchmarks)."""

from physlab.llm.standin.responders import (
    EchoResponder,
    RandomToolResponder,
    Reply,
    ScriptedResponder,
    random_instance,
)
from physlab.llm.standin.server import FAULT_KINDS, StandinServer, StandinStats, count_tokens

__all__ = ["EchoResponder", "FAULT_KINDS", "RandomToolResponder", "Reply", "ScriptedResponder",
           "StandinServer", "StandinStats", "count_tokens", "random_instance"]
