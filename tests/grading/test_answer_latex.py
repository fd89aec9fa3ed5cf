"""The answer as math: a code answer's value, as the grader read it (its safe tree, rebuilt in the
trusted stage), is recorded as LaTeX beside the verdict, so the run page and `runs show` can show
it as rendered math instead of SymPy code. Never from evaluating the candidate's code on the host:
the tree crosses over as data; a written answer (already LaTeX in ANSWER.md) gets none."""

from __future__ import annotations

from tests.grading.helpers import fill, grade_text_in_process, problem, qec_problem

TEMPLATE = '''import sympy as sp

p = sp.symbols('p')

def answer(p):
    """F(p)."""
    F = ...
    return F
'''


def test_a_code_answer_is_recorded_as_latex_from_its_tree():
    prob = problem(TEMPLATE, "F = 1 - 3*p**2")
    v = grade_text_in_process(prob, fill(TEMPLATE, "F = 1 - 3*p**2\nreturn F"))
    assert v.verdict == "correct"
    assert v.details["candidate_latex"] == "1 - 3 p^{2}"
    wrong = grade_text_in_process(prob, "```python\n" + fill(TEMPLATE, "F = sp.sqrt(1 - p)/(2*p)\nreturn F")
                                  + "```\n")
    assert wrong.verdict == "incorrect" and wrong.details["candidate_latex"] == r"\frac{\sqrt{1 - p}}{2 p}"


def test_a_tuple_and_the_qec_fidelity_come_out_as_one_formula():
    template = TEMPLATE.replace("F = ...\n    return F", "E, n = ..., ...\n    return E, n")
    v = grade_text_in_process(problem(template, "E, n = p/2, 3"), fill(template, "return p/2, 3"))
    assert v.verdict == "correct" and v.details["candidate_latex"] == r"\left( \frac{p}{2}, \  3\right)"
    qec = qec_problem()
    code = fill(qec.answer_template, "F_logical = 1 - 16*p**2/25\nreturn F_logical")
    assert grade_text_in_process(qec, code).details["candidate_latex"] == r"1 - \frac{16 p^{2}}{25}"


def test_names_the_candidate_chose_stay_names_and_a_written_answer_gets_none():
    """A symbol's name is the candidate's text: it reaches the LaTeX as a name (the page renders it
    through the MathML allow-list), never as code run anywhere."""
    template = "def answer():\n    x = ...\n    return x\n"
    hostile = r"import sympy as sp\ndef answer():\n    return sp.Symbol('\\text{<script>alert(1)</script>}')\n"
    v = grade_text_in_process(problem(template, "x = 1"), hostile.replace(r"\n", "\n"))
    assert v.verdict == "incorrect" and "script" in v.details["candidate_latex"]
    bohr = problem("", r"E_1 = -\frac{1}{2}\alpha^2 m_e c^2", "latex")
    written = grade_text_in_process(bohr, r"**Final answer:** $E_1 = -\tfrac12 \alpha^2 m_e c^2$")
    assert written.verdict == "correct" and "candidate_latex" not in written.details


async def test_the_sandboxed_grader_records_it_and_a_strategy_never_sees_it(grader):
    from physlab.grading.grader import public_verdict

    prob = problem(TEMPLATE, "F = 1 - 3*p**2")
    v = await grader.grade(prob, fill(TEMPLATE, "F = 1 - 3*p**2\nreturn F"))
    assert v.verdict == "correct" and v.details["candidate_latex"] == "1 - 3 p^{2}"
    assert "candidate_latex" not in public_verdict(v).details


async def test_without_a_reference_the_grader_reads_the_answer_as_latex_all_the_same(grader):
    prob = problem(TEMPLATE, "F = 1").model_copy(update={"reference": None, "reference_format": None})
    assert await grader.answer_latex(prob, fill(TEMPLATE, "F = sp.exp(-p)/2\nreturn F")) == r"\frac{e^{- p}}{2}"
    assert await grader.answer_latex(prob, fill(TEMPLATE, "return 1/0")) is None      # no valid answer
    assert await grader.answer_latex(prob, r"**Final answer:** $F = 1$") is None       # written: LaTeX already
