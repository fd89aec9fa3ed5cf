"""The command line starts at once: a help text (and the grader's own start) loads no model
machinery. `physlab --help` and `physlab grade --help` import neither pydantic-ai nor numpy; a
`physlab grade` of a written answer grades without them on this side of the sandbox (the sandbox
workers import SymPy and NumPy, in their own processes). `benchmarks/cli_start.py` gives the CPU
figures; these tests keep the imports that would undo them out.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("pydantic_ai", "numpy")  # together ~1 s of CPU: every command paid it before issue 38


def physlab_imports(*argv: str, cwd: str | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `physlab ARGV` as a user would (a fresh interpreter) and list the top-level packages it
    imported, from Python's own ``-X importtime`` report."""
    env = {**os.environ, "COLUMNS": "100"}
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "physlab", *argv], capture_output=True,
                       text=True, timeout=300, env=env, cwd=cwd)
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0]
                for line in p.stderr.splitlines() if line.startswith("import time:") and "|" in line}
    return p, imported


@pytest.mark.parametrize("argv", [("--help",), ("grade", "--help"), ()])
def test_a_help_text_imports_no_model_machinery(argv):
    p, imported = physlab_imports(*argv)
    assert p.returncode in (0, 2), p.stderr[-2000:]  # bare `physlab` shows its help and exits 2
    assert "Usage: python -m physlab" in p.stdout
    assert not imported & set(HEAVY), f"`physlab {' '.join(argv)}` imported {sorted(imported & set(HEAVY))}"
    assert "typer" in imported  # the report was read (a test that could not fail would pass here too)


def test_every_command_is_still_listed():
    p, _ = physlab_imports("--help")
    for command in ("solve", "grade", "sandbox", "problems", "strategies", "runs", "bench", "ui", "models"):
        assert f" {command} " in p.stdout, command


@pytest.mark.slow
def test_grading_a_written_answer_loads_no_model_machinery(tmp_path):
    """The grade itself: the problem, the grader and the sandbox's front door, nothing more."""
    cand = tmp_path / "reply.md"
    cand.write_text("Energy and momentum conservation give\n\n"
                    "$$\\boxed{E' = \\frac{E}{1 + \\frac{E}{m c^2}(1-\\cos\\theta)}}$$\n", encoding="utf-8")
    p, imported = physlab_imports("grade", "examples/qft_compton_scattering", str(cand))
    assert (p.returncode, p.stdout.split(":")[0]) == (0, "correct"), p.stdout + p.stderr[-2000:]
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_the_top_help_loads_neither_pydantic_nor_typers_rich_layout():
    """`physlab --help` ≤ 12x `python -c pass` (issue 44; benchmarks/cli_start.py): pydantic came
    through physlab.llm.usage, and typer's Rich help layout (Markdown, syntax highlighting, Rich
    tracebacks) costs more to import than the rest of the help text together."""
    env = {**os.environ, "COLUMNS": "100"}
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "physlab", "--help"], capture_output=True,
                       text=True, timeout=300, env=env)
    modules = {line.rsplit("|", 1)[1].strip() for line in p.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert p.returncode == 0 and "typer" in modules  # the report was read
    heavy = sorted(m for m in modules if m in ("pydantic", "typer.rich_utils"))
    assert not heavy, f"`physlab --help` imported {heavy}"
    # the plain layout still gives each command its whole summary, not click's "..." cut
    assert "writes a run workspace (exit 0" in " ".join(p.stdout.split())
