"""Prompt files of the SCALAR roles (``prompts/<name>.md`` with ``{{key}}`` placeholders)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROMPTS = Path(__file__).with_name("prompts")


@cache
def _load(name: str) -> str:
    return (PROMPTS / f"{name}.md").read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    text = _load(name)
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    left = re.findall(r"\{\{(\w+)\}\}", text)
    if left:
        raise KeyError(f"scalar prompt {name}: missing values for {left}")
    return text.strip()
