"""SCALAR Judge: its reply as a pydantic model (what validates, what is sent back to the Judge),
the retry pydantic-ai gives a malformed evaluation, and the pass rule edge cases."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from physlab.strategies.sampling import OUTPUT_RETRIES
from physlab.strategies.scalar import judge
from physlab.strategies.scalar.rubric import JudgeReply, pass_rule, verdict_from_reply


def reply(correctness=45, rest=(8, 8, 8, 8, 8), eq=True, **extra) -> str:
    keys = ["rigor", "logical_flow", "justification", "completeness", "physical_consistency"]
    data = {"final_answer": "x", "final_answer_equivalent": eq,
            "scores": {"correctness": correctness, **dict(zip(keys, rest))},
            "error_categories": [], "flags": {}, "missing": [], "summary": "ok"}
    data.update(extra)
    return json.dumps(data)


def verdict(text: str):
    return verdict_from_reply(JudgeReply.model_validate_json(text))


@pytest.mark.parametrize("correctness,rest,eq,passed", [
    (40, (8, 8, 8, 8, 8), True, True),     # total 80, correctness 40: both thresholds met exactly
    (40, (8, 8, 8, 8, 7), True, False),    # total 79
    (39, (9, 8, 8, 8, 8), True, False),    # total 80 but correctness 39
    (50, (10, 10, 10, 10, 10), False, False),  # perfect scores, not equivalent
    (41, (10, 10, 10, 10, 10), True, True),
])
def test_pass_rule_edges(correctness, rest, eq, passed):
    v = verdict(reply(correctness, rest, eq))
    assert v.parsed and v.total == correctness + sum(rest)
    assert v.passed is passed


def test_pass_rule_function():
    assert pass_rule(True, 80, 40)
    assert not pass_rule(True, 79.9, 40)
    assert not pass_rule(True, 80, 39.5)
    assert not pass_rule(False, 100, 50)
    assert not pass_rule(True, None, None)


def test_total_is_recomputed_not_trusted():
    v = verdict(reply(30, (5, 5, 5, 5, 5), True, total=99))  # a total the Judge adds is ignored
    assert v.total == 55 and not v.passed


@pytest.mark.parametrize("bad", [
    reply(55),                                            # correctness above 50
    reply(45, (8, 8, 8, 8, 11)),                          # physical_consistency above 10
    json.dumps({"final_answer_equivalent": True, "scores": {"correctness": 45}}),  # scores missing
    reply(45, eq="yes please"),                           # equivalence not a boolean
    reply(45, (8, 8, "eight", 8, 8)),
    reply(45, critic_scores={"accuracy": 25}),            # above the Critic rubric's 20
    "[1, 2, 3]",
])
def test_an_evaluation_outside_the_rubric_does_not_validate(bad):
    with pytest.raises(ValidationError):
        JudgeReply.model_validate_json(bad)


def test_taxonomy_and_unknown_labels():
    v = verdict(reply(45, error_categories=["SIGN_ERROR_TYPO", "COMPUTATIONAL_ERROR"],
                      flags={"SIGN_ERROR": True, "MADE_UP_FLAG": True}, missing=["INCOMPLETE_DERIVATION"],
                      critic_scores={"accuracy": 18, "clarity": 7}))
    assert v.parsed
    assert v.error_categories == ["COMPUTATIONAL_ERROR"]
    assert v.flags == {"SIGN_ERROR": True}
    assert set(v.unknown_labels) == {"SIGN_ERROR_TYPO", "MADE_UP_FLAG"}
    assert v.missing == ["INCOMPLETE_DERIVATION"]
    assert v.critic_scores == {"accuracy": 18.0, "clarity": 7.0} and v.critic_total == 25.0


def test_the_graders_verdict_goes_beside_the_judges_and_never_changes_the_pass():
    v = verdict(reply(45, eq=True))
    graded = judge.with_grader(v, {"verdict": "incorrect", "reason": "x"})
    assert graded.passed and graded.judge_equivalent is True  # Eq(A, R) is the Judge's (Appendix C)
    assert graded.agrees_with_grader is False
    assert judge.with_grader(verdict(reply(45, eq=False)), {"verdict": "incorrect"}).agrees_with_grader is True
    assert v.agrees_with_grader is None  # no grader verdict: nothing to agree with


def _judge_model(replies: list[str], seen: list[int]) -> FunctionModel:
    """A Judge answering ``replies`` in turn through its output tool (prose when not JSON)."""
    def respond(messages, info):
        seen.append(len(messages))
        text = replies[min(len(seen) - 1, len(replies) - 1)]
        if text.startswith("{"):
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, text)])
        return ModelResponse(parts=[TextPart(text)])
    return FunctionModel(respond)


async def test_a_malformed_evaluation_is_sent_back_and_the_corrected_one_counts():
    seen: list[int] = []
    v = await judge.score(_judge_model([reply(55), reply(45)], seen), "problem", "attempt", 0, None, None)
    assert v.parsed and v.total == 85 and v.passed
    assert seen == [1, 3]  # the second request carries the invalid call and the validation error


async def test_a_judge_that_never_validates_is_a_recorded_failing_verdict():
    seen: list[int] = []
    prose = "The solution looks good, I'd give it 85/100."
    v = await judge.score(_judge_model([reply(45, eq="yes please"), prose], seen), "problem", "attempt", 0,
                          None, None)
    assert len(seen) == 1 + OUTPUT_RETRIES
    assert not v.parsed and not v.passed and v.total is None and v.parse_error
    assert v.raw == prose  # the Judge's last reply, kept for debugging (Appendix C)
    graded = judge.with_grader(v, {"verdict": "correct"})
    assert not graded.passed and graded.agrees_with_grader is None  # an unparsed verdict decided nothing
