"""`physlab runs ...`: inspect a lab run and talk to it while it goes or between resumes.

    physlab runs list [--root runs] [--json]       (every run: problem, strategy, model, status, verdict, cost)
    physlab runs show DIR [--json] [--last N]      (any run; the research state for a lab run; its answer)
    physlab runs comment DIR --on WH-3 "text"      (shown to the orchestrator)
    physlab runs hint DIR "text"                   (orchestrator and workers)
    physlab runs challenge DIR --on ER-2 "text"    (to the adjudicator, like a critique)
    physlab runs redirect DIR "text"               (to the planner)
    physlab runs pause DIR / physlab runs stop DIR (at the next iteration boundary)
    physlab runs rewind DIR --to N                 (make iteration N current; then --resume DIR)

Messages are appended to DIR/inbox.jsonl and taken in at the next iteration boundary (or at the
next `--resume`). Resuming from an earlier iteration: `physlab runs rewind DIR --to 3` then
`physlab solve --resume DIR` (or `--resume DIR@3`).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from physlab.errors import UserError

runs_app = typer.Typer(help="Inspect runs (list, show) and talk to a lab run (comment, hint, challenge, redirect, "
                       "pause, stop, rewind).",
                       no_args_is_help=True)


@runs_app.command("list")
def list_runs(root: Path = typer.Option(Path("runs"), "--root", help="The directory holding the runs (and sweeps' "
                                         "run directories one level down)."),
              as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Every run under ROOT: id, problem, strategy, model, status, verdict, tokens, cost."""
    # The dashboard's runs table reads them the same way: one listing of a runs directory for both.
    from physlab.run.summary import list_runs

    if not root.is_dir():
        raise UserError("no such runs directory", path=root, field="--root")
    rows = list_runs(root.resolve())
    if as_json:
        typer.echo(json.dumps([{**r, "path": str(root / r["id"])} for r in rows], indent=2))
        return
    if not rows:
        typer.echo(f"no runs under {root}")
        return
    cols = ("id", "problem", "strategy", "model", "status", "verdict", "tokens", "cost USD")
    # the id as a path `physlab runs show` takes
    cells = [(str(root / r["id"]), r["problem"], r["strategy"], r["model"], r["status"], r["verdict"] or "-",
              r["tokens"], f"{r['cost_usd'] or 0:.4f}") for r in rows]
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Runs under {root}")
    for col in cols:
        table.add_column(col, justify="right" if col in ("tokens", "cost USD") else "left", overflow="fold")
    shown = [(*head, f"{tokens:,}", cost) for *head, tokens, cost in cells]
    for row in shown:
        table.add_row(*map(str, row))
    console = Console(highlight=False)
    if not console.is_terminal:  # a file or a pipe: as wide as its cells, no path folded (scripts: --json)
        from rich.cells import cell_len

        widths = [max(cell_len(str(v)) for v in column) for column in zip(cols, *shown)]
        console.width = sum(widths) + 3 * len(widths) + 1  # a space either side of each cell, and the rules
    console.print(table)


@runs_app.command("show")
def show(run_dir: Path = typer.Argument(..., help="The run directory."),
         as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
         last: int = typer.Option(5, "--last", min=1, help="How many recent iterations to list.")) -> None:
    """Print the research state, the last iterations and the usage per role (any other strategy's run:
    its outcome and usage per role)."""
    from physlab.lab.show import render, summary

    data = summary(run_dir, last)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        render(data)


def _post(run_dir: Path, kind: str, text: str = "", on: str | None = None) -> None:
    from physlab.lab import inbox
    from physlab.lab.show import open_run

    _, state = open_run(run_dir)
    if on and state.find(on) is None:  # ids are never removed: an unknown one is a typo
        raise UserError(f"{on} is not in this run (see `physlab runs show {run_dir}`)", field="--on")
    status = inbox.effective_status(run_dir, state.status)
    refused = inbox.refusal(status, kind)
    if refused:
        raise UserError(refused, path=run_dir)
    mid = inbox.post(run_dir, kind, text, on)
    typer.echo(f"{kind} queued ({mid}); " + inbox.when_taken_in(status, run_dir))


@runs_app.command("comment")
def comment(run_dir: Path, text: str, on: str = typer.Option(..., "--on", help="The claim: WH-n, ER-n, RQ-n...")) -> None:
    """Comment on a claim (shown to the orchestrator)."""
    _post(run_dir, "comment", text, on)


@runs_app.command("hint")
def hint(run_dir: Path, text: str, on: str | None = typer.Option(None, "--on")) -> None:
    """Hint at an approach (orchestrator and workers see it)."""
    _post(run_dir, "hint", text, on)


@runs_app.command("challenge")
def challenge(run_dir: Path, text: str, on: str = typer.Option(..., "--on", help="The ER-n challenged.")) -> None:
    """Challenge an established result (ruled on by the adjudicator)."""
    _post(run_dir, "challenge", text, on)


@runs_app.command("redirect")
def redirect(run_dir: Path, text: str) -> None:
    """Redirect the strategy (the planner answers)."""
    _post(run_dir, "redirect", text)


@runs_app.command("pause")
def pause(run_dir: Path) -> None:
    """Pause at the next iteration boundary (continue with --resume)."""
    _post(run_dir, "pause")


@runs_app.command("stop")
def stop(run_dir: Path) -> None:
    """Stop at the next iteration boundary; the formatter writes the best supported answer."""
    _post(run_dir, "stop")


@runs_app.command("rewind")
def rewind(run_dir: Path, to: int = typer.Option(..., "--to", min=0, help="Iteration to continue from.")) -> None:
    """Make the state at the end of iteration N current (later iterations stay in git history)."""
    from physlab.lab.show import open_run
    from physlab.run.lock import lock_run

    ws, _ = open_run(run_dir)
    with lock_run(run_dir):  # never under a live engine: it would commit its state over the rewind
        st = ws.rewind(to)
    typer.echo(f"rewound to iteration {st.iteration}; continue with: physlab solve --resume {run_dir}")


def register(app: typer.Typer) -> None:
    # SCALAR's transcripts can be re-scored by other judges: `physlab runs rescore|scalar-report`.
    from physlab.cli import scalar

    scalar.register(runs_app)
    app.add_typer(runs_app, name="runs")
