"""A Markdown file is an open question: statement only, no template, no reference."""

from __future__ import annotations

from pathlib import Path

from physlab.errors import ProblemFileError
from physlab.problems.fields import read_text
from physlab.problems.model import Problem


def load_markdown(path: Path, *, default_id: str) -> list[Problem]:
    text = read_text(path).strip()
    if not text:
        raise ProblemFileError("file is empty; expected the question in Markdown", path=path)
    extra: dict = {"format": "markdown"}
    first = text.splitlines()[0]
    if first.startswith("#"):
        extra["title"] = first.lstrip("#").strip()
    return [Problem(id=default_id, statement=text, path=path.resolve(), extra=extra)]
