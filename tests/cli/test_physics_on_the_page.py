"""The researcher's derivation (Markdown with LaTeX, kept in state.json) is readable where a
physicist looks: RESEARCH_STATE.md holds every derivation whole, and `physlab runs show` prints the
ones the answer rests on, with the answer's value (as the grader read it) beside its code, formulas
written as text on the terminal and as LaTeX in `--json`."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from physlab.api import solve_async
from physlab.cli import app
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState
from physlab.lab.state.render import render_state
from physlab.problems import resolve_problem
from physlab.run.math_text import markdown_to_text, math_to_text

QEC = "examples/quantum_error_correction_main"
runner = CliRunner()

# What a researcher writes: a derivation longer than any one-line summary, display math, a table.
LONG_DERIVATION = "\n".join([
    "**Setup.** Let $H = -J\\sum_i \\sigma_i \\sigma_{i+1}$ on a ring of $N$ sites.",
    "",
    "1. The transfer matrix is $T = \\begin{pmatrix} e^{\\beta J} & e^{-\\beta J} \\\\ e^{-\\beta J} & e^{\\beta J}"
    "\\end{pmatrix}$.",
    "2. Its eigenvalues are $\\lambda_\\pm = 2\\cosh\\beta J,\\ 2\\sinh\\beta J$.",
    "",
    "$$Z_N = \\lambda_+^N + \\lambda_-^N \\;\\xrightarrow{N\\to\\infty}\\; (2\\cosh\\beta J)^N$$",
    "",
    *[f"Step {i}: the correction at order $\\beta^{i}$ vanishes by symmetry." for i in range(3, 30)],
    "",
    "| limit | $f$ |", "|---|---|", "| $T\\to 0$ | $-J$ |",
    "",
    "Hence $f = -k_B T \\ln(2\\cosh\\beta J)$ (the last line).",
])


def squeeze(text: str) -> str:
    return "".join(text.split())


def ising_state() -> ResearchState:
    s = ResearchState(problem_id="ising_1d")
    s, _ = T.set_strategy(s, "Transfer matrix.")
    s = T.begin_iteration(s)
    s, rq = T.create_rq(s, "What is the free energy per site?")
    s, _ = T.add_evidence(s, target=rq, role="researcher", findings="$f = -k_B T\\ln(2\\cosh\\beta J)$",
                          method="transfer matrix", derivation=LONG_DERIVATION,
                          checks=["$T\\to\\infty$: $f \\to -k_B T\\ln 2$ (entropy of free spins)"], confidence="exact")
    s, _ = T.add_evidence(s, target=rq, role="computer", findings="numerics agree", code="print(1)", output="1")
    return s


def test_research_state_md_holds_each_derivation_whole():
    md = render_state(ising_state())
    assert "## Derivations" in md
    section = md.split("## Derivations", 1)[1]
    assert "EV-1" in section and "researcher on RQ-1" in section and "exact" in section
    assert LONG_DERIVATION in section                      # whole: not clipped like a one-line finding
    assert "(entropy of free spins)" in section and "transfer matrix" in section
    assert "EV-2" not in section                           # the computer's evidence has no derivation
    assert "## Derivations" not in render_state(ResearchState(problem_id="x"))  # none yet: no empty section


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    ws = tmp_path_factory.mktemp("runs") / "qec-lab"
    asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=ws))
    return ws


def test_the_lab_writes_its_derivations_into_research_state_md(lab_run):
    state = ResearchState.model_validate_json((lab_run / "state.json").read_text())
    derivation = next(e.derivation for e in state.evidence if e.derivation)
    assert derivation.strip() in (lab_run / "RESEARCH_STATE.md").read_text()


def test_runs_show_prints_the_derivation_behind_the_answer_and_the_answers_value(lab_run):
    """Whole, with its formulas written as text (issue 44: not raw LaTeX); the LaTeX is in --json."""
    state = ResearchState.model_validate_json((lab_run / "state.json").read_text())
    ev = next(e for e in state.evidence if e.derivation)
    res = runner.invoke(app, ["runs", "show", str(lab_run)])
    assert res.exit_code == 0, res.output
    out = squeeze(res.output)
    assert f"Evidence{ev.id}" in out and "Theevidencetheanswerrestson" in out
    assert squeeze(markdown_to_text(ev.derivation)) in out          # whole, to its last line
    latex = json.loads((lab_run / "metrics.json").read_text())["verdict"]["candidate_latex"]
    assert "\\frac{" in latex and squeeze(math_to_text(latex)) in out and "\\frac{" not in out
    data = json.loads(runner.invoke(app, ["runs", "show", str(lab_run), "--json"]).output)
    shown = {d["id"]: d for d in data["derivations"]}
    assert shown[ev.id]["derivation"] == ev.derivation and shown[ev.id]["behind_answer"] is True
    assert data["answer_latex"] == latex


def test_an_ungraded_answer_is_shown_as_math_too(tmp_path):
    """The physicist's own problem often has no reference: its code answer is read by the grader's
    first stage all the same (in the sandbox) and recorded as LaTeX from its tree."""
    from fastapi.testclient import TestClient

    from physlab.llm.scripted import register_scenario
    from physlab.web import create_app

    mine = tmp_path / "oscillator.yaml"
    mine.write_text("problem: The ground-state energy of a harmonic oscillator of frequency $\\omega$?\n"
                    "answer_template: |\n  import sympy as sp\n  def answer(hbar, omega):\n      E0 = ...\n"
                    "      return E0\n")
    reply = ("Half a quantum.\n\n```python\nimport sympy as sp\ndef answer(hbar, omega):\n"
             "    E0 = hbar*omega/2\n    return E0\n```\n")
    register_scenario("first-hour-oscillator", lambda: (lambda role, messages, info: reply))
    ws = tmp_path / "runs" / "osc"
    res = runner.invoke(app, ["solve", str(mine), "--model", "scripted:first-hour-oscillator", "-s", "oneshot",
                              "--workspace", str(ws), "--console", "quiet"])
    assert res.exit_code == 0, res.output
    metrics = json.loads((ws / "metrics.json").read_text())
    assert metrics["verdict"] is None and metrics["answer_latex"] == "\\frac{\\hbar \\omega}{2}"
    shown = runner.invoke(app, ["runs", "show", str(ws)]).output
    assert "(ħ ω)/2" in shown and "\\frac" not in shown                  # the value, as text
    page = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1").get("/runs/osc").text
    assert 'id="answer-math"' in page and "<mfrac>" in page.split('id="answer-math"')[1].split("</div>")[0]
