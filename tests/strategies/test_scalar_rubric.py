"""SCALAR Judge: strict JSON parsing and the pass rule edge cases."""

from __future__ import annotations

import json

import pytest

from physlab.strategies.scalar.rubric import parse_judge_reply, pass_rule, with_equivalence


def reply(correctness=45, rest=(8, 8, 8, 8, 8), eq=True, **extra) -> str:
    keys = ["rigor", "logical_flow", "justification", "completeness", "physical_consistency"]
    data = {"final_answer": "x", "final_answer_equivalent": eq,
            "scores": {"correctness": correctness, **dict(zip(keys, rest))},
            "error_categories": [], "flags": {}, "missing": [], "summary": "ok"}
    data.update(extra)
    return json.dumps(data)


@pytest.mark.parametrize("correctness,rest,eq,passed", [
    (40, (8, 8, 8, 8, 8), True, True),     # total 80, correctness 40: both thresholds met exactly
    (40, (8, 8, 8, 8, 7), True, False),    # total 79
    (39, (9, 8, 8, 8, 8), True, False),    # total 80 but correctness 39
    (50, (10, 10, 10, 10, 10), False, False),  # perfect scores, not equivalent
    (41, (10, 10, 10, 10, 10), True, True),
])
def test_pass_rule_edges(correctness, rest, eq, passed):
    v = parse_judge_reply(reply(correctness, rest, eq))
    assert v.parsed and v.total == correctness + sum(rest)
    assert v.passed is passed


def test_pass_rule_function():
    assert pass_rule(True, 80, 40)
    assert not pass_rule(True, 79.9, 40)
    assert not pass_rule(True, 80, 39.5)
    assert not pass_rule(False, 100, 50)
    assert not pass_rule(True, None, None)


def test_total_is_recomputed_not_trusted():
    v = parse_judge_reply(reply(30, (5, 5, 5, 5, 5), True, total=99))
    assert v.total == 55 and not v.passed


@pytest.mark.parametrize("bad", [
    "The solution looks good, I'd give it 85/100.",
    "{not json}",
    reply(55),                                            # correctness above 50
    reply(45, (8, 8, 8, 8, 11)),                          # physical_consistency above 10
    json.dumps({"final_answer_equivalent": True, "scores": {"correctness": 45}}),  # scores missing
    reply(45, eq="yes"),                                  # equivalence not a boolean
    reply(45, (8, 8, "eight", 8, 8)),
    "[1, 2, 3]",
])
def test_unparsable_or_invalid_reply_is_a_recorded_failing_verdict(bad):
    v = parse_judge_reply(bad)
    assert not v.parsed and not v.passed and v.total is None
    assert v.raw == bad and v.parse_error


def test_fenced_json_taxonomy_and_unknown_labels():
    body = reply(45, error_categories=["SIGN_ERROR_TYPO", "COMPUTATIONAL_ERROR"],
                 flags={"SIGN_ERROR": True, "MADE_UP_FLAG": True}, missing=["INCOMPLETE_DERIVATION"],
                 critic_scores={"accuracy": 25, "clarity": 7})
    v = parse_judge_reply("Here is my verdict:\n```json\n" + body + "\n```")
    assert v.parsed
    assert v.error_categories == ["COMPUTATIONAL_ERROR"]
    assert v.flags == {"SIGN_ERROR": True}
    assert set(v.unknown_labels) == {"SIGN_ERROR_TYPO", "MADE_UP_FLAG"}
    assert v.missing == ["INCOMPLETE_DERIVATION"]
    assert v.critic_scores == {"accuracy": 20.0, "clarity": 7.0}  # clipped to the rubric maximum


def test_grader_equivalence_overrides_the_judge():
    v = parse_judge_reply(reply(45, eq=True))
    assert v.passed
    graded = with_equivalence(v, False, "grader", {"verdict": "incorrect", "reason": "x"})
    assert not graded.passed and graded.judge_equivalent is True and graded.equivalence_source == "grader"
    v2 = parse_judge_reply(reply(45, eq=False))
    assert with_equivalence(v2, True, "grader").passed
    bad = parse_judge_reply("nope")
    assert not with_equivalence(bad, True, "grader").passed
