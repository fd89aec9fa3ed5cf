"""Shared builders for the grading tests."""

from __future__ import annotations

import json
from pathlib import Path

from physlab.grading.grader import prose_verdict
from physlab.grading.jobs import candidate_job, check_written, grade_job, precision_rule, verdict_from
from physlab.grading.rt import stages
from physlab.grading.template import template_spec
from physlab.grading.verdict import Verdict
from physlab.problems.model import Problem

QEC_FILE = Path("/work/shared/data/critpt/example_challenges/quantum_error_correction.json")

QEC_TEMPLATE = '''import sympy as sp

p = sp.symbols('p')

def answer(p):
    r"""Logical state fidelity as a function of the two-qubit gate error rate p."""
    # ------------------ FILL IN YOUR RESULTS BELOW ------------------
    F_logical = ...  # a SymPy expression of inputs
    # ---------------------------------------------------------------
    return F_logical
'''
QEC_NUM = ("(sp.Rational(16, 25)* p**2 - sp.Rational(128, 125)* p**3 + sp.Rational(2048, 3375)* p**4"
           " - sp.Rational(32768, 253125)* p**5)")
QEC_DEN = ("(1 - sp.Rational(68, 15)* p + sp.Rational(704, 75)* p**2 - sp.Rational(32768, 3375)* p**3"
           " + sp.Rational(253952, 50625)* p**4 - sp.Rational(262144, 253125)* p**5)")
QEC_REFERENCE = f"F_logical = 1 - {QEC_NUM} / {QEC_DEN}"


def qec_problem(**kw) -> Problem:
    """The CritPt QEC example (template + answer_only_code as in the public data)."""
    template, reference = QEC_TEMPLATE, QEC_REFERENCE
    if QEC_FILE.is_file():
        item = json.loads(QEC_FILE.read_text())["problems"][0]
        template, reference = item["code_template"], item["answer_only_code"]
    return Problem(id="qec_main", statement="QEC", answer_template=template, reference=reference,
                   reference_format="python", **kw)


def fill(template: str, body: str) -> str:
    """A candidate: the template with its answer function replaced by ``body`` (indented)."""
    head = template.split("def answer")[0]
    sig = "def answer" + template.split("def answer")[1].split(":")[0] + ":\n"
    return head + sig + "".join(f"    {line}\n" for line in body.strip().splitlines())


def problem(template: str, reference: str, fmt: str = "python", **kw) -> Problem:
    return Problem(id=kw.pop("id", "t"), statement="s", answer_template=template, reference=reference,
                   reference_format=fmt, **kw)


def grade_in_process(prob: Problem, code: str, step_timeout: float = 5.0) -> tuple[str, str]:
    """Stage 1 + stage 2 logic in this process (for trusted test candidates only: the table
    test runs many cases fast; the sandbox path is covered by test_grader.py)."""
    spec = template_spec(prob.answer_template)
    out = stages.run_candidate({"code": code, "function": spec.function, "params": spec.params_json()})
    if not out["ok"]:
        return "invalid", out["reason"]
    job = {"mode": "grade", "trees": [json.loads(json.dumps(out["tree"]))], "symbols": spec.symbols_json(),
           "rtol": prob.rtol, "step_timeout": step_timeout, "reference": prob.reference,
           "format": prob.reference_format, "template": prob.answer_template, "function": spec.function,
           "params": spec.params_json() or [], "precision": precision_rule(prob)}
    res = stages.run_trusted(job)
    assert "error" not in res, res
    return res["verdict"], res["reason"]


def grade_text_in_process(prob: Problem, text: str, step_timeout: float = 5.0) -> Verdict:
    """Any candidate (code or written) through the grader's own jobs, both stages in this process
    (trusted test candidates only; the sandboxed path is covered by test_grader.py/test_written.py)."""
    if prob.reference_format == "prose":  # as Grader.grade: no rule reads a reference in words
        return prose_verdict(text)
    spec = template_spec(prob.answer_template)
    job = candidate_job(prob, text, spec, step_timeout=step_timeout)
    if isinstance(job, str):
        return Verdict(verdict="invalid", reason=job, details={"stage": "candidate"})
    out = stages.run_candidate(job)
    if not out["ok"]:
        return Verdict(verdict="invalid", reason=out["reason"], details={"stage": "candidate"})
    out = json.loads(json.dumps(out))
    written = out.get("written")
    if job["code"] is None:
        assert check_written(written) == "", check_written(written)
    gjob = grade_job(prob, spec, out["tree"], written if job["code"] is None else None, step_timeout=step_timeout)
    res = stages.run_trusted(json.loads(json.dumps(gjob)))
    assert "error" not in res, res
    return verdict_from(res, gjob, {"stage": "compare"})
