"""What a physicist sees on the terminal while a run goes: a live panel for every strategy (no
pydantic-ai banner above it), rows that are whole or visibly shortened, and a last frame that agrees
with the summary printed after it."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys

from rich.console import Console

from physlab.api import solve_async
from physlab.lab.console import LabView
from physlab.problems import resolve_problem
from physlab.run.console import RunView, make_console

QEC = "examples/quantum_error_correction_main"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(args: list[str], cwd) -> str:
    """Run `physlab ARGS` with stdout and stderr on a pseudo-terminal, as a user at a shell would,
    outside pytest (pydantic-ai keeps its banner quiet under pytest and in CI)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "CI", "PYDANTIC_AI_NO_BANNER")}
    env["COLUMNS"] = "100"
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "physlab", *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(120) == 0
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def test_a_terminal_shows_a_live_panel_for_any_strategy_and_no_pydantic_ai_banner(tmp_path):
    out = on_a_terminal(["solve", QEC, "--strategy", "oneshot", "--model", "scripted:oneshot-qec-correct",
                         "--workspace", str(tmp_path / "one")], tmp_path)
    assert "PYDANTIC_AI_NO_BANNER" not in out and "pydantic-ai v" not in out
    assert "PhysLab · oneshot" in out                         # the live panel of a strategy other than the lab
    frame = out.rsplit("PhysLab · oneshot", 1)[1]
    assert "1 calls" in frame and "complete (verdict correct)" in frame
    assert "calls 1, tokens" in frame                          # the summary after it says the same


async def test_the_labs_last_frame_agrees_with_the_summary(tmp_path):
    view = LabView()
    attempt = await solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=tmp_path / "qec",
                               events=lambda kind, **data: view.feed(kind, data))
    u = attempt.usage
    # the formatter's calls come after the last iteration event: the panel must still count them
    assert (view.calls, view.tokens) == (u.calls, u.input_tokens + u.output_tokens)
    assert view.status == "complete (verdict correct)"
    con = Console(file=io.StringIO(), width=100)
    con.print(view.renderable())
    assert f"{u.calls} calls · {u.input_tokens + u.output_tokens:,} tokens" in con.file.getvalue()


def test_recent_rows_are_whole_or_end_in_an_ellipsis():
    view = LabView()
    long = ("orchestrator proposed WH-4: the logical fidelity is $F(p) = 1 - 3p^2 + 2p^3 - "
            + " + ".join(f"c_{i} p^{i}" for i in range(4, 30)) + "$")
    view.feed("iteration_end", {"iteration": 3, "items": ["computer on RQ-2 -> EV-2", long, "critic: no critiques"]})
    con = Console(file=io.StringIO(), width=100)
    con.print(view.renderable())
    rows = [line.strip("│ ").removeprefix("recent").strip() for line in con.file.getvalue().splitlines()
            if "it. 3" in line]
    assert rows[0] == "it. 3: computer on RQ-2 -> EV-2" and rows[2] == "it. 3: critic: no critiques"
    assert rows[1].endswith("…") and f"it. 3: {long}".startswith(rows[1][:-1])   # shortened, and says so


async def test_other_strategies_report_their_rounds_and_calls_while_they_run(tmp_path):
    view, lines = RunView("rsa"), io.StringIO()
    printer = make_console("lines", stream=lines)

    def events(kind, **data):
        view.feed(kind, data)
        printer(kind, **data)

    attempt = await solve_async(resolve_problem(QEC), "rsa", "scripted:rsa-qec", workspace=tmp_path / "rsa",
                               events=events)
    assert list(view.steps) == [f"round {r} · population 6" for r in range(1, 5)]
    assert view.usage.calls == attempt.usage.calls and dict(view.roles) == {
        role: u.calls for role, u in attempt.usage_by_role.items()}
    assert "rsa: round 4 · population 6" in lines.getvalue()
    con = Console(file=io.StringIO(), width=100)
    con.print(view.renderable())
    assert "round 4 · population 6" in con.file.getvalue() and "complete (verdict correct)" in con.file.getvalue()


def test_the_model_seams_notices_reach_every_strategys_view_and_lines():
    view, lines = RunView("rsa"), io.StringIO()
    printer = make_console("lines", stream=lines)
    for kind, data in (("rate_limited", {"role": "aggregator", "wait_s": 12.0, "text": "waiting for rate limit (12s)"}),
                       ("output_mode", {"text": "the server takes no tools: prompted output from now on"})):
        view.feed(kind, data)
        printer(kind, **data)
    con = Console(file=io.StringIO(), width=100)
    con.print(view.renderable())
    assert "waiting for rate limit (12s)" in con.file.getvalue() and "prompted output" in con.file.getvalue()
    assert "waiting for rate limit (12s)" in lines.getvalue() and "prompted output from now on" in lines.getvalue()
    view.feed("usage", {"role": "aggregator", "calls": 1})     # the request came back: no longer waiting
    assert view.waiting is None
