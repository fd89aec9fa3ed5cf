"""The Grader grades HiPhO items (boxed LaTeX answers, no template) through the sandbox: the boxes
are read in the candidate's sandbox run, which never holds the answer key, and compared in the
trusted run -- both killable, no worker thread."""

from __future__ import annotations

import json

from physlab.grading import Grader
from physlab.problems import load_suite


def _item(pid: str):
    return next(p for p in load_suite("hipho_sample") if p.id == pid)


class Recording:
    """The sandbox, recording every run's job."""

    def __init__(self, inner):
        self.inner, self.jobs = inner, []

    async def run(self, code, **kw):
        self.jobs.append(json.loads(kw["files"]["job.json"]))
        return await self.inner.run(code, **kw)


async def test_grader_grades_hipho_boxed_answers_in_the_sandbox(grading_sandbox):
    problem = _item("IPhO_2025_3_A_2")
    box = Recording(grading_sandbox)
    grader = Grader(box, timeout_s=10.0, compare_timeout_s=60.0, step_timeout_s=4.0)
    right = (r"The critical radius is \boxed{a_c = \frac{2\sigma}{P_0 (c_\ell/c_0 - 1)}}"
             r" and numerically \boxed{0.3\,\mu\mathrm{m}}")
    wrong = r"\boxed{a_c = \frac{\sigma}{P_0 (c_\ell/c_0 - 1)}} and \boxed{0.3}"
    v_right = await grader.grade(problem, right)
    v_wrong = await grader.grade(problem, wrong)
    v_none = await grader.grade(problem, "I could not solve it.")
    assert v_right.verdict == "correct", v_right.reason
    assert v_wrong.verdict == "incorrect", v_wrong.reason
    assert v_none.verdict == "invalid" and "boxed" in v_none.reason
    assert v_right.details["path"] == "hipho"
    assert v_right.details["points"] == v_right.details["points_total"] == 0.5
    assert "sigma" in v_right.details["reference_normalized"] and "µm" in v_right.details["candidate_normalized"]
    stage1 = [j for j in box.jobs if j["mode"] == "candidate"]
    stage2 = [j for j in box.jobs if j["mode"] == "grade"]
    assert stage1 and stage2
    assert all("hipho" not in j and "reference" not in j for j in stage1)  # the key stays out
    assert all(j["hipho"]["answers"] for j in stage2)
