"""The figures the docs show as a command's output are either real -- the command and the run that
printed them named beside them (a scripted model, a stand-in server, a benchmark that anyone can run
offline) -- or recognisably illustrative: a placeholder, not a number, where no run is behind them
(issue #41: docs/critpt.md showed "31.4%" and "31.1% ± 1.3%" as a CritPt score no run had)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FIGURE = re.compile(r"\b\d+\.\d+ ?%|\b0\.\d{3}\b|\$\d+\.\d+")  # a percentage, an accuracy, a price
# What names the run behind an output block: something anyone can run offline to print it.
REAL = re.compile(r"scripted:|stand-in|python -m physlab\.llm\.standin|benchmarks/\w+\.py")


def output_blocks(text: str):
    """Each fenced block (fences are lines that start with ```) with the 700 characters of prose
    before it, and the line it starts on."""
    lines = text.splitlines(keepends=True)
    opened, before = None, ""
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("```"):
            continue
        if opened is None:
            opened, before = i, "".join(lines[:i])[-700:]
        else:
            yield before, "".join(lines[opened + 1:i]), opened + 1
            opened = None


def test_every_figure_shown_as_output_has_its_run_named_or_is_a_placeholder():
    unbacked = []
    for doc in DOCS:
        for before, block, line in output_blocks(doc.read_text()):
            if FIGURE.search(block) and not REAL.search(before + block):
                unbacked.append(f"{doc.relative_to(ROOT)}:{line}: {FIGURE.search(block).group(0)}")
    assert unbacked == []


def test_the_critpt_sample_output_is_illustrative():
    text = (ROOT / "docs" / "critpt.md").read_text()
    assert "31.4%" not in text and "31.1%" not in text
    assert text.count("illustrative") >= 2
