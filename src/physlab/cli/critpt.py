"""`physlab bench export-critpt` and `physlab bench submit-critpt` (registered by cli/bench.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import typer

from physlab.bench.critpt_server import DAILY_LIMIT, DEFAULT_URL
from physlab.errors import UserError

# The options both commands share: which group and repeats, and how the entries are written.
_DB = typer.Option(Path("results.sqlite"), "--db")
_STRATEGY = typer.Option(None, "--strategy")
_MODEL = typer.Option(None, "--model")
_REPEAT = typer.Option(None, "--repeat", min=0, help="Only this repeat (default: one batch each).")
_CONFIG = typer.Option(None, "--config", help="Budget|params tag (the report's budget|params column) when the "
                                              "group was run at several.")
_LABEL = typer.Option(None, "--model-label", help="The entries' model field (default: the model as api/name).")


def register(app: typer.Typer) -> None:
    app.command("export-critpt")(export_critpt_cmd)
    app.command("submit-critpt")(submit_critpt_cmd)


def export_critpt_cmd(
    out: Path | None = typer.Option(None, "--out", help="Where to write the batch JSON (one file per repeat, "
                                                           "<stem>.r<N>.json, when the group has several)."),
    directory: Path | None = typer.Option(None, "--dir", help="Also (or instead) write CritPt's layout: "
                                                                 "DIR/<repeat>/<problem_id>.json + batch_metadata.json."),
    db: Path = _DB,
    strategy: str | None = _STRATEGY,
    model: str | None = _MODEL,
    repeat: int | None = _REPEAT,
    config: str | None = _CONFIG,
    model_label: str | None = _LABEL,
    messages: bool = typer.Option(False, "--messages", help="Include each run's conversation as messages."),
    allow_partial: bool = typer.Option(False, "--allow-partial",
                                       help="Write a batch CritPt's server would refuse (for local use)."),
) -> None:
    """Write CritPt submission batches: every public challenge once per repeat, in CritPt's format."""
    from physlab.bench.critpt_export import repeat_file, write_directory, write_file
    from physlab.bench.outputs import output_dir, output_file, writing

    if out is None and directory is None:
        raise UserError("give --out FILE (the batch JSON) and/or --dir DIR (CritPt's per-problem layout)",
                        field="--out/--dir")
    out = output_file(out, "--out")
    directory = output_dir(directory, "--dir")
    batches = _batches(db, strategy, model, repeat, config, model_label, messages, allow_partial, sending=False)
    several = len(batches) > 1
    for b in batches:
        empty = sum(not s.generated_code for s in b.submissions)
        what = f"{len(b.submissions)} submissions (repeat {b.repeat}, {empty} without code)"
        if out is not None:
            path = repeat_file(out, b.repeat, several)
            writing(path, "--out", partial(write_file, b, path))
            typer.echo(f"wrote {what} to {path}")
        if directory is not None:
            made: list[Path] = []
            writing(directory, "--dir", partial(_into, made, write_directory, b, directory))
            typer.echo(f"wrote {what} to {made[0]}/")


def submit_critpt_cmd(
    api_key_env: str = typer.Option(..., "--api-key-env", help="Environment variable holding the grading API key."),
    db: Path = _DB,
    url: str = typer.Option(DEFAULT_URL, "--url", help="The grading endpoint."),
    strategy: str | None = _STRATEGY,
    model: str | None = _MODEL,
    repeat: int | None = _REPEAT,
    config: str | None = _CONFIG,
    model_label: str | None = _LABEL,
    messages: bool = typer.Option(False, "--messages", help="Send each run's conversation as messages."),
    allow_partial: bool = typer.Option(False, "--allow-partial",
                                       help="Send a batch the check says the server will refuse."),
    force: bool = typer.Option(False, "--force", help=f"Send even past CritPt's {DAILY_LIMIT} submissions a day."),
    timeout: float = typer.Option(1800.0, "--timeout", min=1.0, help="Seconds to wait for the grade of one batch."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and show what would be sent; send nothing."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    allow_http: bool = typer.Option(False, "--allow-http", help="Send the key over plain http to another machine "
                                                                "(refused unless given: it travels unencrypted)."),
) -> None:
    """Post the group's batches to CritPt's grading server (one per repeat) and record the scores."""
    from physlab.bench.critpt_submit import GradingFailed, check_quota, check_url, key_id, quota_note, submit
    from physlab.bench.report import critpt_scores
    from physlab.bench.report_render import critpt_cell
    from physlab.bench.store import ResultsStore

    url = check_url(url, allow_http=allow_http)
    api_key = os.environ.get(api_key_env, "").strip()
    if not api_key:
        raise UserError(f"environment variable {api_key_env} is not set", field="--api-key-env")
    batches = _batches(db, strategy, model, repeat, config, model_label, messages, allow_partial, sending=True)
    store = ResultsStore(db, create=False)
    try:
        kid = key_id(api_key)
        sent = check_quota(store, kid, len(batches), force=force or dry_run)
        if dry_run:
            for b in batches:
                typer.echo(f"would send repeat {b.repeat}: {len(b.submissions)} submissions to {url}")
            typer.echo(f"{len(sent)} submission(s) with this key in the last 24 h (of {DAILY_LIMIT}); nothing sent")
            return
        for i, b in enumerate(batches):
            if note := quota_note(len(sent) + i, time.time(), sent[0] if sent else None):
                typer.echo(note, err=True)
            typer.echo(f"sending repeat {b.repeat} ({len(b.submissions)} submissions) to {url}", err=True)
            try:
                with _progress_bar(progress, f"repeat {b.repeat}") as on_progress:
                    got = submit(store, b, url=url, api_key=api_key, timeout_s=timeout, progress=on_progress)
            except GradingFailed as exc:
                left = [str(x.repeat) for x in batches[i + 1:]]
                typer.echo(f"error: repeat {b.repeat}: {exc}"
                           + (f"; repeats {', '.join(left)} not sent" if left else ""), err=True)
                raise typer.Exit(1) from None
            extra = ", ".join(([f"timeouts {got['timeout_rate']:.1%}"] if "timeout_rate" in got else [])
                              + ([f"judge errors {got['judge_error_count']}"] if "judge_error_count" in got else []))
            typer.echo(f"repeat {b.repeat}: CritPt accuracy {got['accuracy']:.1%}" + (f" ({extra})" if extra else "")
                       + f"; recorded as submission {got['submission']} in {db}")
        group = batches[0].group
        for score in critpt_scores(store):
            if (score.strategy, score.model, score.config) == (group.strategy, group.model, group.config):
                typer.echo(f"CritPt {group.strategy} × {group.model}: "
                           f"{critpt_cell(score.mean, score.sd, len(score.runs))}")
    finally:
        store.close()


def _batches(db: Path, strategy, model, repeat, config, label, messages: bool, allow_partial: bool,
             sending: bool):
    """The group's batches, checked: a batch the server would refuse is one line and exit 2 unless
    --allow-partial; entries CritPt's code parser would not read, and runs without a recorded
    conversation, are warnings."""
    from physlab.bench.critpt_export import build_batches
    from physlab.bench.store import ResultsStore

    store = ResultsStore(db, create=False)
    try:
        batches = build_batches(store, strategy=strategy, model=model, repeat=repeat, config=config,
                                label=label, messages=messages)
    finally:
        store.close()
    refused = [b.refusal() for b in batches if b.refusal()]
    if refused and not allow_partial:
        more = f" (and {len(refused) - 1} more repeats)" if len(refused) > 1 else ""
        raise UserError(f"{refused[0]}{more}; --allow-partial "
                        + ("sends it anyway" if sending else "writes it anyway for local use"))
    for line in refused:
        typer.echo(f"warning: {line}; {'sent' if sending else 'written'} anyway (--allow-partial): "
                   "CritPt's server will refuse it", err=True)
    for b in batches:
        if b.code_problems:
            shown = "; ".join(f"{k}: {v}" for k, v in list(b.code_problems.items())[:3])
            typer.echo(f"warning: repeat {b.repeat}: {len(b.code_problems)} entries CritPt's code parser will not "
                       f"read as one function, graded wrong ({shown}"
                       + (", ..." if len(b.code_problems) > 3 else "") + ")", err=True)
        if b.no_messages:
            typer.echo(f"warning: repeat {b.repeat}: {b.no_messages} runs left no calls.jsonl; their messages are null",
                       err=True)
    return batches


class _progress_bar:
    """A progress bar on a terminal's stderr fed by the server's progress events (a spinner until
    the first); the grading takes minutes."""

    def __init__(self, enabled: bool, label: str):
        self.enabled, self.label = enabled, label
        self.progress: Any = None  # a rich Progress while a bar is shown
        self.task: Any = None

    def __enter__(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        if not (self.enabled and console.is_terminal):  # a log file gets the lines around it, not a bar
            return None
        self.progress = Progress(SpinnerColumn(), TextColumn(f"grading {self.label}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                                 transient=True)
        self.progress.start()
        self.task = self.progress.add_task("grading", total=None)

        def update(completed: int, total: int) -> None:
            self.progress.update(self.task, completed=completed, total=total or None)

        return update

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()


def _into(made: list[Any], write: Callable[..., Any], *args: Any) -> None:
    """``write(*args)``, its result kept in ``made`` (what `writing` runs returns nothing)."""
    made.append(write(*args))
