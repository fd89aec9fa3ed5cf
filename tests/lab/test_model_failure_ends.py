"""Issue #47 points 4 and 12, end to end through `physlab solve`: a lab run whose server refuses the
request's shape (llama-cpp-python's 500 for a ``json_schema`` response format) ends ``error
(model_failure)`` after one request per role asked, counts the requests that went out as calls,
leaves state.json and RESEARCH_STATE.md saying how it ended (not "running"), and prints the
server's message and what to try on one line, however long."""

from __future__ import annotations

import json

import pytest

from physlab.cli import main
from physlab.llm.standin import Habits, ModelResponder, StandinServer


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PHYSLAB_MODELS_CONFIG", raising=False)
    monkeypatch.setenv("COLUMNS", "80")


def test_a_refused_request_shape_ends_the_lab_in_error_said_everywhere(capsys, tmp_path):
    ws = tmp_path / "run"
    with StandinServer(ModelResponder("lab-qec"), habits=Habits.llama_cpp_python()) as srv:
        with pytest.raises(SystemExit) as exc:
            main(["solve", "examples/quantum_error_correction_main", "--strategy", "lab", "--model", "openai:gemma",
                  "--api-base", srv.base_url, "--output-mode", "native", "--workspace", str(ws),
                  "--console", "quiet"])
        sent = srv.stats.requests
    out, err = capsys.readouterr()
    assert exc.value.code == 1 and "Traceback" not in out + err
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["status"] == "error" and metrics["stop_reason"] == "model_failure"
    assert sent == 1  # the refusal names the request's shape: not sent again
    assert metrics["totals"]["calls"] == sent  # and the request that went out is a call
    assert "calls 1," in out
    state = json.loads((ws / "state.json").read_text())
    assert state["status"] == "error" and "model_failure" in state["stop_reason"]
    said = (ws / "RESEARCH_STATE.md").read_text()
    assert "status **error**" in said and "status **running**" not in said
    line = next(x for x in out.splitlines() if "Input should be" in x)
    assert "--output-mode constrained" in line and "physlab models check" in line  # one line, not wrapped
