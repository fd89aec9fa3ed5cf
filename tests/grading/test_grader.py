"""The grader end to end through the real sandbox: every verdict path, hostile candidates,
the reference-free API and the run-context adapters."""

from __future__ import annotations

import asyncio
import time

import pytest

from physlab.errors import UserError
from physlab.grading import Equivalence, Grader, bind
from physlab.problems.model import Problem

from .helpers import QEC_DEN, QEC_NUM, fill, problem, qec_problem

QEC = qec_problem()
QEC_EXPR = f"1 - {QEC_NUM} / {QEC_DEN}"


def qec(body: str) -> str:
    return fill(QEC.answer_template, body)


GOOD = qec(f"return {QEC_EXPR}")


async def test_qec_reference_is_correct(grader):
    v = await grader.grade(QEC, GOOD)
    assert v.verdict == "correct", v.reason
    assert v.details["stage"] == "compare"


async def test_verdict_paths_concurrently(grader):
    cases = {
        "factored": (qec(f"return sp.factor({QEC_EXPR})"), "correct"),
        "own symbol": (qec(f"p = sp.Symbol('p')\nreturn {QEC_EXPR}"), "correct"),
        "x2": (qec(f"return 2*({QEC_EXPR})"), "incorrect"),
        "unfilled": (QEC.answer_template, "invalid"),
        "syntax": (qec("return (p +"), "invalid"),
        "raises": (qec("raise ValueError('nope')"), "invalid"),
        "arity": ("import sympy as sp\ndef answer():\n    return 1\n", "invalid"),
        "not sympy": (qec("return object()"), "invalid"),
        "no code": ("I could not find it in time; p matters.", "invalid"),
    }
    verdicts = await asyncio.gather(*(grader.grade(QEC, code) for code, _ in cases.values()))
    for (name, (_, want)), v in zip(cases.items(), verdicts):
        assert v.verdict == want, f"{name}: {v.verdict} ({v.reason})"
    reasons = dict(zip(cases, (v.reason for v in verdicts)))
    assert "not filled" in reasons["unfilled"]
    assert "syntax error" in reasons["syntax"]
    assert "ValueError" in reasons["raises"]
    assert "arity" in reasons["arity"]
    assert "object" in reasons["not sympy"]
    assert "no Python code" in reasons["no code"]


async def test_markdown_last_python_block_is_used(grader):
    text = ("First attempt:\n```python\n" + qec("return 2*p") + "```\n\nCorrected:\n```python\n"
            + GOOD + "```\nDone.")
    assert (await grader.grade(QEC, text)).verdict == "correct"
    text2 = "```python\n" + GOOD + "```\nOops, actually:\n```python\n" + qec("return 2*p") + "```"
    assert (await grader.grade(QEC, text2)).verdict == "incorrect"


HOSTILE = {
    "infinite loop": "while True:\n    pass",
    "memory bomb": "x = bytearray(1)\nwhile True:\n    x = x + x",
    "huge print": "while True:\n    print('x' * 100000)",
    "os._exit": "import os\nos._exit(0)",
    "sys.exit": "import sys\nsys.exit(3)",
    "fork bomb-ish": "import os\nfor _ in range(200):\n    try:\n        os.fork()\n    except OSError:\n        pass\nreturn p",
    "malicious repr": "class E(sp.Expr):\n    def __repr__(self):\n        while True: pass\n"
                      "    __str__ = __repr__\n    def __eq__(self, o):\n        return True\n    __hash__ = object.__hash__\n"
                      "return E()",
    "eq always true": "class X:\n    def __eq__(self, o):\n        return True\nreturn X()",
    "deep nesting": "x = []\nfor _ in range(100000):\n    x = [x]\nreturn x",
    "huge tuple": "return tuple(range(10**6))",
    "huge power": "return sp.Pow(sp.Integer(10), sp.Integer(10)**sp.Integer(9), evaluate=False)*p",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
async def test_hostile_candidates_end_quickly(grader, name):
    start = time.monotonic()
    v = await grader.grade(QEC, qec(HOSTILE[name]))
    took = time.monotonic() - start
    assert v.verdict in ("invalid", "incorrect"), v.reason
    assert took < 35, f"{name} took {took:.1f} s"


async def test_candidate_cannot_see_the_reference(grading_sandbox):
    """The reference is never in stage 1's code, files or environment."""
    seen = []

    class Recording:
        def __init__(self, inner):
            self.inner = inner

        async def run(self, code, **kw):
            seen.append((code, kw))
            return await self.inner.run(code, **kw)

    g = Grader(Recording(grading_sandbox), timeout_s=4.0)
    snoop = qec("import os, json\nfound = []\nfor root, _, names in os.walk('.'):\n"
                "    for n in names:\n        found.append(open(os.path.join(root, n), errors='ignore').read())\n"
                "blob = ' '.join(found) + ' '.join(os.environ.values())\n"
                "return sp.Integer(1) if ('2531' + '25') in blob else sp.Integer(0)")
    v = await g.grade(QEC, snoop)
    assert v.verdict == "incorrect"  # it found nothing, so returned 0
    stage1 = [(c, kw) for c, kw in seen if b'"mode": "candidate"' in kw["files"]["job.json"]]
    assert stage1
    for code, kw in stage1:
        blob = code.encode() + b"".join(kw["files"].values())
        assert b"253125" not in blob


async def test_equivalence_api(grader):
    a = qec(f"return {QEC_EXPR}")
    b = qec(f"return sp.factor({QEC_EXPR})")
    c = qec("return 1 - p")
    bad = qec("return 1/0")
    assert await grader.equivalent(QEC.public(), a, b)
    assert not await grader.equivalent(QEC.public(), a, c)
    assert not await grader.equivalent(QEC.public(), a, bad)
    classes = await grader.equivalence_classes(QEC.public(), [a, c, bad, b, qec("return -p + 1")])
    assert classes == [[0, 3], [1, 4]]


async def test_evaluate_at_points_is_a_stable_fingerprint(grader):
    pub = QEC.public()
    fa = await grader.evaluate_at_points(pub, qec(f"return {QEC_EXPR}"), n_points=4, seed=7)
    fb = await grader.evaluate_at_points(pub, qec(f"return sp.factor({QEC_EXPR})"), n_points=4, seed=7)
    fc = await grader.evaluate_at_points(pub, qec("return 1 - p"), n_points=4, seed=7)
    assert fa is not None and len(fa) == 4 and all(isinstance(x, complex) for x in fa)
    assert all(abs(x - y) < 1e-9 * abs(x) for x, y in zip(fa, fb))
    assert any(abs(x - y) > 1e-3 for x, y in zip(fa, fc))
    assert await grader.evaluate_at_points(pub, qec("return 1/0")) is None
    other_seed = await grader.evaluate_at_points(pub, qec("return 1 - p"), n_points=4, seed=8)
    assert other_seed != fc


async def test_bound_grader_and_equivalence_adapters(grader):
    bound = bind(QEC, grader)
    assert (await bound.grade(GOOD)).correct
    eq = Equivalence(QEC, grader)
    assert eq.problem.reference is None  # keeps only the public view
    assert await eq.equivalent(GOOD, qec(f"return sp.together({QEC_EXPR})"))
    assert not await eq.equivalent(GOOD, qec("return 1 - p"))


async def test_problem_without_reference_is_a_user_error(grader):
    with pytest.raises(UserError, match="no reference"):
        await grader.grade(QEC.public(), GOOD)
    with pytest.raises(UserError):
        bind(QEC.public(), grader)


async def test_number_and_latex_references(grader):
    tpl = "import sympy as sp\n\ndef answer():\n    x = ...\n    return x\n"
    num = problem(tpl, "0.785", fmt="number")
    assert (await grader.grade(num, fill(tpl, "return sp.pi/4"))).verdict == "correct"
    assert (await grader.grade(num, fill(tpl, "return sp.pi/3"))).verdict == "incorrect"
    rel = problem(tpl, "3.2e5", fmt="number", rtol=0.01)
    assert (await grader.grade(rel, fill(tpl, "return 321000"))).verdict == "correct"


async def test_no_template_final_answer_text(grader):
    prob = Problem(id="open", statement="s", reference=r"\frac{3}{2}", reference_format="latex")
    v = await grader.grade(prob, r"Some work... Final Answer: $\frac{6}{4}$")
    assert v.verdict == "correct", v.reason
    v = await grader.grade(prob, r"The result is \boxed{2}.")
    assert v.verdict == "incorrect", v.reason


def test_grade_sync(grader):
    assert grader.grade_sync(QEC, GOOD).correct


async def test_repeated_answers_are_served_from_the_cache(grader):
    code = qec(f"return sp.expand({QEC_EXPR})")
    first = await grader.grade(QEC, code)
    start = time.monotonic()
    again = await grader.grade(QEC, code)
    assert again == first and time.monotonic() - start < 0.5


async def test_a_runs_equivalence_compares_each_new_answer_with_one_member_per_known_class():
    """A vote re-counted as samples come in (N=50) must not compare every pair again: the run's
    Equivalence sends the grader only new answers, beside one member of each class it already knows."""
    batches: list[list[str]] = []

    class Recording:  # the grader's classes, by the first character, recording what it was asked
        async def equivalence_classes(self, problem, codes, n_points=None):
            batches.append(list(codes))
            groups: dict[str, list[int]] = {}
            for i, c in enumerate(codes):
                if not c.startswith("!"):  # "!...": no valid answer, in no class
                    groups.setdefault(c[0], []).append(i)
            return list(groups.values())

    eq = Equivalence(QEC, Recording())  # type: ignore[arg-type]
    assert await eq.equivalence_classes(["a1", "b1", "a2", "!x"]) == [[0, 2], [1]]
    assert await eq.equivalence_classes(["a1", "b1", "a2", "!x", "b2", "c1", "a1"]) == [[0, 2, 6], [1, 4], [5]]
    assert batches == [["a1", "b1", "a2", "!x"], ["a1", "b1", "b2", "c1"]]  # known classes once, then the new
    assert await eq.equivalent("a2", "a1") and not await eq.equivalent("!x", "!x")
    assert len(batches) == 2  # nothing new: no grader run at all
