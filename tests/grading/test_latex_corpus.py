"""The LaTeX answer corpus (``latex_corpus.yaml``, written for PhysLab): every case grades as a
physicist marks it, across the eight failure classes of issue #22 and their wrong twins. The three
false "correct" verdicts the first release gave are in it (``2 E_n`` vs ``2``, the hyperfine
wavelength vs ``4``, ``7 = 11a + c`` vs ``11a + c``).

Both stages' code runs in-process (the grader's own jobs, ``helpers.grade_text_in_process``);
``test_written.py`` takes a sample of the same kinds of answers through the sandbox."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from physlab.problems.model import Problem

from .helpers import grade_text_in_process

CORPUS = yaml.safe_load((Path(__file__).parent / "latex_corpus.yaml").read_text(encoding="utf-8"))
CLASSES = {"relations", "final", "sets", "thousands", "intervals", "units", "subscripts", "forms"}
CASES = [(group, case) for group in CORPUS for case in group["cases"]]


def _id(group, case):
    return f"{group['class']}: {group['physics'][:40]} | {case['candidate'][:40]}"


def test_the_corpus_is_what_the_issue_asks_for():
    assert len(CASES) >= 150
    assert {g["class"] for g in CORPUS} == CLASSES
    assert all(g["physics"].strip() for g in CORPUS)
    twins = Counter(c.get("twin") for _, c in CASES if c["expect"] == "incorrect")
    for kind in ("sign", "factor", "unit prefix", "swapped variables"):
        assert twins[kind] >= 4, kind
    assert any("missing" in (k or "") for k in twins)
    by_class = Counter(g["class"] for g, c in CASES)
    assert min(by_class.values()) >= 10, by_class


@pytest.mark.parametrize("group,case", CASES, ids=[_id(g, c) for g, c in CASES])
def test_case(group, case):
    problem = Problem(id="corpus", statement=group["physics"], reference=group["reference"],
                      reference_format="latex")
    v = grade_text_in_process(problem, case["candidate"])
    assert v.verdict == case["expect"], f"{group['physics']}: {v.verdict} ({v.reason}) " \
                                        f"[{v.details.get('reference_normalized')} vs {v.details.get('candidate_normalized')}]"
    if v.verdict != "invalid":  # it says what it compared
        assert v.details["method"] and v.details["candidate_normalized"] and v.details["reference_normalized"]
