"""The physics on the run page: the researcher's derivations rendered (Markdown, LaTeX as
MathML), the answer as math beside its code, and the problem before the model calls."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from fastapi.testclient import TestClient

from physlab.api import solve_async
from physlab.lab.state.models import ResearchState
from physlab.problems import resolve_problem
from physlab.web import create_app
from tests.web.helpers import XSS, build_lab_run

QEC = "examples/quantum_error_correction_main"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui") / "runs"
    asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=root / "qec"))
    return root


def section(html: str, sid: str) -> str:
    m = re.search(rf'<section id="{sid}".*?</section>', html, re.S)
    assert m, f"no section #{sid}"
    return m.group(0)


def test_the_derivation_is_on_the_page_with_its_math_rendered(runs):
    html = TestClient(create_app(runs), base_url="http://127.0.0.1").get("/runs/qec").text
    state = ResearchState.model_validate_json((runs / "qec" / "state.json").read_text())
    ev = next(e for e in state.evidence if e.derivation)
    part = section(html, "derivations")
    assert f'id="derivation-{ev.id}"' in part and "the answer rests on it" in part
    assert "<math" in part and "<msub>" in part and "\\mathrm{CNOT}" not in part   # $\mathrm{CNOT}_{12}$ as MathML
    assert "<strong>Stabilizers.</strong>" in part                                # Markdown, not its source
    assert all(c in part for c in ev.checks)
    assert f'href="#derivation-{ev.id}"' in section(html, "graph")                # the evidence card links it


def test_the_answer_is_shown_as_math_from_the_graders_reading(runs):
    html = TestClient(create_app(runs), base_url="http://127.0.0.1").get("/runs/qec").text
    answer = section(html, "answer")
    m = re.search(r'<div [^>]*id="answer-math"[^>]*>(.*?)</div>', answer, re.S)
    assert m and re.match(r"<math [^>]*display=\"block\"", m.group(1)) and "<mfrac>" in m.group(1)
    assert "F_logical = (229376*p**5" in answer                                   # the code stays beside it


def test_the_problem_comes_before_the_calls(runs):
    html = TestClient(create_app(runs), base_url="http://127.0.0.1").get("/runs/qec").text
    assert 0 < html.index('id="problem"') < html.index('id="answer"') < html.index('id="calls"')


def test_hostile_latex_and_derivations_stay_text(tmp_path):
    root = tmp_path / "runs"
    build_lab_run(root / "lab1", derivation="Hence $x = 1$. " + XSS + r" and $\text{<script>x()</script>}$")
    (root / "lab1" / "answer.py").write_text("def answer():\n    x = 1\n    return x\n")
    (root / "lab1" / "metrics.json").write_text(json.dumps({
        "problem_id": "demo_problem", "strategy": "lab", "model": "scripted:test", "status": "complete",
        "has_answer": True, "verdict": {"verdict": "incorrect", "reason": "no",
                                        "candidate_latex": r"\text{<script>alert(1)</script>} " + XSS}}))
    html = TestClient(create_app(root), base_url="http://127.0.0.1").get("/runs/lab1").text
    assert "<script>" not in html.replace('<script src="/static/app.js" defer></script>', "")
    assert "<img src=x" not in html and 'onerror="' not in html
    assert "&lt;script&gt;" in section(html, "derivations") and "&lt;script&gt;" in section(html, "answer")
