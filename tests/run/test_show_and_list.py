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
    res = runner.invoke(app, ["runs", "list"])                       # default root: runs/ (piped, not a terminal)
    assert res.exit_code == 0, res.output
    # a table, as other commands print (issue 44: it was tab-separated text when piped), one line per run
    assert "\t" not in res.output
    header, *lines = [[cell.strip() for cell in line.strip("│┃ ").split("│" if "│" in line else "┃")]
                      for line in res.output.splitlines() if line.startswith(("│", "┃"))]
    assert header == ["id", "problem", "strategy", "model", "status", "verdict", "tokens", "cost USD"]
    got = {line[0]: line[1:6] for line in lines}
    assert got == {"runs/qec-lab": ["quantum_error_correction_main", "lab", "scripted:lab-qec", "complete", "correct"],
                   "runs/qec-one": ["quantum_error_correction_main", "oneshot", "scripted:oneshot-wrong", "complete",
                                    "incorrect"]}
    metrics = json.loads((runs / "qec-lab" / "metrics.json").read_text())
    assert int(lines[0][6].replace(",", "")) == metrics["totals"]["total_tokens"]
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


def test_show_redirected_keeps_every_line_whole(runs):
    """`runs show > file` (issue 44): no line is broken at 80 columns, the answer's code least of all."""
    lab = runs / "qec-lab"
    out = runner.invoke(app, ["runs", "show", str(lab)]).output      # not a terminal, as when redirected
    lines = set(out.splitlines())
    code = (lab / "answer.py").read_text()
    longest = max(code.splitlines(), key=len)
    assert len(longest) > 120 and longest in lines                     # the filled-in line, whole
    state = ResearchState.model_validate_json((lab / "state.json").read_text())
    claim = max(state.active_ers(), key=lambda e: len(e.claim))
    assert any(claim.claim in line for line in lines)


def test_show_writes_the_formulas_as_text_not_latex(runs):
    out = runner.invoke(app, ["runs", "show", str(runs / "qec-lab")]).output
    outside_code = "".join(part for i, part in enumerate(out.split("```")) if i % 2 == 0)
    assert "|00000⟩ → |0⟩|+⟩|000⟩" in outside_code                   # the derivation's $...$, as text
    assert "(229376 p⁵ - 1116160 p⁴" in outside_code                   # the answer's value, as text
    for raw in ("\\rangle", "\\frac", "\\mathrm", "\\left("):
        assert raw not in outside_code, raw


def test_show_gives_the_evidence_the_answer_rests_on_with_its_scripts_and_output(runs):
    """The QEC answer rests on the computer's enumeration of 16^5 fault patterns: its script and
    what it printed are shown (they were only in state.json and the dashboard), with the
    researcher's derivation; `--json` gives the same chain."""
    lab = runs / "qec-lab"
    state = ResearchState.model_validate_json((lab / "state.json").read_text())
    out = runner.invoke(app, ["runs", "show", str(lab)]).output
    enumeration = next(ev for ev in state.evidence if ev.scripts and "1048576" in ev.scripts[0].output)
    script = enumeration.scripts[0]
    assert f"Evidence {enumeration.id}" in out
    assert all(line in out.splitlines() for line in script.code.splitlines() if line.strip())  # whole, line by line
    assert "configurations: 1048576 dense cross-check: 400 ok" in out   # what it printed
    assert "Derivation" in out or "derivation" in out
    data = json.loads(runner.invoke(app, ["runs", "show", str(lab), "--json"]).output)
    chain = {ev["id"]: ev for ev in data["evidence_behind_answer"]}
    assert enumeration.id in chain and chain[enumeration.id]["scripts"][0]["code"] == script.code
    assert chain[enumeration.id]["scripts"][0]["output"] == script.output
    assert any(ev["derivation"] for ev in chain.values())
