"""Build the user prompt for a problem, images included (pydantic-ai BinaryContent), so models that
accept images get the figures and the rest get the text."""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from pathlib import Path

from pydantic_ai.messages import BinaryContent, UserContent

from physlab.errors import UserError
from physlab.problems.model import Problem


def problem_text(problem: Problem, *, include_template: bool = True) -> str:
    """The public problem as Markdown: statement, then the answer template to fill (if any)."""
    out = [problem.statement.strip()]
    if include_template and problem.answer_template:
        out.append("## Answer template\n\nFill in the `...` placeholders of this Python template:\n\n"
                   f"```python\n{problem.answer_template.rstrip()}\n```")
    return "\n\n".join(out) + "\n"


def image_parts(images: Sequence[Path]) -> list[BinaryContent]:
    parts = []
    for img in images:
        p = Path(img)
        media = mimetypes.guess_type(p.name)[0] or "application/octet-stream"
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise UserError(f"cannot read problem image ({exc.strerror})", path=p, field="images") from None
        parts.append(BinaryContent(data=data, media_type=media, identifier=p.name))
    return parts


def problem_prompt_parts(problem: Problem, *, before: str | None = None, after: str | None = None,
                         include_template: bool = True) -> list[UserContent]:
    """User-prompt parts for ``Agent.run``: [before] + problem text + images + [after].

    Always built from ``problem.public()``: the answer key never reaches a prompt."""
    pub = problem.public()
    parts: list[UserContent] = []
    text = problem_text(pub, include_template=include_template)
    parts.append(f"{before.rstrip()}\n\n{text}" if before else text)
    parts.extend(image_parts(pub.images))
    if after:
        parts.append(after)
    return parts
