"""HiPhO items: the answer key (boxed answers with types, units, points, marking scheme) and the
optional points judge.

A HiPhO item has one or more boxed reference answers, each with an answer type ("Numerical Value",
"Expression", "Equation", "Inequality", "Multiple Choice"), a unit (or None), the points it is
worth and a step marking scheme. ``Grader.grade`` grades the candidate's boxed answers against the
key on the same LaTeX answer path as every other written answer (``rt/latex.py``, ``rt/written.py``:
numbers within 1 % or their stated precision after unit conversion, reference ranges ``[lo, hi]`` as
acceptance ranges, expressions / equations / inequalities symbolically, multiple choice as letter
sets) and sums the points of the answers that match. This module reads the key and optionally asks
an LLM judge (role ``points_judge``) to award points against the official marking scheme (strict
JSON; an unparsable reply awards nothing and is recorded).

Everything here is grader-side: it reads the answer key and must never be called from a prompt path.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from physlab.grading.extract import extract_boxed, fenced_blocks

# --------------------------------------------------------------------------------------------------
# a whole item


class HiPhOKey(BaseModel):
    """The answer key of one HiPhO item (grader-side only)."""

    answers: list[str]
    answer_types: list[str] = Field(default_factory=list)
    units: list[str | None] = Field(default_factory=list)
    points: list[float] = Field(default_factory=list)
    marking: list[list[str]] = Field(default_factory=list)

    def type_of(self, i: int) -> str:
        return self.answer_types[i] if i < len(self.answer_types) else "Expression"

    def unit_of(self, i: int) -> str | None:
        return self.units[i] if i < len(self.units) else None

    def points_of(self, i: int) -> float:
        return float(self.points[i]) if i < len(self.points) else 1.0


def _as_list(v: Any) -> list:
    if v is None:
        return []
    if isinstance(v, str):
        import ast

        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return [v]
    return list(v) if isinstance(v, (list, tuple)) else [v]


def key_from_item(item: dict[str, Any]) -> HiPhOKey:
    """The key of a raw HiPhO JSON item (fields may be lists or their string form)."""
    answers = [extract_boxed(a)[0] if extract_boxed(a) else a for a in _as_list(item.get("answer"))]
    return HiPhOKey(
        answers=answers,
        answer_types=[str(t) for t in _as_list(item.get("answer_type"))],
        units=[u if u not in ("None", "") else None for u in _as_list(item.get("unit"))],
        points=[float(p) for p in _as_list(item.get("points"))],
        marking=[_as_list(m) for m in _as_list(item.get("marking"))],
    )


def key_from_problem(problem: Any) -> HiPhOKey:
    """The key of a loaded Problem (the full one, not ``public()``): reference = boxed answers,
    answer types/units/points/marking in ``extra`` under keys starting with ``answer_key``."""
    extra = dict(problem.extra or {})
    nested = extra.get("answer_key") if isinstance(extra.get("answer_key"), dict) else {}

    def pick(*names: str) -> Any:
        for n in names:
            for src in (nested, extra):
                if n in src:
                    return src[n]
        return None

    answers = pick("answers", "answer_key_answers")
    if answers is None:
        answers = extract_boxed(problem.reference or "") or ([problem.reference] if problem.reference else [])
    else:
        answers = [extract_boxed(a)[0] if extract_boxed(a) else a for a in _as_list(answers)]
    return HiPhOKey(
        answers=list(answers),
        answer_types=[str(t) for t in _as_list(pick("answer_type", "answer_types", "answer_key_types",
                                                    "answer_key_answer_types", "answer_key_answer_type"))],
        units=[u if u not in ("None", "") else None for u in _as_list(pick("unit", "units", "answer_key_units",
                                                                            "answer_key_unit"))],
        points=[float(p) for p in _as_list(pick("points", "answer_key_points"))],
        marking=[_as_list(m) for m in _as_list(pick("marking", "answer_key_marking"))],
    )


# --------------------------------------------------------------------------------------------------
# optional LLM points judge against the marking scheme


class PointsJudgement(BaseModel):
    awarded: list[list[float]] = Field(default_factory=list, description="Per answer, per criterion.")
    points: float = 0.0
    points_total: float = 0.0
    parsed: bool = True
    raw: str = ""
    error: str | None = None


_CRIT_PTS = re.compile(r"award\s+([0-9]*\.?[0-9]+)\s*pts?", re.IGNORECASE)


def criterion_max(criterion: str) -> float:
    m = _CRIT_PTS.search(criterion)
    return float(m.group(1)) if m else 0.0


POINTS_JUDGE_SYSTEM = """You are a physics olympiad marker. You receive a problem, a contestant's \
solution and the official marking scheme: for each answer part a list of criteria, each stating \
how many points it is worth. Award each criterion its full points only if the solution clearly \
satisfies it (equivalent forms and correct alternative methods count), otherwise 0.
Reply with strict JSON only, no prose: {"awarded": [[p11, p12, ...], [p21, ...], ...]} with one \
list per answer part and one number per criterion, in the order given."""


def points_judge_prompt(statement: str, candidate_text: str, key: HiPhOKey) -> str:
    lines = [f"# Problem\n{statement}\n", f"# Contestant's solution\n{candidate_text}\n", "# Marking scheme"]
    for i, crits in enumerate(key.marking):
        lines.append(f"## Answer part {i + 1} (worth {key.points_of(i):g} pt)")
        lines += [f"{j + 1}. {c}" for j, c in enumerate(crits)]
    return "\n".join(lines)


def parse_points_reply(reply: str, key: HiPhOKey) -> PointsJudgement:
    """Strict parse of the judge's JSON; each award is clipped to [0, criterion max] and each part
    to its points. Anything malformed awards 0 and keeps the raw reply."""
    total = sum(key.points_of(i) for i in range(len(key.marking)))
    try:
        data = json.loads(_json_block(reply))
        awarded = data["awarded"]
        if not isinstance(awarded, list) or len(awarded) != len(key.marking):
            raise ValueError(f"expected {len(key.marking)} answer parts, got {len(awarded)}")
        clipped: list[list[float]] = []
        score = 0.0
        for i, (part, crits) in enumerate(zip(awarded, key.marking)):
            if not isinstance(part, list) or len(part) != len(crits):
                raise ValueError(f"part {i + 1}: expected {len(crits)} numbers")
            row = [min(max(float(p), 0.0), criterion_max(c) or float(p)) for p, c in zip(part, crits)]
            clipped.append(row)
            score += min(sum(row), key.points_of(i))
        return PointsJudgement(awarded=clipped, points=round(score, 6), points_total=total, raw=reply)
    except (ValueError, KeyError, TypeError) as exc:
        return PointsJudgement(points=0.0, points_total=total, parsed=False, raw=reply, error=str(exc))


def _json_block(text: str) -> str:
    for lang, body in fenced_blocks(text):  # linear: a lazy regex between fences is not
        if lang in ("", "json") and body.strip().startswith("{"):
            return body.strip()
    s = text.strip()
    if s.startswith("{"):
        return s
    i, j = s.find("{"), s.rfind("}")
    if i >= 0 and j > i:
        return s[i: j + 1]
    raise ValueError("no JSON object in the reply")


async def judge_points(model: Any, statement: str, candidate_text: str, key: HiPhOKey) -> PointsJudgement:
    """Ask an LLM (a pydantic-ai Model, normally ``ctx.models.for_role("points_judge")``) to mark the
    solution against the marking scheme."""
    from pydantic_ai import Agent

    if not key.marking:
        return PointsJudgement(parsed=False, error="item has no marking scheme")
    agent = Agent(model, system_prompt=POINTS_JUDGE_SYSTEM, output_type=str)
    result = await agent.run(points_judge_prompt(statement, candidate_text, key))
    return parse_points_reply(result.output, key)


async def points_for_problem(models: Any, problem: Any, candidate_text: str) -> PointsJudgement:
    """The points judge for a loaded HiPhO problem (full view, with its marking scheme), using
    ``models.for_role("points_judge")`` (a run's ModelSource, so the calls are recorded)."""
    key = key_from_problem(problem)
    return await judge_points(models.for_role("points_judge"), problem.public().statement, candidate_text, key)
