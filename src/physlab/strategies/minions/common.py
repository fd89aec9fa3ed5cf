"""Helpers shared by the PhysicsMinions studios: prompt files, verifier replies, answer format."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from physlab.strategies.prompt_files import PromptFolder
from physlab.strategies.tpbench_common import answer_requirements

PROMPTS = Path(__file__).with_name("prompts")


_PROMPTS = PromptFolder(PROMPTS, "minions prompt")
render = _PROMPTS.render


class Review(BaseModel):
    """One verifier's decision."""

    verdict: str  # "pass" | "fail"
    issues: list[str] = Field(default_factory=list)
    parsed: bool = True
    raw: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def json_object(text: str) -> Any:
    """The JSON object in a reply: a ```json fence, the whole reply, or the outermost braces."""
    m = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.DOTALL)
    candidates = [m.group(1)] if m else []
    s = text.strip()
    candidates.append(s)
    i, j = s.find("{"), s.rfind("}")
    if 0 <= i < j:
        candidates.append(s[i: j + 1])
    for c in candidates:
        try:
            return json.loads(c)
        except (json.JSONDecodeError, ValueError):
            continue
    raise ValueError("no JSON object in the reply")


def parse_review(reply: str) -> Review:
    """A verifier reply: strict JSON {"verdict", "issues"}; a bare 'VERDICT: PASS/FAIL' line is
    accepted too. Anything else is a failed review (never an accidental pass)."""
    try:
        data = json_object(reply)
        verdict = str(data.get("verdict", "")).strip().lower()
        issues = data.get("issues") or []
        if isinstance(issues, str):
            issues = [issues]
        if verdict in ("pass", "fail"):
            return Review(verdict=verdict, issues=[str(i) for i in issues], raw=reply)
    except (ValueError, AttributeError):
        pass
    m = re.findall(r"verdict\s*[:=]\s*\**\s*(pass|fail)", reply, re.IGNORECASE)
    if m:
        return Review(verdict=m[-1].lower(), issues=[] if m[-1].lower() == "pass" else [reply.strip()[-2000:]],
                      raw=reply)
    return Review(verdict="fail", parsed=False, raw=reply,
                  issues=["The verifier's reply could not be read as a verdict; re-check the whole solution."])


def requirements(problem: Any) -> str:
    """How to give the final answer: fill the template, else boxed answers (with the public
    answer types and units of a HiPhO item, when the problem lists them)."""
    if problem.answer_template:
        return answer_requirements(problem)
    types = problem.extra.get("answer_types") or []
    units = problem.extra.get("units") or []
    parts = ""
    if types:
        lines = []
        for i, t in enumerate(types):
            u = units[i] if i < len(units) else None
            lines.append(f"{i + 1}. {t}" + (f" (unit: {u})" if u not in (None, "", "None") else ""))
        parts = "\nThe expected answers, in order:\n" + "\n".join(lines)
    return render("boxed_requirements", parts=parts)


async def ask(ctx: Any, role: str, content: Any, *, system: str | None = None,
              settings: dict[str, Any] | None = None, history: list[Any] | None = None
              ) -> tuple[str, list[Any]]:
    """One plain-text request for ``role``: ``content`` is the prompt text, or a list of text and
    images (pydantic-ai ``BinaryContent``) when figures go along. Images are attached only where a
    studio asks for them (the shared helper attaches every problem figure to every request)."""
    from physlab.llm.text import ask_text

    return await ask_text(ctx.models.for_role(role), content, system=system, settings=settings,
                          history=history)
