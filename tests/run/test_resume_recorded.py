"""`--resume` continues a run as it was made: its model, its server, its key variable, its output
mode, parameters and budget come from what the run recorded, so `physlab solve --resume DIR` needs
no other flag and never sends the run (or the local key) anywhere else. A flag given overrides one
recorded option and says so; what cannot be honoured is one line, exit 2, and the run untouched;
a resume that fails never overwrites a finished run's verdict."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.run.keyed import KEY, KEY_ENV, QEC, keyed_standin, paused_run, physlab, run_files

pytestmark = pytest.mark.slow


def metrics(ws):
    return json.loads((ws / "metrics.json").read_text())


def test_resume_with_no_flag_but_resume_continues_on_the_recorded_server(tmp_path, monkeypatch):
    ws = tmp_path / "runs" / "qec"
    with keyed_standin() as srv:
        url = srv.base_url
        paused_run(ws, srv, monkeypatch)
        before = srv.stats.requests
        done = physlab("solve", "--resume", str(ws))
        assert done.returncode == 0, done.stderr
        assert srv.stats.requests > before                      # the same server went on with the run
        assert srv.stats.faults["unauthorized"] == 0             # and every request carried the key
    m = metrics(ws)
    assert (m["status"], m["verdict"]["verdict"]) == ("complete", "correct")
    assert (m["options"]["api_base"], m["options"]["api_key_env"]) == (url, KEY_ENV)
    assert m["options"]["model"] == "openai:standin" and m["problem_spec"]
    for name, data in run_files(ws).items():                    # the variable's name, never the key
        assert KEY.encode() not in data, name
    assert "overrides the recorded" not in done.stderr


def test_a_flag_given_overrides_a_recorded_option_and_says_so(tmp_path, monkeypatch):
    ws = tmp_path / "qec"
    with keyed_standin() as srv:
        url = srv.base_url
        paused_run(ws, srv, monkeypatch, max_calls=400)
        done = physlab("solve", "--resume", str(ws), "--max-calls", "500")
        assert done.returncode == 0, done.stderr
        assert srv.stats.faults["unauthorized"] == 0
    said = [line for line in done.stderr.splitlines() if "overrides the recorded" in line]
    assert len(said) == 1 and "--max-calls 500" in said[0] and "400" in said[0]
    m = metrics(ws)
    assert m["status"] == "complete" and m["options"]["budget"]["max_calls"] == 500
    assert m["options"]["api_base"] == url                       # the rest as recorded


def test_what_cannot_be_honoured_is_one_line_exit_2_and_the_run_untouched(tmp_path, monkeypatch):
    registry = tmp_path / "models.yaml"
    with keyed_standin() as srv:
        registry.write_text(yaml.safe_dump({"models": {"openai:standin": {"api_base": srv.base_url}}}))
        monkeypatch.setenv("PHYSLAB_MODELS_CONFIG", str(registry))
        ws = tmp_path / "qec"
        paused_run(ws, srv, monkeypatch)
        kept, asked = run_files(ws), srv.stats.requests

        no_key = physlab("solve", "--resume", str(ws), unset=(KEY_ENV,))
        assert no_key.returncode == 2
        assert len(no_key.stderr.strip().splitlines()) == 1 and KEY_ENV in no_key.stderr
        assert run_files(ws) == kept and srv.stats.requests == asked

        # the registry the run was made with now sends the model elsewhere
        registry.write_text(yaml.safe_dump({"models": {"openai:standin": {"api_base": "http://127.0.0.1:9/v1"}}}))
        moved = physlab("solve", "--resume", str(ws))
        assert moved.returncode == 2
        line = moved.stderr.strip()
        assert len(line.splitlines()) == 1 and srv.base_url in line and "http://127.0.0.1:9/v1" in line
        assert run_files(ws) == kept and srv.stats.requests == asked


def test_a_failed_resume_never_overwrites_a_finished_runs_verdict(tmp_path, monkeypatch):
    from tests.run.keyed import api

    ws = tmp_path / "qec"
    monkeypatch.setenv(KEY_ENV, KEY)
    with keyed_standin() as srv:
        done = api.solve(QEC, "lab", "openai:standin", workspace=ws, api_base=srv.base_url, api_key_env=KEY_ENV,
                         params={"max_iterations": 4})
    assert (done.status, done.verdict.verdict) == ("partially_complete", "correct")
    # the server is gone: the resume's first request fails
    failed = physlab("solve", "--resume", str(ws), "--max-iterations", "8", "--console", "quiet")
    assert failed.returncode == 1, failed.stderr
    m = metrics(ws)
    assert (m["status"], m["verdict"]["verdict"], m["has_answer"]) == ("partially_complete", "correct", True)
    assert m["resume_failed"]["status"] == "error" and m["resume_failed"]["error"]
    shown = json.loads(physlab("runs", "show", str(ws), "--json").stdout)
    assert (shown["status"], shown["verdict"]) == ("partially_complete", "correct")
