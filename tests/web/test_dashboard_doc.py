"""docs/dashboard.md matches the code: it documents every `physlab ui` option with its default, and
its "what resume keeps" names every option a run records (a field added to RunOptions must be
documented there, or said not to be kept)."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from physlab.run.options import BUDGET_FLAGS, FLAGS, RunOptions

DOC = (Path(__file__).resolve().parents[2] / "docs" / "dashboard.md").read_text()


def ui_options() -> dict[str, object]:
    from physlab.cli import app

    command = typer.main.get_command(app).commands["ui"]  # type: ignore[attr-defined]
    return {p.opts[0]: p.default for p in command.params if p.opts[0].startswith("--")}


def test_every_ui_option_is_in_the_table_with_its_default():
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(--[a-z-]+)[^`]*` \| ([^|]*) \|", DOC, re.M)}
    options = ui_options()
    assert set(rows) == set(options)
    for flag, default in options.items():
        if default not in (None, False):
            assert str(default) in rows[flag], (flag, default, rows[flag])


def test_what_resume_keeps_names_every_recorded_option():
    keeps = DOC.split("## Resume: what it keeps", 1)[1].split("\n## ", 1)[0]
    flags = {**FLAGS, "params": "--param", "role_models": "--role-model"}
    for field in RunOptions.model_fields:
        if field == "budget":
            assert all(f"`{flag}`" in keeps for flag in BUDGET_FLAGS.values())
        elif field == "console":
            assert "Not kept: the progress display (`--console`" in keeps
        else:
            assert f"`{flags[field]}" in keeps, field
    assert "problem_spec" in keeps and "never written down" in keeps
