"""The lab against servers with real limits, over real HTTP (issue #23's "done means"): a server
without tool calling (``--output-mode prompted``, and ``auto`` falling back), one that cuts replies
at 400 tokens and refuses caps above 1,200, and a 4,000-token context window. The scripted scenario
plays the model; the stand-in plays the server's habits."""

from __future__ import annotations

import json

import pytest

from physlab.api import solve_async
from physlab.llm.standin import Habits, ScenarioResponder, StandinServer
from tests.lab.helpers import calls, lab_role_of, qec_problem, state_of
from tests.lab.mini import mini_problem, register

pytestmark = pytest.mark.slow


async def _qec(ws, habits, mode, events=None):
    responder = ScenarioResponder("lab-qec", lab_role_of())
    with StandinServer(responder, habits=habits) as srv:
        attempt = await solve_async(qec_problem(), "lab", "openai:standin", workspace=ws, api_base=srv.base_url,
                                   output_mode=mode, events=events)
    return attempt, srv, responder


@pytest.mark.parametrize("mode", ["prompted", "auto"])
async def test_qec_demo_against_a_server_without_tool_calling(tmp_path, mode):
    said = []
    attempt, srv, responder = await _qec(tmp_path / "run", Habits(refuse_tools=True), mode,
                                         events=lambda k, **d: said.append((k, d)))
    assert attempt.status == "complete", attempt.details
    assert attempt.verdict.verdict == "correct", attempt.verdict.reason
    assert set(responder.modes) <= {"text_tools", "structured", "tools"} and responder.modes["text_tools"] > 5
    falls = [d["text"] for k, d in said if k == "output_mode"]
    if mode == "auto":  # the first request was refused, every later one went without tools
        assert srv.stats.faults["tools_refused"] == 1 and len(falls) == 1
        assert json.loads((tmp_path / "run" / "metrics.json").read_text())["output_modes"][
            "openai:standin"].startswith("auto -> prompted")
    else:
        assert srv.stats.faults["tools_refused"] == 0 and not falls


async def test_qec_demo_through_the_constrained_mode_against_llama_cpp_pythons_habits(tmp_path):
    """Issue #47: the lab's roles through the server-constrained mode, against a server that refuses
    json_schema, ignores max_completion_tokens, takes tools only with "auto", mangles a list of parts
    and serves one request at a time (the scenario plays a model that follows the instructions)."""
    ws = tmp_path / "run"
    attempt, srv, responder = await _qec(ws, Habits.llama_cpp_python(follows_instructions=True, rambles=False),
                                         "constrained")
    assert attempt.status == "complete", attempt.details
    assert attempt.verdict.verdict == "correct", attempt.verdict.reason
    assert set(responder.modes) <= {"text_tools", "structured"} and responder.modes["text_tools"] > 5
    sent = srv.requests
    assert all(b["response_format"]["type"] == "json_object" for b in sent if "response_format" in b)
    assert all("max_completion_tokens" not in b and b.get("max_tokens") for b in sent)
    assert not any(isinstance(m.get("content"), list) for b in sent for m in b["messages"])  # one string each
    assert srv.stats.faults["format_refused"] == 0 and srv.stats.faults["tool_choice_refused"] == 0
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["output_modes"] == {"openai:standin": "constrained"}
    assert metrics["totals"]["calls"] == srv.stats.requests


async def test_lab_against_a_server_that_cuts_replies_and_refuses_large_caps(tmp_path):
    ws = tmp_path / "run"
    attempt, srv, _ = await _qec(ws, Habits(default_max_tokens=400, max_output_tokens=1200), "prompted")
    assert attempt.status != "error" and srv.stats.faults["cap_refused"] >= 1
    recs = calls(ws)
    refused = next(i for i, r in enumerate(recs) if r["error"] and "at most 1200" in r["note"])
    after = recs[refused + 1:]
    assert sum(1 for r in after if not r["error"]) >= 10  # the run went on after the refusal
    assert all((r["max_tokens"] or 0) <= 1200 for r in after)
    assert any("asking for the rest" in (r["note"] or "") for r in recs)  # the computer's script, continued
    assert attempt.status == "complete" and attempt.verdict.verdict == "correct"


async def test_lab_against_a_4000_token_context_window(tmp_path):
    ws = tmp_path / "run"
    with StandinServer(ScenarioResponder(register("test-mini-window").split(":", 1)[1], lab_role_of()),
                       habits=Habits(context_window=4000)) as srv:
        attempt = await solve_async(mini_problem("42"), "lab", "openai:standin", workspace=ws, api_base=srv.base_url,
                                   params={"max_iterations": 4})
    assert attempt.status != "error", attempt.details
    recs = calls(ws)
    first = next(i for i, r in enumerate(recs) if r["error"] and "context length" in r["error"])
    answered_after = [r for r in recs[first + 1:] if not r["error"]]
    assert len(answered_after) >= 5 and {"orchestrator", "computer"} <= {r["role"] for r in answered_after}
    assert all(r["input_tokens"] + r["output_tokens"] <= 4000 for r in recs)
    s = state_of(ws)
    assert s.evidence  # work was done after the first refusal
    assert any(e.kind == "role_failed" and "context window" in e.text for e in s.events) or \
        any("context" in (r["note"] or "") for r in recs)
