"""The real `openai:` path against the project's stand-in server: random-but-schema-valid tool
calls for every role. The lab must not crash; the state stays sound; the run ends cleanly."""

from __future__ import annotations

import pytest

from physlab.api import solve_async
from physlab.lab.state.invariants import check
from physlab.llm.standin import RandomToolResponder, StandinServer
from physlab.llm.usage import Budget
from tests.lab.helpers import calls, state_of
from tests.lab.mini import mini_problem


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_lab_survives_random_schema_valid_tool_calls(tmp_path, seed):
    ws = tmp_path / "run"
    with StandinServer(RandomToolResponder(seed=seed, text_probability=0.1)) as srv:
        attempt = await solve_async(mini_problem(), "lab", "openai:standin", workspace=ws, api_base=srv.base_url,
                                   budget=Budget(max_calls=60),
                                   params={"max_iterations": 4, "code_timeout_s": 5, "tool_retries": 2,
                                          "request_limit": 8, "parallel_workers": 2})
    assert not (ws / "error.log").exists(), (ws / "error.log").read_text()
    assert attempt.status in ("complete", "partially_complete", "no_answer")
    assert attempt.status != "error"
    s = state_of(ws)
    assert check(s) == []
    assert s.status in ("complete", "partially_complete", "no_answer")
    assert len(calls(ws)) <= 60 + 2
    assert all(c["model"] for c in calls(ws))
