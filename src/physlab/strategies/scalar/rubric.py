"""The SCALAR Judge's rubric (seed 003, Appendix C): six scores totalling 100, final-answer
equivalence, error taxonomy, binary flags, missing-content labels, optional Critic scores; the
strict-JSON parser; and the pass rule Eq AND total >= 80 AND correctness >= 40."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

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


class JudgeVerdict(BaseModel):
    """One Judge evaluation of one Actor turn. ``parsed=False`` means the reply was not valid
    strict JSON of this shape: the verdict then fails and the raw reply is kept."""

    parsed: bool = True
    parse_error: str | None = None
    raw: str = ""
    scores: dict[str, float] = Field(default_factory=dict)
    total: float | None = None
    judge_equivalent: bool | None = Field(default=None, description="The Judge's own Eq(A, R).")
    equivalent: bool = False
    equivalence_source: str = "judge"  # "grader" | "judge"
    grader_verdict: dict[str, Any] | None = None
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


def pass_rule(equivalent: bool, total: float | None, correctness: float | None) -> bool:
    """Pass = Eq(A, R) AND S_actor >= 80 AND S_c >= 40; a non-equivalent answer always fails."""
    if not equivalent or total is None or correctness is None:
        return False
    return total >= PASS_TOTAL and correctness >= PASS_CORRECTNESS


def _json_text(reply: str) -> str:
    m = re.search(r"```(?:json)?\s*(\{.*\})\s*```", reply, re.DOTALL)
    if m:
        return m.group(1)
    return reply.strip()


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: expected a number, got {v!r}")
    return float(v)


def parse_judge_reply(reply: str) -> JudgeVerdict:
    """Strictly parse the Judge's JSON. Any deviation (not JSON, a missing or out-of-range score,
    a non-boolean equivalence) yields a failing verdict with ``parsed=False`` and the reply kept.
    Unknown taxonomy labels are not fatal: they are kept aside in ``unknown_labels``."""
    try:
        data = json.loads(_json_text(reply))
        if not isinstance(data, dict):
            raise ValueError("the reply is not a JSON object")
        raw_scores = data.get("scores")
        if not isinstance(raw_scores, dict):
            raise ValueError("'scores' must be an object")
        scores: dict[str, float] = {}
        for key, top in SCORE_MAX.items():
            if key not in raw_scores:
                raise ValueError(f"scores.{key} is missing")
            value = _number(raw_scores[key], f"scores.{key}")
            if not 0 <= value <= top:
                raise ValueError(f"scores.{key}={value:g} is outside [0, {top}]")
            scores[key] = value
        eq = data.get("final_answer_equivalent")
        if not isinstance(eq, bool):
            raise ValueError("'final_answer_equivalent' must be true or false")
        unknown: list[str] = []
        cats = [str(c) for c in data.get("error_categories") or []]
        unknown += [c for c in cats if c not in ERROR_CATEGORIES]
        flags_in = data.get("flags") or {}
        if isinstance(flags_in, list):  # a list of raised flags is accepted too
            flags_in = {str(f): True for f in flags_in}
        if not isinstance(flags_in, dict):
            raise ValueError("'flags' must be an object of booleans")
        flags = {str(k): bool(v) for k, v in flags_in.items() if str(k) in FLAGS}
        unknown += [str(k) for k in flags_in if str(k) not in FLAGS]
        missing = [str(m) for m in data.get("missing") or []]
        unknown += [m for m in missing if m not in MISSING_LABELS]
        critic = data.get("critic_scores")
        critic_scores = None
        if isinstance(critic, dict):
            critic_scores = {k: min(max(_number(critic[k], f"critic_scores.{k}"), 0.0), float(top))
                             for k, top in CRITIC_MAX.items() if k in critic}
        total = sum(scores.values())
        return JudgeVerdict(
            raw=reply, scores=scores, total=total, judge_equivalent=eq, equivalent=eq,
            final_answer=(str(data["final_answer"]) if data.get("final_answer") is not None else None),
            error_categories=[c for c in cats if c in ERROR_CATEGORIES],
            flags=flags, missing=[m for m in missing if m in MISSING_LABELS], unknown_labels=unknown,
            critic_scores=critic_scores,
            critic_total=sum(critic_scores.values()) if critic_scores else None,
            summary=str(data.get("summary") or ""),
            passed=pass_rule(eq, total, scores["correctness"]),
        )
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        return JudgeVerdict(parsed=False, parse_error=str(exc)[:300], raw=reply, passed=False)


def with_equivalence(verdict: JudgeVerdict, equivalent: bool, source: str,
                     grader_verdict: dict[str, Any] | None = None) -> JudgeVerdict:
    """The verdict with Eq(A, R) taken from ``source`` (the grader when the answer is gradable)
    and the pass rule re-applied."""
    update = {"equivalent": equivalent, "equivalence_source": source, "grader_verdict": grader_verdict}
    v = verdict.model_copy(update=update)
    v.passed = v.parsed and pass_rule(equivalent, v.total, v.correctness)
    return v
