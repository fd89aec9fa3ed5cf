"""The retry share ``python benchmarks/real_model.py`` prints (issue #47): a reply the lab or
pydantic-ai sent back with what was wrong counts, whatever the part that carried the feedback (the
real run's calls.jsonl carries it as a user prompt after the model's reply); a first request and a
request that returns a tool's result do not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "real_model.py"


def _bench():
    spec = importlib.util.spec_from_file_location("real_model_bench", _BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _rec(role, messages, error=None):
    return {"role": role, "latency_s": 10.0, "input_tokens": 100, "output_tokens": 10, "error": error,
            "request": {"messages": messages}}


FIRST = {"kind": "request", "parts": [{"part_kind": "system-prompt"}, {"part_kind": "user-prompt"}]}
REPLY = {"kind": "response", "parts": [{"part_kind": "text"}]}
CALLED = {"kind": "response", "parts": [{"part_kind": "tool-call"}]}
# as the real run recorded it: pydantic-ai's validation feedback as a user prompt after the reply
FEEDBACK = {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "Your previous response failed"}]}
RETRY_PART = {"kind": "request", "parts": [{"part_kind": "retry-prompt"}]}
TOOL_RETURN = {"kind": "request", "parts": [{"part_kind": "tool-return"}]}


def test_a_reply_sent_back_counts_as_a_retry_and_a_tool_return_does_not():
    f = _bench().figures([
        _rec("surveyor", [FIRST]),
        _rec("surveyor", [FIRST, REPLY, FEEDBACK]),
        _rec("planner", [FIRST, REPLY, RETRY_PART]),
        _rec("orchestrator", [FIRST, CALLED, TOOL_RETURN]),
        _rec("orchestrator", [FIRST], error="HTTP 400: maximum context length"),
    ])
    assert f["answered"] == 4 and f["sent_back"] == 2 and f["retry_share"] == 0.5
    assert f["by_role"]["orchestrator"]["failed"] == 1
