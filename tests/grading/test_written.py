"""Written (LaTeX) answers end to end through the real sandbox: the false "correct" verdicts of
the first release, a Markdown answer with no code block, units, what a verdict says it compared,
what strategies may see of it, and answers that would hang the parser."""

from __future__ import annotations

import pytest

from physlab.grading import Grader, bind
from physlab.problems import load_file
from physlab.problems.model import Problem

from .helpers import fill, problem


def latex_problem(reference: str, **kw) -> Problem:
    return Problem(id=kw.pop("id", "w"), statement="s", reference=reference, reference_format="latex", **kw)


@pytest.mark.parametrize("reference,candidate", [
    (r"$2 E_{n}$", r"\boxed{2}"),
    (r"-\frac{hc}{3.72 \cdot \frac{m_e}{m_p} 4 \alpha^2 E_1}", r"\boxed{4}"),
    (r"$7 = 11a+c$", r"\boxed{11a+c}"),
])
async def test_the_three_false_corrects_are_incorrect(grader, reference, candidate):
    v = await grader.grade(latex_problem(reference), f"The result is {candidate}.")
    assert v.verdict == "incorrect", v.reason
    assert v.details["path"] == "latex" and v.details["method"]


async def test_right_answers_to_the_same_references_are_correct(grader):
    cases = [(r"$2 E_{n}$", r"\boxed{E_n + E_{n}}"),
             (r"-\frac{hc}{3.72 \cdot \frac{m_e}{m_p} 4 \alpha^2 E_1}", r"\boxed{-\frac{h c m_p}{14.88 m_e \alpha^2 E_1}}"),
             (r"$7 = 11a+c$", r"\boxed{c + 11 a = 7}")]
    for reference, candidate in cases:
        v = await grader.grade(latex_problem(reference), candidate)
        assert v.verdict == "correct", (reference, v.reason)


TEMPLATE = '''import sympy as sp

m, v, r = sp.symbols("m v r", positive=True)

def answer(m, v, r):
    F = ...
    return F
'''


async def test_markdown_answer_with_only_latex_is_graded_through_the_latex_path(grader):
    """A problem with a template and a Python reference, answered in Markdown with no code block."""
    prob = problem(TEMPLATE, "F = m*v**2/r")
    right = "## Solution\nNewton's second law for circular motion gives\n\n**Final answer:** $F = \\frac{m v^2}{r}$\n"
    wrong = "## Solution\n\n$$F = \\frac{m v^2}{r^2}$$\n"
    v = await grader.grade(prob, right)
    assert v.verdict == "correct" and v.details["path"] == "latex", v.reason
    v = await grader.grade(prob, wrong)
    assert v.verdict == "incorrect" and v.details["path"] == "latex", v.reason
    v = await grader.grade(prob, "I think it is m v squared over r.")
    assert v.verdict == "invalid" and "no Python code" in v.reason
    # code still wins when there is code
    assert (await grader.grade(prob, fill(TEMPLATE, "return m*v**2/r"))).details["path"] == "code"


async def test_units_are_converted_with_pint(grader):
    ohms = latex_problem(r"4700\,\Omega")
    farads = latex_problem(r"0.002\,\mathrm{F}")
    assert (await grader.grade(ohms, r"\boxed{4.7\,\mathrm{k\Omega}}")).verdict == "correct"
    assert (await grader.grade(farads, r"\boxed{2\,\mathrm{mF}}")).verdict == "correct"
    v = await grader.grade(farads, r"\boxed{2\,\mathrm{mH}}")
    assert v.verdict == "incorrect" and "not convertible" in v.reason and v.details["method"] == "units"


async def test_the_verdict_says_what_it_compared_and_strategies_do_not_see_the_reference(grader):
    prob = latex_problem(r"E_1 = -\frac{1}{2}\alpha^2 m_e c^2")
    v = await grader.grade(prob, r"\boxed{E_1 = -\tfrac{1}{2}\alpha^{2} m_{\mathrm{e}} c^{2}}")
    assert v.verdict == "correct"
    assert v.details["reference_normalized"].startswith("E_1 = ")
    assert "m_e" in v.details["candidate_normalized"] and v.details["method"] in ("exact", "symbolic", "numeric")
    bound = bind(prob, grader)
    seen = await bound.grade(r"\boxed{-\alpha^2 m_e c^2}")
    assert seen.verdict == "incorrect" and "reference_normalized" not in seen.details
    # the reason says incorrect, nothing the reference could be read from (issue #32: "differs at
    # x (relative difference d)" gives a reference number back)
    assert seen.reason == "not equivalent to the reference answer"
    full = await bound.grade_full(r"\boxed{-\alpha^2 m_e c^2}")
    assert full.details["reference_normalized"]


async def test_code_answers_also_say_what_was_compared(grader):
    prob = problem(TEMPLATE, "F = m*v**2/r")
    v = await grader.grade(prob, fill(TEMPLATE, "return m*v**2/r/2"))
    assert v.verdict == "incorrect" and v.reason.startswith("differs at ")
    assert v.details["candidate_normalized"] and v.details["reference_normalized"] and v.details["path"] == "code"


async def test_answers_that_would_hang_the_parser_or_the_comparison_end(grading_sandbox):
    grader = Grader(grading_sandbox, timeout_s=8.0, compare_timeout_s=30.0, step_timeout_s=1.0)
    prob = latex_problem("1")
    for hostile in (r"\boxed{10^{10^{10^{10}}}}", r"\boxed{" + r"\frac{1}{" * 400 + "2" + "}" * 400 + "}",
                    r"\boxed{" + "x+" * 3000 + "1}"):
        v = await grader.grade(prob, hostile)
        assert v.verdict in ("incorrect", "invalid"), v.reason


async def test_reference_free_classes_of_written_answers(grader):
    prob = latex_problem("1").public()
    answers = [r"\boxed{\frac{1}{2}}", r"\boxed{0.5}", r"\boxed{2}", r"no answer", r"\boxed{\tfrac{2}{4}}"]
    assert await grader.equivalence_classes(prob, answers) == [[0, 1, 4], [2]]


def test_tpbench_latex_reference_against_code_and_written_answers(tmp_path):
    """TPBench: the reference is LaTeX (``H_0``), the template's parameter ``H0``."""
    import json

    from physlab.problems.files import load_file

    from .helpers import grade_text_in_process

    rec = {"problem_id": "horizon", "problem": "Find the particle horizon today in a matter-dominated universe.",
           "answer": r"\frac{2c}{H_0}",
           "reference_implementation": "def expected_answer(c: float, H0: float) -> float:\n    return 2*c/H0\n"}
    path = tmp_path / "tp.json"
    path.write_text(json.dumps([rec]))
    prob = load_file(path)[0]
    code = "```python\ndef answer(c, H0):\n    return 2*c/H0\n```"
    assert grade_text_in_process(prob, code).verdict == "correct"
    assert grade_text_in_process(prob, code.replace("2*c/H0", "c/H0")).verdict == "incorrect"
    assert grade_text_in_process(prob, r"so $d_H = \boxed{\frac{2c}{H_{0}}}$").verdict == "correct"
    assert grade_text_in_process(prob, r"so $d_H = \boxed{\frac{3c}{H_{0}}}$").verdict == "incorrect"


STATEMENT = "problem: 'Which speed? (A) c (B) c/2 (C) 2c (D) 0'\n"


async def test_a_choice_problem_is_graded_by_the_letter_through_the_sandbox(tmp_path, grader):
    f = tmp_path / "mc.yaml"
    f.write_text(STATEMENT + "choices: [A, B, C, D]\nanswer: A\n")
    [p] = load_file(f)
    right = await grader.grade(p, "<think>maybe \\boxed{C}</think>\nThe answer is (a) $c$.")
    wrong = await grader.grade(p, "The speed is c, so \\boxed{(c)}.")
    none = await grader.grade(p, "It depends on the frame.")
    assert right.verdict == "correct" and right.details["method"] == "choice", right.reason
    assert wrong.verdict == "incorrect" and "A" not in wrong.reason, wrong.reason  # never the reference
    assert none.verdict == "invalid" and "one of the options" in none.reason


@pytest.mark.parametrize("cand,ok", [
    (r"\boxed{c}", True), (r"\boxed{\text{(C)}}", True), (r"\boxed{(c) the 2p state}", True),
    (r"\boxed{b) 1 MeV}", False), (r"\boxed{A}", False), (r"\boxed{C, D}", False),
])
def test_hipho_choices_read_letters_in_any_case(cand, ok):
    """A HiPhO "Multiple Choice" answer: ``C`` matches ``c``, ``(c)``, ``\\text{(C)}``."""
    from physlab.problems.model import Problem

    from .helpers import grade_text_in_process

    p = Problem(id="mc", statement="s", reference="C", reference_format="latex",
                extra={"format": "hipho", "answer_types": ["Multiple Choice"], "units": [None], "points": [1.0],
                       "answer_key_answers": ["C"]})
    v = grade_text_in_process(p, cand)
    assert (v.verdict == "correct") == ok, v.reason
