"""`physlab solve`: run one strategy on one problem (see DESIGN.md for the contract)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from physlab.errors import UserError

STRATEGY_HELP = ("lab|oneshot|two-step|rsa|manager|tpbench-vote|tpbench-bon|tpbench-weak|tpbench-sympy|"
                 "multi-round|minions|scalar")


def _parse_value(text: str) -> Any:
    """`--param k=v` values: YAML scalars (numbers, booleans, lists) or plain strings."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def parse_params(items: list[str], config: Path | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if config is not None:
        params.update(_read_config(config))
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"'{item}' should be key=value", field="--param")
        params[key.strip()] = _parse_value(value)
    return params


def _read_config(config: Path) -> dict[str, Any]:
    """``--config params.yaml``: a mapping of parameter names to values (empty file: none)."""
    import yaml

    try:
        raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read ({exc.strerror})", path=config, field="--config") from None
    except UnicodeDecodeError:
        raise UserError("not a UTF-8 text file", path=config, field="--config") from None
    except yaml.YAMLError as exc:
        raise UserError(f"not valid YAML ({str(exc).splitlines()[0]})", path=config) from None
    if raw is not None and not isinstance(raw, dict):
        raise UserError("expected a mapping of strategy parameters", path=config)
    bad = [k for k in (raw or {}) if not isinstance(k, str) or not k.strip()]
    if bad:
        raise UserError(f"parameter names must be words, got {bad[0]!r}", path=config)
    return dict(raw or {})


def load_problem(spec: str):
    from physlab.problems import resolve_problem

    return resolve_problem(spec)


def register(app: typer.Typer) -> None:
    @app.command("solve")
    def solve(
        ctx: typer.Context,
        problem: str | None = typer.Argument(
            None, help="Problem file, FILE#ID, SUITE/ID, or a Markdown question (with --resume: the run's own "
            "unless given)."),
        strategy: str | None = typer.Option(None, "--strategy", "-s", help=STRATEGY_HELP + " (default: lab)"),
        model: str | None = typer.Option(None, "--model", "-m", envvar="PHYSLAB_MODEL",
                                            help="provider:model, scripted:NAME or replay:PATH."),
        api_base: str | None = typer.Option(
            None, "--api-base", help="The models' server: any OpenAI-compatible server for openai: models (vLLM, "
            "Ollama, a LiteLLM proxy), a Messages API for anthropic:, a Gemini API for google-gla:."),
        role_model: list[str] = typer.Option(
            [], "--role-model", help="ROLE=provider:model: this role's model instead of --model (repeat; e.g. "
            "reviewer=anthropic:claude-sonnet-4-5). The roles: `physlab strategies show NAME`."),
        output_mode: str | None = typer.Option(
            None, "--output-mode", help="How structured answers are asked for: tool (tool calls, the default), "
            "native (a JSON-schema response format), constrained (the server holds the reply to the schema: "
            "llama.cpp's json_object with a schema; small local models), prompted (JSON in the text; for servers "
            "without tool calling) or auto (tool, then prompted if the server refuses or ignores tools). "
            "`physlab models check` says which works."),
        api_key_env: str | None = typer.Option(None, "--api-key-env",
                                                  help="Environment variable holding the API key."),
        workspace: Path | None = typer.Option(None, "--workspace", help="Run directory."),
        replace: bool = typer.Option(False, "--replace",
                                     help="Delete the run already in --workspace and start over."),
        resume: str | None = typer.Option(
            None, "--resume", help="Continue this run directory (DIR@N: from iteration N) with the options it "
            "was made with; a flag given changes that option (and says so)."),
        max_iterations: int | None = typer.Option(None, "--max-iterations", min=1),
        max_calls: int | None = typer.Option(None, "--max-calls", min=1),
        max_tokens: int | None = typer.Option(None, "--max-tokens", min=1),
        max_cost: float | None = typer.Option(None, "--max-cost", min=0.0),
        max_wall: float | None = typer.Option(None, "--max-wall", min=0.0, help="Seconds."),
        max_in_flight: int | None = typer.Option(None, "--max-in-flight", min=1,
                                                    help="Concurrent model requests of this run."),
        seed: int | None = typer.Option(None, "--seed", help="(default: 0)"),
        tools: str | None = typer.Option(
            None, "--tools", help="The lab's tools beyond Python: any of cas,literature,corpus=DIR,web, or none "
            "(default: cas, plus literature for a Markdown question; docs/tools.md)."),
        judge: str | None = typer.Option(
            None, "--judge", help="provider:model grading the answer when the reference is prose (no rule reads "
            "it; without a judge the answer is ungraded). It sees the problem, the reference and the final answer "
            "only; its calls go to judge_calls.jsonl, counted apart."),
        param: list[str] = typer.Option([], "--param", "-p", help="Strategy parameter key=value (repeat)."),
        config: Path | None = typer.Option(None, "--config", help="YAML file of strategy parameters."),
        protocol: str | None = typer.Option(
            None, "--protocol", help="physlab (PhysLab's defaults, the default) or paper: the strategy at its "
            "published setting (`physlab strategies show NAME` lists both); a --param given still wins."),
        models_config: Path | None = typer.Option(None, "--models-config", envvar="PHYSLAB_MODELS_CONFIG",
                                                     help="Model registry YAML (defaults, prices)."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the workspace path."),
        as_json: bool = typer.Option(False, "--json", help="Print the run's record (metrics.json, with the answer "
                                     "as written and its workspace)."),
        console_mode: str | None = typer.Option(
            None, "--console", help="Progress display: live (a live panel; the default on a terminal), lines "
            "(one line per step; the default otherwise), json (one event per line on stderr) or quiet."),
        yes: bool = typer.Option(
            False, "--yes", help="With --resume: go on with the server, key variable, registry and tools that a "
            "record not written on this machine (or edited since) chooses (docs/dashboard.md, 'Resume')."),
    ) -> None:
        """Solve PROBLEM with one strategy; writes a run workspace (exit 0 answer, 1 none, 2 bad input)."""
        import asyncio

        from physlab.run.entry import Given, prepare
        from physlab.run.files import check_run_dir
        from physlab.run.record import recorded_options
        from physlab.run.runner import Shared, run
        from physlab.strategies import registry

        if max_cost == 0 or max_wall == 0:
            raise UserError("must be > 0", field="--max-cost" if max_cost == 0 else "--max-wall")
        if replace and (resume is not None or workspace is None):
            raise UserError("--replace goes with --workspace DIR (and not with --resume)", field="--replace")
        resume_dir, resume_iteration = split_resume(resume)
        if resume_dir is not None:  # a typo is said before what a resume would ask for
            check_run_dir(resume_dir)

        def flag(name: str, value: Any) -> Any:
            """A value the command line gave (an environment variable's is no flag at a resume)."""
            source = ctx.get_parameter_source(name)
            return value if resume_dir is None or getattr(source, "name", "") == "COMMANDLINE" else None

        params = parse_params(param, config)
        if max_iterations is not None:
            params["max_iterations"] = max_iterations
        given = Given(strategy=strategy, model=flag("model", model), api_base=api_base, api_key_env=api_key_env,
                      output_mode=output_mode, role_models=role_model, models_config=flag("models_config", models_config),
                      max_in_flight=max_in_flight, seed=seed, params=params, console=console_mode,
                      protocol=protocol, tools=tools, judge=judge,
                      budget={k: v for k, v in (("max_calls", max_calls), ("max_tokens", max_tokens),
                                                ("max_cost_usd", max_cost), ("max_wall_s", max_wall)) if v is not None})
        if resume_dir is None:
            if problem is None:
                raise UserError("no problem given: physlab solve PROBLEM (a file, FILE#ID or SUITE/ID)")
            if model is None:
                raise UserError("no model given: pass --model provider:model (or scripted:NAME, replay:PATH)",
                                field="--model")
        session = {"resume_iteration": resume_iteration} if resume_iteration is not None else None
        options, scaffold = prepare(given, resume_dir, registry, yes=yes, session=session)
        spec = problem or (recorded_options(resume_dir)[1] if resume_dir is not None else None)
        if spec is None:  # (a new run without one was refused above)
            raise UserError("this run recorded no problem to resume on: give PROBLEM", path=resume_dir,
                            field="--resume")
        prob = load_problem(spec)
        if not (quiet or as_json):
            for line in registry.protocol_notes(options.strategy, options.params, options.protocol):
                typer.echo(f"note: {line}", err=True)
        events = _progress_sink(console_mode, type(scaffold), quiet=quiet or as_json)
        started = _Started(events)
        try:
            record = asyncio.run(run(prob, scaffold, options, Shared(events=started),
                                     workspace=resume_dir if resume_dir is not None else workspace,
                                     resume=resume_dir is not None, replace=replace))
        except KeyboardInterrupt:
            # typer would exit 130 without a word; say where the run is and how it goes on, below
            # the live panel's last frame (which redraws in place: ended first, it cannot cover the line)
            if events is not None:
                events.close()
            typer.echo(_interrupted(started.workspace, scaffold.resumable), err=True)
            raise typer.Exit(130) from None
        finally:
            if events is not None:
                events.close()  # a live panel ends (and gives the cursor back) however the run ended
        ws_path = Path(record.workspace or ".")
        if as_json:  # the record as metrics.json holds it, with the answer as written and where
            import json

            from physlab.run.record import read_record, record_json

            typer.echo(json.dumps(record_json(read_record(ws_path, answer=True) or record), indent=2,
                                  ensure_ascii=False))
        elif quiet:
            typer.echo(str(ws_path))
        else:
            _print_summary(record, ws_path)
        raise typer.Exit(0 if record.answered else 1)


class _Started:
    """The run's progress sink, passed through, noting the run directory the runner chose."""

    def __init__(self, sink: Any) -> None:
        from physlab.run import events

        self.sink, self.events = sink, events
        self.workspace: str | None = None

    def __call__(self, event: Any, /, **data: Any) -> None:
        e = self.events.as_event(event, data)
        if isinstance(e, self.events.RunStarted):
            self.workspace = e.workspace
        if self.sink is not None:
            self.sink(e)


def _interrupted(workspace: str | None, resumable: bool) -> str:
    """What Ctrl-C on `solve` says: where the run is and the command that goes on with it."""
    import shlex

    if workspace is None:
        return "interrupted before the run started: nothing was recorded"
    again = f"physlab solve --resume {shlex.quote(workspace)}"
    if resumable:
        return f"interrupted: the run is kept in {workspace}; continue it with: {again}"
    return (f"interrupted: the run's calls so far are kept in {workspace}; run it again there (it starts over, "
            f"its spend so far counted) with: {again}")


def split_resume(resume: str | None) -> tuple[Path | None, int | None]:
    """``DIR`` or ``DIR@N`` (continue from the end of iteration N; the lab rewinds to it)."""
    if resume is None:
        return None, None
    head, sep, tail = resume.rpartition("@")
    if not sep or Path(resume).exists():
        return Path(resume), None
    if tail.isdigit():
        return Path(head), int(tail)
    if Path(head).is_dir():
        raise UserError(f"DIR@N needs an iteration number N >= 0, got '{tail}'", path=resume, field="--resume")
    return Path(resume), None


def _progress_sink(mode: str | None, strategy: Any, *, quiet: bool):
    """The run's progress display: a live panel on a terminal (the strategy's own), lines otherwise."""
    import sys

    from physlab.run.console import make_console

    if mode is None:
        if quiet:
            return None
        mode = "live" if sys.stderr.isatty() else "lines"
    return make_console(mode, strategy.live_view() if mode == "live" else None)


def _print_summary(record: Any, ws: Path) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    u = record.usage
    verdict = record.verdict.verdict if record.verdict else "not graded"
    invalid = record.verdict is not None and record.verdict.verdict == "invalid"
    shown = f"[bold red]{verdict}[/]" if invalid else f"[bold]{verdict}[/]"
    console.print(f"status: [bold]{record.status}[/] ({escape(record.stop_reason)})   verdict: {shown}")
    if record.verdict:
        console.print(f"  {escape(record.verdict.reason)}")
    console.print(f"calls {u.calls}, tokens {u.input_tokens:,} in / {u.output_tokens:,} out, "
                  f"${u.cost_usd:.4f}, {record.wall_s:.1f}s")
    console.print(f"workspace: {escape(str(ws))}", soft_wrap=True)
    if record.status not in ("complete", "partially_complete") and record.error:
        console.print(f"[red]{escape(record.error)}[/]", soft_wrap=True)  # one line: a server's JSON stays whole
    _print_answer(console, record, ws)
    if invalid and record.answered:
        # exit 0 all the same (DESIGN.md: 0 = an answer was written): said last, where it is read
        console.print(f"[bold red]not a valid answer to this problem:[/] {escape(record.verdict.reason)} "
                      "(exit 0 says an answer was written, not that it answers the problem)", soft_wrap=True)


def _print_answer(console: Any, record: Any, ws: Path) -> None:
    """The final answer itself: what the run filled into the template (the lines of its answer
    function), else the final answer it wrote (its boxed answer or 'Final answer' line), and where
    the whole answer is."""
    from physlab.grading.extract import extract_final_answer
    from physlab.web.render import UNPARSED_NOTE, filled_answer

    if not record.answered:
        draft = next((ws / n for n in ("DRAFT_ANSWER.md", "draft_answer.py") if (ws / n).is_file()), None)
        console.print("no final answer" + (f" (what it had is in {draft})" if draft else ""), markup=False,
                      soft_wrap=True)
        return
    filled = filled_answer(record.answer_code)
    shown = filled if filled and filled != UNPARSED_NOTE else extract_final_answer(record.answer_text)
    if shown:
        console.print("answer:", style="bold")
        console.print("\n".join(f"  {line}" for line in shown.strip().splitlines()), markup=False, highlight=False,
                      soft_wrap=True)  # one line each: a formula copied from the terminal stays whole
    console.print(f"the whole answer: {ws / 'ANSWER.md'}", markup=False, highlight=False, soft_wrap=True)  # a path whole
