"""The Grader routes HiPhO items (boxed LaTeX answers, no template) to the boxed-answer checker."""

from __future__ import annotations

from physlab.grading import Grader
from physlab.problems import load_suite


def _item(pid: str):
    return next(p for p in load_suite("hipho_sample") if p.id == pid)


async def test_grader_grades_hipho_boxed_answers():
    problem = _item("IPhO_2025_3_A_2")
    grader = Grader()
    right = (r"The critical radius is \boxed{a_c = \frac{2\sigma}{P_0 (c_\ell/c_0 - 1)}}"
             r" and numerically \boxed{0.3}")
    wrong = (r"\boxed{a_c = \frac{\sigma}{P_0 (c_\ell/c_0 - 1)}} and \boxed{0.3}")
    v_right = await grader.grade(problem, right)
    v_wrong = await grader.grade(problem, wrong)
    v_none = await grader.grade(problem, "I could not solve it.")
    assert v_right.verdict == "correct", v_right.reason
    assert v_wrong.verdict == "incorrect", v_wrong.reason
    assert v_none.verdict == "invalid"
    assert v_right.details["method"] == "hipho-boxed"
