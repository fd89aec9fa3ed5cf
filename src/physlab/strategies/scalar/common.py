"""Prompt files of the SCALAR roles (``prompts/<name>.md`` with ``{{key}}`` placeholders)."""

from __future__ import annotations

from pathlib import Path

from physlab.strategies.prompt_files import PromptFolder

PROMPTS = Path(__file__).with_name("prompts")


_PROMPTS = PromptFolder(PROMPTS, "scalar prompt")


def render(name: str, **values: str) -> str:
    return _PROMPTS.render(name, **values).strip()
