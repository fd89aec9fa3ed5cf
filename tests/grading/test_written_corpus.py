"""Written answers as real models write them (``written_corpus.yaml``, issue #35): prose endings and
``<think>`` blocks, multiple choice, left-hand sides, numbers as people write them, symbols, sets
and intervals, and the precision policy -- each acceptance with a hard negative beside it, each case
with the source of its shape. Both stages' code runs in-process (``helpers.grade_text_in_process``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from physlab.problems.model import Problem

from .helpers import grade_text_in_process

CORPUS = yaml.safe_load((Path(__file__).parent / "written_corpus.yaml").read_text(encoding="utf-8"))
KINDS = {"final", "choice", "relations", "numbers", "symbols", "sets", "precision",
         "options", "words", "notation", "prose"}  # the last four: issue #43
CASES = [(group, case) for group in CORPUS for case in group["cases"]]


def _id(group, case):
    return f"{group['kind']}: {group['physics'][:36]} | {case['candidate'][-40:]}"


def problem_of(group) -> Problem:
    extra = {"format": group["format"]} if group.get("format") else {}
    return Problem(id="written", statement=group["physics"], reference=group["reference"],
                   reference_format="latex", choices=group.get("choices"), rtol=group.get("rtol"), extra=extra)


def test_the_corpus_is_what_the_issue_asks_for():
    assert len(CASES) >= 100
    assert {g["kind"] for g in CORPUS} == KINDS
    assert all(c.get("source", "").strip() for _, c in CASES), "every case says where its shape comes from"
    verdicts = Counter(c["expect"] for _, c in CASES)
    assert abs(verdicts["correct"] - verdicts["incorrect"]) <= 0.1 * len(CASES), verdicts  # right and wrong alike
    for kind in KINDS - {"prose"}:  # every kind has acceptances and hard negatives beside them
        got = Counter(c["expect"] for g, c in CASES if g["kind"] == kind)
        assert got["correct"] >= 3 and got["incorrect"] >= 3, (kind, got)
    prose = Counter(c["expect"] for g, c in CASES if g["kind"] == "prose")  # no rule reads words: ungraded
    assert prose["ungraded"] >= 3 and prose["invalid"] >= 1 and not prose["correct"] and not prose["incorrect"]
    for g in CORPUS:
        if any(c["expect"] == "correct" for c in g["cases"]):
            assert any(c["expect"] == "incorrect" and c.get("twin") for c in g["cases"]), g["physics"]
    twins = {c.get("twin") for _, c in CASES}
    assert {"think box differs", "letter against symbol", "decimal comma", "time"} <= twins


@pytest.mark.parametrize("group,case", CASES, ids=[_id(g, c) for g, c in CASES])
def test_case(group, case):
    v = grade_text_in_process(problem_of(group), case["candidate"])
    assert v.verdict == case["expect"], (f"{group['physics']}: {v.verdict} ({v.reason}) "
                                         f"[{v.details.get('reference_normalized')} vs "
                                         f"{v.details.get('candidate_normalized')}]")
