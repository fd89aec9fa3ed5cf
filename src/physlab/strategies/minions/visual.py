"""Visual Studio: figure -> validated description (Inspector, Introspector, Verifier).

For each figure: the Inspector writes a description (a :class:`FigureDescription`, through its
output tool: pydantic-ai sends a malformed one back with the validation error); the Introspector
refines it; then the Verifier checks it against the figure. A description that still does not
validate after the retries fails without spending a Verifier call. A failed check resets
the consecutive-pass count and sends the issues back to the Introspector. The figure is accepted
after ``cv`` consecutive passes, or the loop stops after ``max_rounds`` checks and keeps the last
valid description, marked unverified.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_ai import BinaryContent
from pydantic_ai.exceptions import UnexpectedModelBehavior

from physlab.run.environment import RunEnvironment
from physlab.run.events import Step
from physlab.strategies.minions.common import NO_REVIEW, render, review
from physlab.strategies.sampling import OUTPUT_RETRIES, ask_structured

ROLE_INSPECTOR = "visual_inspector"
ROLE_INTROSPECTOR = "visual_introspector"
ROLE_VERIFIER = "visual_verifier"


class Axis(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    quantity: str | None = None
    unit: str | None = None
    scale: str | None = Field(default=None, description="linear or log")
    range: list[Any] | None = Field(default=None, description="[min, max] visible on the axis")


class Curve(BaseModel):
    model_config = ConfigDict(extra="allow")
    label: str
    description: str | None = None
    points: list[Any] = Field(default_factory=list, description="Representative [x, y] points read off the axes.")


class Quantity(BaseModel):
    model_config = ConfigDict(extra="allow")
    symbol: str
    meaning: str | None = None
    value: Any = None
    unit: str | None = None


class FigureDescription(BaseModel):
    """The structured description the Logic Studio receives instead of the raw pixels."""

    model_config = ConfigDict(extra="allow")
    figure_type: str = Field(description="plot | diagram | circuit | table | photo | other")
    summary: str = Field(description="What the figure shows, one or two sentences.")
    axes: list[Axis] = Field(default_factory=list)
    curves: list[Curve] = Field(default_factory=list)
    labelled_quantities: list[Quantity] = Field(default_factory=list)
    geometry: list[str] = Field(default_factory=list, description="One geometric fact per entry.")
    notes: str = Field(default="", description="Reading precision, anything ambiguous.")


async def _description(ctx: RunEnvironment, role: str, prompt: str, picture: BinaryContent,
                       settings: dict[str, Any] | None) -> tuple[FigureDescription | None, str | None]:
    """(description, None), or (None, why) when the role gave no valid one after its retries."""
    try:
        desc = await ask_structured(ctx, role, [prompt, picture], FigureDescription, tool="submit_description",
                                    settings=settings, images=False)
    except UnexpectedModelBehavior as exc:
        cause = exc.__cause__
        why = ("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in cause.errors()[:8])
               if isinstance(cause, ValidationError) else str(cause or exc))
        return None, f"No valid description after {OUTPUT_RETRIES} retries: {why}"
    return desc, None


def image_content(path: Path) -> BinaryContent:
    media = mimetypes.guess_type(path.name)[0] or "image/png"
    return BinaryContent(data=Path(path).read_bytes(), media_type=media)


class FigureResult(BaseModel):
    image: str
    description: dict[str, Any] | None = None
    verified: bool = False
    rounds: list[dict[str, Any]] = Field(default_factory=list)


async def describe_figure(ctx: RunEnvironment, image: Path, *, cv: int, max_rounds: int, self_improve: bool,
                          settings: dict[str, Any] | None, context: str) -> FigureResult:
    """Run the Inspector/Introspector/Verifier loop on one figure."""
    picture = image_content(image)
    result = FigureResult(image=Path(image).name)
    head = f"Problem context (for orientation only):\n{context}\n\n"
    desc, problem_ = await _description(ctx, ROLE_INSPECTOR, head + render("inspector"), picture, settings)
    if desc is not None and self_improve:
        new, problem_ = await _description(ctx, ROLE_INTROSPECTOR, render(
            "visual_introspector", feedback="Improve it on your own reading of the figure.",
            description=desc.model_dump_json(indent=1)), picture, settings)
        desc = new if new is not None else desc
        problem_ = None if new is not None else problem_
    last_valid = desc
    passes = 0
    for round_no in range(1, max_rounds + 1):
        if desc is None:
            review_issues, passed, parsed = [problem_ or "invalid description"], False, True
            stage = "schema"
        else:
            verdict = await review(ctx, ROLE_VERIFIER, [render(
                "visual_verifier", description=desc.model_dump_json(indent=1)), picture], settings)
            stage, parsed = "verifier", verdict is not None
            review_issues = verdict.issues if verdict is not None else [NO_REVIEW]
            passed = verdict is not None and verdict.passed
        passes = passes + 1 if passed else 0
        result.rounds.append({"round": round_no, "stage": stage, "passed": passed, "parsed": parsed,
                              "issues": review_issues, "consecutive_passes": passes})
        ctx.events(Step(strategy="minions", step="visual_verify", image=result.image, passed=passed))
        if passed and passes >= cv:
            result.verified = True
            break
        if passed or round_no == max_rounds:
            continue
        feedback = "A check of your description found these problems; fix them:\n" + "\n".join(
            f"- {i}" for i in review_issues)
        base = desc.model_dump_json(indent=1) if desc is not None else (last_valid.model_dump_json(indent=1)
                                                                         if last_valid else "{}")
        desc, problem_ = await _description(ctx, ROLE_INTROSPECTOR, render(
            "visual_introspector", feedback=feedback, description=base), picture, settings)
        if desc is not None:
            last_valid = desc
    final = desc or last_valid
    result.description = final.model_dump() if final is not None else None
    return result


def figures_block(figures: list[FigureResult]) -> str:
    """The Visual Studio's output as the Logic Studio sees it."""
    if not figures:
        return ""
    parts = ["\n# Figures (structured descriptions from the visual studio)"]
    for i, f in enumerate(figures, 1):
        status = "verified" if f.verified else "NOT fully verified - use with care"
        body = json.dumps(f.description, indent=1, ensure_ascii=False) if f.description else "(no usable description)"
        parts.append(f"## Figure {i} ({f.image}; {status})\n```json\n{body}\n```")
    return "\n".join(parts)
