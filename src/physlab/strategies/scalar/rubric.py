"""The SCALAR Judge's rubric (seed 003, Appendix C): six scores totalling 100, final-answer
equivalence decided by the Judge against the reference, error taxonomy, binary flags,
missing-content labels, optional Critic scores; the Judge's reply as a pydantic model (its output
tool's arguments, validated by pydantic-ai); and the pass rule Eq AND total >= 80 AND
correctness >= 40."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

SCORE_MAX: dict[str, int] = {
    "correctness": 50, "rigor": 10, "logical_flow": 10, "justification": 10, "completeness": 10,
    "physical_consistency": 10,
}
CRITIC_MAX: dict[str, int] = {
    "accuracy": 20, "depth": 15, "constructiveness": 15, "technical_understanding": 15, "clarity": 10,
    "comprehensiveness": 10, "pedagogical_value": 10, "objectivity": 5,
}
ERROR_CATEGORIES = (
    "COMPUTATIONAL_ERROR", "CONCEPTUAL_ERROR", "METHODOLOGICAL_ERROR", "DIMENSIONAL_ERROR",
    "BOUNDARY_CONDITION_ERROR", "CONVERGENCE_ERROR", "APPROXIMATION_ERROR",
)
FLAGS = (
    "SIGN_ERROR", "MISSING_TERM", "PRODUCT_RULE_ERROR", "CHAIN_RULE_ERROR", "BOUNDARY_CONDITION_MISAPPLIED",
    "UNIT_MISMATCH", "ALGEBRA_SIMPLIFY_FAIL", "LIMIT_ERROR", "NORMALIZATION_ERROR", "INCOMPLETE_EXPR",
    "TEST_FAIL", "TENSOR_INDEX_ERROR", "DIMENSIONAL_CONSISTENCY", "SYMMETRY_PRESERVATION",
    "COMBINATORIAL_FACTORS", "REGULARIZATIONAL_CONSISTENCY", "MISSING_JUSTIFICATION_NON_TRIVIAL_STEPS",
    "LIMITING_BEHAVIOR_FAIL", "POSITIVITY_AND_REALITY_CONSTRAINTS_VIOLATION", "VIOLATION_OF_WARD_IDENTITIES",
)
MISSING_LABELS = (
    "UNJUSTIFIED_CLAIMS", "INCORRECT_RESULT", "INCOMPLETE_DERIVATION", "MISSING_BOUNDARY_CONDITIONS",
    "DIMENSIONAL_INCONSISTENCY", "CONVERGENCE_FAILURE",
)
PASS_TOTAL = 80
PASS_CORRECTNESS = 40


RubricScores = create_model("RubricScores", **{  # type: ignore[call-overload]
    k: (float, Field(ge=0, le=top)) for k, top in SCORE_MAX.items()})
CriticScores = create_model("CriticScores", **{  # type: ignore[call-overload]
    k: (float | None, Field(default=None, ge=0, le=top)) for k, top in CRITIC_MAX.items()})


class JudgeReply(BaseModel):
    """The Judge's evaluation of one Actor turn, as it gives it (Appendix C, 'Implementation note':
    a strict object of these fields). A reply outside the rubric's ranges does not validate and is
    sent back to the Judge; unknown taxonomy labels are kept aside, not fatal."""

    final_answer: str | None = Field(default=None, description="The solver's final result, as stated.")
    final_answer_equivalent: bool = Field(description="Whether that result is the correct one.")
    scores: RubricScores  # type: ignore[valid-type]
    error_categories: list[str] = Field(default_factory=list)
    flags: dict[str, bool] = Field(default_factory=dict, description="NAME: true for each problem present.")
    missing: list[str] = Field(default_factory=list)
    critic_scores: CriticScores | None = None  # type: ignore[valid-type]
    summary: str = Field(default="", description="Two sentences.")


class JudgeVerdict(BaseModel):
    """One Judge evaluation of one Actor turn, as stored in the transcript. ``parsed=False`` means
    the Judge gave no valid evaluation after its retries: the verdict then fails and its last
    reply is kept."""

    parsed: bool = True
    parse_error: str | None = None
    raw: str = ""
    scores: dict[str, float] = Field(default_factory=dict)
    total: float | None = None
    judge_equivalent: bool | None = Field(default=None, description="Eq(A, R), decided by the Judge (Appendix C).")
    grader_verdict: dict[str, Any] | None = Field(
        default=None, description="PhysLab's grader on the same answer, stored beside the Judge's (never "
                                  "used by the pass rule): how far the two agree is reported.")
    final_answer: str | None = None
    error_categories: list[str] = Field(default_factory=list)
    flags: dict[str, bool] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    unknown_labels: list[str] = Field(default_factory=list)
    critic_scores: dict[str, float] | None = None
    critic_total: float | None = None
    summary: str = ""
    passed: bool = False

    @property
    def correctness(self) -> float | None:
        return self.scores.get("correctness")

    @property
    def agrees_with_grader(self) -> bool | None:
        """Did the Judge's Eq(A, R) match the grader's verdict? None unless both decided."""
        if not self.parsed or self.judge_equivalent is None or self.grader_verdict is None:
            return None
        return self.judge_equivalent == (self.grader_verdict.get("verdict") == "correct")


def pass_rule(equivalent: bool, total: float | None, correctness: float | None) -> bool:
    """Pass = Eq(A, R) AND S_actor >= 80 AND S_c >= 40; a non-equivalent answer always fails."""
    if not equivalent or total is None or correctness is None:
        return False
    return total >= PASS_TOTAL and correctness >= PASS_CORRECTNESS


def verdict_from_reply(reply: JudgeReply) -> JudgeVerdict:
    """The stored verdict of a validated reply (pass rule on the Judge's own equivalence)."""
    scores = reply.scores.model_dump()  # type: ignore[attr-defined]  # a create_model class
    cats, flags, missing = reply.error_categories, reply.flags, reply.missing
    critic = {k: v for k, v in reply.critic_scores.model_dump().items() if v is not None} \
        if reply.critic_scores is not None else None
    total = sum(scores.values())
    return JudgeVerdict(
        raw=reply.model_dump_json(), scores=scores, total=total,
        judge_equivalent=reply.final_answer_equivalent,
        final_answer=reply.final_answer,
        error_categories=[c for c in cats if c in ERROR_CATEGORIES],
        flags={k: v for k, v in flags.items() if k in FLAGS},
        missing=[m for m in missing if m in MISSING_LABELS],
        unknown_labels=[c for c in cats if c not in ERROR_CATEGORIES] + [k for k in flags if k not in FLAGS]
        + [m for m in missing if m not in MISSING_LABELS],
        critic_scores=critic or None, critic_total=sum(critic.values()) if critic else None,
        summary=reply.summary, passed=pass_rule(reply.final_answer_equivalent, total, scores["correctness"]),
    )


def unparsed_verdict(error: str, raw: str) -> JudgeVerdict:
    """A Judge that gave no valid evaluation: the turn fails and the reply is kept (Appendix C)."""
    return JudgeVerdict(parsed=False, parse_error=error[:300], raw=raw, passed=False)
