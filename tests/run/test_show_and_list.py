"""`physlab runs show` prints a run's final answer and its established results whole;
`physlab runs list` lists every run under runs/ (or --root DIR)."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from physlab.api import solve_async
from physlab.cli import app
from physlab.lab.state.models import ResearchState
from physlab.problems import resolve_problem

QEC = "examples/quantum_error_correction_main"
runner = CliRunner()


def squeeze(text: str) -> str:
    """Text without its whitespace: the terminal wraps long lines where it likes."""
    return "".join(text.split())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cwd") / "runs"
    asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=root / "qec-lab"))
    asyncio.run(solve_async(resolve_problem(QEC), "oneshot", "scripted:oneshot-wrong", workspace=root / "qec-one"))
    return root


def test_show_prints_the_final_answer_and_whole_results(runs):
    lab = runs / "qec-lab"
    res = runner.invoke(app, ["runs", "show", str(lab)])
    assert res.exit_code == 0, res.output
    state = ResearchState.model_validate_json((lab / "state.json").read_text())
    longest = max(state.active_ers(), key=lambda e: len(e.claim))
    assert len(longest.claim) > 160                      # long enough to have been cut before
    assert squeeze(longest.claim) in squeeze(res.output)  # not cut in the middle of its formula
    answer = (lab / "ANSWER.md").read_text()
    assert "Final answer" in res.output and squeeze(answer) in squeeze(res.output)
    data = json.loads(runner.invoke(app, ["runs", "show", str(lab), "--json"]).output)
    assert data["answer"] == answer and data["answer_code"] == (lab / "answer.py").read_text()


def test_show_prints_any_strategys_answer_and_why_it_was_graded_so(runs):
    one = runs / "qec-one"
    res = runner.invoke(app, ["runs", "show", str(one)])
    assert res.exit_code == 0, res.output
    metrics = json.loads((one / "metrics.json").read_text())
    assert metrics["verdict"]["verdict"] == "incorrect"
    assert squeeze(metrics["verdict"]["reason"]) in squeeze(res.output)
    assert squeeze((one / "ANSWER.md").read_text()) in squeeze(res.output)


def test_list_shows_every_run_under_runs_or_root(runs, monkeypatch):
    monkeypatch.chdir(runs.parent)
    res = runner.invoke(app, ["runs", "list"])                       # default root: runs/
    assert res.exit_code == 0, res.output
    header, *lines = [line.split("\t") for line in res.output.strip().splitlines()]
    assert header == ["id", "problem", "strategy", "model", "status", "verdict", "tokens", "cost USD"]
    got = {line[0]: line[1:6] for line in lines}
    assert got == {"runs/qec-lab": ["quantum_error_correction_main", "lab", "scripted:lab-qec", "complete", "correct"],
                   "runs/qec-one": ["quantum_error_correction_main", "oneshot", "scripted:oneshot-wrong", "complete",
                                    "incorrect"]}
    metrics = json.loads((runs / "qec-lab" / "metrics.json").read_text())
    assert int(lines[0][6]) == metrics["totals"]["total_tokens"]
    data = json.loads(runner.invoke(app, ["runs", "list", "--root", str(runs), "--json"]).output)
    assert [(r["path"], r["verdict"]) for r in data] == [(str(runs / "qec-lab"), "correct"),
                                                         (str(runs / "qec-one"), "incorrect")]


def test_list_of_a_missing_root_is_one_line(tmp_path, capsys):
    from physlab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["runs", "list", "--root", str(tmp_path / "nope")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such runs directory" in err[0]
