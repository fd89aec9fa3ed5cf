"""Issue #47: every strategy works through the server-constrained output mode, against the stand-in
playing llama-cpp-python with a small model (junk text where it is free, a random instance of the
schema where the server holds it): each run ends on its own terms (an answer, none, a spent budget),
never in an exception, and a server that refuses json_schema is never sent one."""

from __future__ import annotations

import json

import pytest

from physlab.api import solve_async
from physlab.llm.standin import Habits, ScriptedResponder, StandinServer
from physlab.strategies import registry
from tests.lab.helpers import qec_problem

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("strategy", [s for s in registry.names() if s != "lab"])  # the lab: tests/lab/
async def test_every_strategy_runs_through_the_constrained_mode(tmp_path, strategy, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ws = tmp_path / strategy
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True),
                       habits=Habits.llama_cpp_python(rambles=False)) as srv:
        record = await solve_async(qec_problem(), strategy, "openai:gemma", workspace=ws, api_base=srv.base_url,
                                   output_mode="constrained", max_calls=8)
        sent = list(srv.requests)
    assert not record.stop_reason.startswith("exception"), (record.stop_reason, record.error)
    assert not (ws / "error.log").exists()
    assert srv.stats.faults["format_refused"] == 0
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["output_modes"] == {"openai:gemma": "constrained"}
    held = [b for b in sent if "response_format" in b]
    assert all(b["response_format"]["type"] == "json_object" and "schema" in b["response_format"] for b in held)
