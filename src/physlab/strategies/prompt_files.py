"""Prompt files with ``{{key}}`` placeholders, shared by every strategy's prompts/ folder.

Plain replacement rather than str.format/Jinja: prompts are full of LaTeX and JSON braces.
"""

from __future__ import annotations

import re
from pathlib import Path

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class PromptFolder:
    def __init__(self, folder: Path, label: str = "prompt") -> None:
        self.folder = folder
        self.label = label
        self._texts: dict[str, str] = {}  # by name: a sweep renders the same prompts for every cell

    def load(self, name: str) -> str:
        text = self._texts.get(name)
        if text is None:
            text = self._texts[name] = (self.folder / f"{name}.md").read_text(encoding="utf-8")
        return text

    def render(self, name: str, **values: str) -> str:
        """prompts/<name>.md with every ``{{key}}`` filled; a missing value is a programming error."""
        text = self.load(name)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        left = _PLACEHOLDER.findall(text)
        if left:
            raise KeyError(f"{self.label} {name}: missing values for {left}")
        return text

