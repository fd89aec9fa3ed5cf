"""`scripted:lab-dirac` from the command line (issue 44): the example it needs ships under
`examples/` (the problem and the physicist's notes it cites), so the command in docs/tools.md works
as written; and the same scenario on a problem it does not fit writes an answer whose verdict is
invalid -- exit 0 by DESIGN's contract (an answer was written), but the summary's last line says
it is not a valid answer, where a correct run's says where the answer is."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from physlab.lab.scenarios.dirac import NOTES, dirac_problem
from physlab.problems import resolve_problem
from physlab.tools import cas

REPO = Path(__file__).resolve().parents[2]


def _needs_form() -> None:
    status = cas.system_status("form")
    if not status.available:
        pytest.skip(status.reason)


def _physlab(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "physlab", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _docs_command() -> list[str]:
    text = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^physlab solve .*--model scripted:lab-dirac.*$", text, flags=re.M)
    return shlex.split(line)[1:]


def test_the_shipped_example_is_the_scenarios_problem_and_notes():
    shipped = resolve_problem(REPO / "examples" / "dirac_trace.yaml")
    scenario = dirac_problem()
    assert " ".join(shipped.statement.split()) == " ".join(scenario.statement.split())
    assert shipped.answer_template.strip() == scenario.answer_template.strip()
    assert (REPO / "examples" / "dirac_notes" / "dirac-notes.md").read_text(encoding="utf-8") == NOTES


@pytest.mark.slow
def test_the_docs_command_runs_the_scenario_to_a_correct_answer(tmp_path):
    _needs_form()
    (tmp_path / "examples").symlink_to(REPO / "examples")  # the docs' relative paths, from a checkout
    p = _physlab([*_docs_command(), "--console", "lines"], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert "verdict: correct" in p.stdout and "  c = 4" in p.stdout
    assert p.stdout.strip().splitlines()[-1].startswith("the whole answer: runs/")


@pytest.mark.slow
def test_an_invalid_answer_is_said_last_not_passed_off_as_a_success(tmp_path):
    _needs_form()
    p = _physlab(["solve", "examples/qft_ee_to_mumu", "--model", "scripted:lab-dirac", "--tools", "cas",
                  "--workspace", str(tmp_path / "ee"), "--console", "lines"], REPO)
    assert p.returncode == 0, p.stderr[-2000:]      # DESIGN.md: 0 = a final answer was written
    assert "verdict: invalid" in p.stdout
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith("not a valid answer to this problem:") and "wrong arity" in last, p.stdout
