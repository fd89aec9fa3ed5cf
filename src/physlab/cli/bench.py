"""`physlab bench run | report | grade | export-inspect`, and the CritPt commands (export-critpt, submit-critpt:
cli/critpt.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from physlab.bench.outputs import output_dir, output_file, writing
from physlab.errors import UserError

bench_app = typer.Typer(help="Sweeps over problems x strategies x models, and their reports.",
                        no_args_is_help=True)


def _csv_list(value: str, flag: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UserError("expected a comma-separated list", field=flag)
    return items


def _params(values: list[str] | None) -> dict:
    out = {}
    for v in values or []:
        if "=" not in v:
            raise UserError(f"expected KEY=VALUE, got {v!r}", field="--param")
        k, raw = v.split("=", 1)
        try:
            out[k.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[k.strip()] = raw
    return out


RAY_ALONE = "auto"  # a bare --ray: ray.init's "auto" (RAY_ADDRESS, else the cluster `ray start` started here)


def is_ray_address(word: str) -> bool:
    """Whether the word after ``--ray`` is its address, in a form ray.init takes (``auto``, ``local``,
    ``HOST:PORT``, ``ray://HOST:PORT``), rather than the next argument (the suite)."""
    return word in ("auto", "local") or "://" in word or re.fullmatch(r"\S+:\d+", word) is not None


def with_bare_ray(args: list[str], takes_value: set[str]) -> list[str]:
    """``args`` with a bare ``--ray`` written ``--ray=auto``. ``takes_value``: the options whose
    next word is their value whatever it looks like (``--name --ray`` names the sweep "--ray")."""
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return out + args[i:]
        if word == "--ray" and not (i + 1 < len(args) and is_ray_address(args[i + 1])):
            out.append(f"--ray={RAY_ALONE}")
            i += 1
            continue
        step = 2 if word in takes_value else 1
        out += args[i:i + step]
        i += step
    return out


class RunCommand(TyperCommand):
    """`bench run`, whose ``--ray`` takes an address only when the next word is one. Typer's parser
    has no option with an optional value (typer 0.2x accepts ``flag_value`` but ignores it), and
    click's would take the suite after a bare ``--ray`` for its address."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        takes_value = {o for p in self.params if p.param_type_name == "option" and not getattr(p, "is_flag", False)
                       and not getattr(p, "count", False) for o in p.opts}
        return super().parse_args(ctx, with_bare_ray(list(args), takes_value))


@bench_app.command("run", cls=RunCommand)
def run_cmd(
    suite: str = typer.Argument(..., help="A built-in suite, a directory of problem files, or a problem file."),
    strategies: str = typer.Option("oneshot", "--strategies", help="Comma-separated strategy names."),
    models: str = typer.Option(..., "--models", help="Comma-separated models (provider:model)."),
    repeats: int = typer.Option(1, "--repeats", min=1),
    concurrency: int = typer.Option(8, "--concurrency", min=1,
                                    help="Cells running at once (in total, over --workers processes)."),
    max_inflight: int | None = typer.Option(None, "--max-inflight", min=1,
                                               help="Model requests in flight at once (in total; default: "
                                                    "--concurrency)."),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", min=1),
    budget_cost: float | None = typer.Option(None, "--budget-cost", min=0.0),
    budget_calls: int | None = typer.Option(None, "--budget-calls", min=1),
    budget_wall: float | None = typer.Option(None, "--budget-wall", min=0.0),
    db: Path = typer.Option(Path("results.sqlite"), "--db"),
    api_base: str | None = typer.Option(None, "--api-base"),
    api_key_env: str | None = typer.Option(None, "--api-key-env"),
    role_model: list[str] | None = typer.Option(None, "--role-model",
                                                   help="ROLE=provider:model: this role's model in every cell (repeat)."),
    judge: str | None = typer.Option(None, "--judge", help="provider:model grading answers whose reference is "
                                                              "prose (else ungraded); those cells are reported apart."),
    output_mode: str | None = typer.Option(None, "--output-mode",
                                              help="tool | native | constrained | prompted | auto (see `physlab solve --help`)."),
    workspace_root: Path | None = typer.Option(None, "--workspace-root",
                                                  help="Where cell workspaces go (default: <db>_runs/)."),
    seed: int = typer.Option(0, "--seed"),
    name: str = typer.Option("", "--name", help="A label for this sweep in the database."),
    param: list[str] | None = typer.Option(None, "--param", help="Strategy parameter KEY=VALUE (repeatable)."),
    tools: list[str] | None = typer.Option(
        None, "--tools", help="The lab's tools beyond Python: cas,literature,corpus=DIR,web or none. Repeat for "
        "arms: each value is another set of cells (default: cas; docs/tools.md)."),
    protocol: str = typer.Option("physlab", "--protocol",
                                 help="physlab (PhysLab's defaults) or paper: every strategy at its published "
                                      "setting (`physlab strategies show NAME`); a --param given still wins."),
    sandbox_workers: int | None = typer.Option(None, "--sandbox-workers", min=1),
    retry_failed: bool = typer.Option(True, "--retry-failed/--no-retry-failed"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    workers: int = typer.Option(1, "--workers", min=1,
                                help="Worker processes on this machine sharing the database and splitting "
                                     "--concurrency/--max-inflight; one per core uses every core."),
    ray: str | None = typer.Option(
        None, "--ray", metavar="[ADDRESS]",
        help="Run the cells on a Ray cluster (physlab[ray]); this process writes the database. --ray alone: auto, "
             "the running cluster (RAY_ADDRESS, else the one `ray start` started on this machine; none: an error). "
             "ADDRESS as ray.init takes it: HOST:PORT or ray://HOST:PORT of the head, auto, local (a new Ray on "
             "this machine). --concurrency and --max-inflight are then totals for the cluster."),
    wait_for_start: bool = typer.Option(False, "--wait-for-start", hidden=True,
                                        help="(helper workers) get ready, print 'ready', wait for a line on stdin."),
) -> None:
    """Run every (problem, strategy, model, repeat) cell; re-run the same command to resume."""
    import asyncio

    from physlab.bench.sweep import SweepConfig, run_sweep
    from physlab.llm.models import parse_role_models
    from physlab.llm.output import check_output_mode
    from physlab.llm.usage import Budget
    from physlab.run.options import check_protocol
    from physlab.tools.choice import ToolChoice

    suite = _suite_meant(suite, quiet=wait_for_start)
    if budget_cost is not None and budget_cost <= 0:
        raise UserError("expected a positive amount in USD", field="--budget-cost")
    if budget_wall is not None and budget_wall <= 0:
        raise UserError("expected a positive number of seconds", field="--budget-wall")
    config = SweepConfig(
        suite=suite, strategies=_csv_list(strategies, "--strategies"), models=_csv_list(models, "--models"),
        repeats=repeats, concurrency=concurrency, max_inflight=max_inflight,
        budget=Budget(max_tokens=budget_tokens, max_cost_usd=budget_cost, max_calls=budget_calls,
                      max_wall_s=budget_wall),
        db=db, workspace_root=workspace_root, api_base=api_base, api_key_env=api_key_env, seed=seed,
        name=name, params=_params(param), sandbox_workers=sandbox_workers, retry_failed=retry_failed,
        role_models=parse_role_models(role_model), output_mode=check_output_mode(output_mode),
        tools=[ToolChoice.parse(t) for t in tools or []], protocol=check_protocol(protocol) or "physlab",
        executor="ray" if ray is not None else "local", ray_address=ray or None,
        judge=judge,
    )
    if ray is not None:
        if workers > 1:
            raise UserError("--workers splits a sweep over processes of this machine; with --ray the cluster's "
                            "nodes run the cells: leave --workers out", field="--workers")
        from physlab.bench.ray_sweep import import_ray

        import_ray()  # not installed: one line naming the extra, before the database is touched
    _check_names(config, say=not wait_for_start)
    _check_models(config)
    if wait_for_start:  # a helper: its Ctrl-C comes from the parent, whatever this process inherited
        import signal

        signal.signal(signal.SIGINT, signal.default_int_handler)
    config = per_worker(config, workers)
    helpers = _spawn_workers(config, workers - 1)
    gate = _start_gate(helpers, wait_for_start)
    try:
        summary = asyncio.run(run_sweep(config, progress=progress, start_gate=gate))
    except BaseException as exc:
        _interrupt(helpers)  # stopped or failed: the helpers stop too and give their cells back
        if isinstance(exc, KeyboardInterrupt) and not wait_for_start:
            # typer would exit 130 without a word; a helper leaves the saying to its parent
            typer.echo(f"interrupted: the finished cells are in {db}; run the same command again to resume",
                       err=True)
        raise
    finally:
        for h in helpers:
            _close_quietly(h.stdin)
        codes = [h.wait() for h in helpers]
    if any(c != 0 for c in codes):
        typer.echo(f"warning: worker exit codes {codes}", err=True)
    typer.echo(
        f"{summary.cells} cells: {summary.grid_done} done ({summary.ran} ran in this process, "
        f"{summary.skipped_done} already done), {summary.grid_failed} failed; "
        f"{summary.tokens:,} tokens, ${summary.cost_usd:.4f}, {summary.wall_s:.1f} s -> {db}")
    if summary.grid_done != summary.cells:
        raise typer.Exit(1)


def worker_argv(config) -> list[str]:
    """The `physlab bench run` arguments that reproduce ``config`` (for extra worker processes)."""
    b = config.budget
    args = [config.suite, "--strategies", ",".join(config.strategies), "--models", ",".join(config.models),
            "--repeats", str(config.repeats), "--concurrency", str(config.concurrency), "--db", str(config.db),
            "--seed", str(config.seed), "--no-progress"]
    for flag, value in (("--max-inflight", config.max_inflight), ("--budget-tokens", b.max_tokens),
                        ("--budget-cost", b.max_cost_usd), ("--budget-calls", b.max_calls),
                        ("--budget-wall", b.max_wall_s), ("--api-base", config.api_base),
                        ("--api-key-env", config.api_key_env), ("--workspace-root", config.workspace_root),
                        ("--judge", config.judge),
                        ("--sandbox-workers", config.sandbox_workers)):
        if value is not None:
            args += [flag, str(value)]
    if config.name:
        args += ["--name", config.name]
    for k, v in config.params.items():
        args += ["--param", f"{k}={json.dumps(v)}"]
    for role, spec in config.role_models.items():
        args += ["--role-model", f"{role}={spec}"]
    if config.output_mode:
        args += ["--output-mode", config.output_mode]
    for arm in config.tools:
        args += ["--tools", str(arm)]
    if config.protocol != "physlab":
        args += ["--protocol", config.protocol]
    if not config.retry_failed:
        args.append("--no-retry-failed")
    return args


def per_worker(config, workers: int):
    """The share of one of ``workers`` processes: --concurrency, --max-inflight and the sandbox
    pool are totals for the machine, so each process gets its part of them."""
    if workers <= 1:
        return config
    import math
    import os

    update = {"concurrency": math.ceil(config.concurrency / workers)}
    if config.max_inflight is not None:
        update["max_inflight"] = math.ceil(config.max_inflight / workers)
    update["sandbox_workers"] = math.ceil((config.sandbox_workers or os.cpu_count() or 2) / workers)
    return config.model_copy(update=update)


class _Helpers(list):
    """The extra worker processes of one `bench run`, and the pids of those that said they are
    ready (prepared and waiting at the start gate)."""

    def __init__(self, procs: list) -> None:
        super().__init__(procs)
        self.ready: set[int] = set()


def _spawn_workers(config, n: int) -> _Helpers:
    """Extra worker processes running the same sweep; the database's claim protocol splits the
    cells between them (the same path as workers on other machines). They get ready, say 'ready' and
    wait for the word to start, so no process claims every cell while the others still import.
    Each runs in its own process group: a terminal's Ctrl-C reaches the parent only, which stops
    them as fits the state they are in (see _interrupt)."""
    import subprocess
    import sys

    return _Helpers([subprocess.Popen([sys.executable, "-m", "physlab", "bench", "run", *worker_argv(config),
                                       "--wait-for-start"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, process_group=0)
                     for _ in range(n)])


READY = "physlab-worker-ready"
START_TIMEOUT_S = 300.0


def _start_gate(helpers: _Helpers, wait_for_start: bool):
    """What a `bench run` process does once it is ready and before its first cell: start together
    with the other workers of this machine (so no process claims every cell while the others still
    import)."""
    if helpers:
        return _release_helpers(helpers)
    return _wait_for_start if wait_for_start else None


def _release_helpers(helpers: _Helpers):
    """The parent's start gate: once it is ready itself, wait until every helper is ready (or has
    died, or START_TIMEOUT_S passed), then tell them all to start."""

    def wait_ready() -> None:
        import threading

        def one(h) -> None:
            for line in h.stdout:  # EOF: the helper died; its cells stay pending for the others
                if line.strip() == READY:
                    helpers.ready.add(h.pid)
                    return

        threads = [threading.Thread(target=one, args=(h,), daemon=True) for h in helpers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(START_TIMEOUT_S)
        for h in helpers:
            try:
                h.stdin.write("go\n")
                h.stdin.flush()
            except OSError:
                pass

    async def gate() -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, wait_ready)

    return gate


async def _wait_for_start() -> None:
    """A helper's start gate: report ready, then wait for the parent's line (or its exit)."""
    import asyncio
    import sys

    print(READY, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def _interrupt(helpers: _Helpers) -> None:
    """Stop the helpers of a sweep that was stopped or failed. One that said it is ready may hold
    cells: SIGINT, and it gives them back. One still starting holds none (cells are claimed after
    the start gate) and may be inside Python's own start-up, where a SIGINT prints the traceback
    of the import under way: it is terminated."""
    import signal

    for h in helpers:
        if h.poll() is None:
            try:
                if h.pid in helpers.ready:
                    h.send_signal(signal.SIGINT)
                else:
                    h.terminate()
            except OSError:
                pass


def _close_quietly(stream) -> None:
    try:
        if stream is not None:
            stream.close()
    except OSError:
        pass


def _suite_meant(suite: str, *, quiet: bool) -> str:
    """The suite to run (``examples/``, as tab completion writes it, is the suite ``examples``
    unless a folder of problem files is meant: said on stderr), checked to hold problems before the
    results database is made: a suite that loads no problem is one line, not an empty database."""
    from physlab.problems import load_suite
    from physlab.problems.suites import suite_meant

    meant, note = suite_meant(suite)
    if note and not quiet:  # (a helper worker leaves the saying to its parent)
        typer.echo(note, err=True)
    if not load_suite(meant):
        raise UserError("no problem files here (.yaml, .json, .jsonl, .md); a built-in or imported suite is named "
                        "without a path (physlab problems list)", path=meant)
    return meant


def _check_names(config, *, say: bool = True) -> None:
    """Unknown strategies, and parameters one of them does not take, fail fast (exit 2), not as
    N failed cells; a --param that departs from the --protocol is said, once per strategy."""
    from physlab.strategies import registry

    for strategy in config.strategies:
        registry.build(strategy, config.params, config.protocol)
        for line in registry.protocol_notes(strategy, config.params, config.protocol) if say else ():
            typer.echo(f"note: {strategy}: {line}", err=True)


def _check_models(config) -> None:
    """Model names that cannot work (a mistyped scripted scenario, a replay file that is not
    there, an --api-base that is no URL or goes with an offline model) fail before the database is
    touched, so a typo leaves no never-runnable cells behind to show up in every later report. A
    missing API key is found when the sweep builds its model clients, before any cell is claimed
    (the cells stay pending for the re-run with the key)."""
    from physlab.llm.models import check_model_name

    for spec in config.models:
        check_model_name(spec, config.api_base)
    for spec in config.role_models.values():
        check_model_name(spec)


@bench_app.command("report")
def report_cmd(
    db: Path = typer.Option(Path("results.sqlite"), "--db"),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    csv: Path | None = typer.Option(None, "--csv", help="Write the summary table as CSV."),
    plots: Path | None = typer.Option(None, "--plots", help="Directory for the PNG plots."),
    equal_tokens: float | None = typer.Option(None, "--equal-tokens", min=1,
                                                 help="T of the 'anytime accuracy at T' column (what runs held "
                                                      "with at most T tokens; equal budgets: bench run "
                                                      "--budget-tokens)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Accuracy with intervals over problems, pass@k, paired comparisons, the problem x strategy matrix,
    accuracy against a token/cost cap, tokens/cost/wall, role shares (docs/sweeps.md: how to read them)."""
    from physlab.bench import plots as plots_mod
    from physlab.bench.judgement import judgement_table
    from physlab.bench.report import build_report, write_csv
    from physlab.bench.report_render import print_report, write_html
    from physlab.bench.store import ResultsStore

    csv, html, plots = output_file(csv, "--csv"), output_file(html, "--html"), output_dir(plots, "--plots")
    store = ResultsStore(db, create=False)
    try:
        report = build_report(store, equal_tokens=equal_tokens)
        judged = judgement_table(store)
    finally:
        store.close()
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_report(report)
        _print_judgement(*judged)
    if csv:
        writing(csv, "--csv", lambda: write_csv(report, csv))
        typer.echo(f"wrote {csv}", err=as_json)
    if plots:
        made: dict = {}
        writing(plots, "--plots", lambda: made.update(plots_mod.write_all(report, plots)))
        typer.echo(f"wrote {len(made)} plots to {plots}", err=as_json)
    if html:
        writing(html, "--html", lambda: write_html(report, html, plots_dir=plots))
        typer.echo(f"wrote {html}", err=as_json)


def _print_judgement(title: str, header: list[str], rows: list[list[str]]) -> None:
    """The lab's judgement per group (does review bite with this model?), when lab cells ran."""
    if not rows:
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(row[0].replace("|", " × "), *row[1:])
    Console().print(table)


@bench_app.command("grade")
def grade_cmd(
    answers: Path = typer.Option(..., "--answers", help="YAML/JSON: problem id -> reference."),
    db: Path = typer.Option(Path("results.sqlite"), "--db"),
    regrade: bool = typer.Option(False, "--regrade", help="Grade cells that already have a verdict too."),
    judge: str | None = typer.Option(None, "--judge", help="provider:model grading answers whose reference is "
                                                              "prose (else ungraded); reported apart."),
    api_base: str | None = typer.Option(None, "--api-base", help="The judge's server."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="The judge's API key variable."),
) -> None:
    """Grade recorded answers now that references are known."""
    import asyncio

    from physlab.bench.answers import grade_db
    from physlab.bench.store import ResultsStore

    store = ResultsStore(db, create=False)
    try:
        counts = asyncio.run(grade_db(store, answers, regrade=regrade, judge=judge, api_base=api_base,
                                      api_key_env=api_key_env, on_unknown=lambda ids: typer.echo(
            f"warning: {len(ids)} answer id(s) match no problem in {db}: {', '.join(ids[:5])}"
            + (", ..." if len(ids) > 5 else ""), err=True)))
    finally:
        store.close()
    total = sum(counts.values())
    typer.echo(f"graded {total} cells: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


@bench_app.command("export-inspect")
def export_inspect_cmd(
    out: Path = typer.Option(..., "--out", help="Directory for the logs (then: inspect view --log-dir DIR)."),
    db: Path = typer.Option(Path("results.sqlite"), "--db"),
    run: list[Path] | None = typer.Option(None, "--run", help="Export this run directory instead (repeatable)."),
    strategy: str | None = typer.Option(None, "--strategy"),
    model: str | None = typer.Option(None, "--model"),
    with_reference: bool = typer.Option(False, "--with-reference",
                                        help="Put each problem's reference answer (looked up by suite and id) in its "
                                             "sample's target."),
) -> None:
    """Write Inspect AI eval logs: one per strategy/model/config, one sample per cell (needs physlab[inspect])."""
    from physlab.bench.inspect_export import export_command

    files, samples = export_command(out, db=db, runs=run, strategy=strategy, model=model, with_reference=with_reference)
    typer.echo(f"wrote {len(files)} Inspect logs ({samples} samples) to {out}; view them with: inspect view --log-dir {out}")


def register(app: typer.Typer) -> None:
    from physlab.cli import critpt

    critpt.register(bench_app)
    app.add_typer(bench_app, name="bench")
