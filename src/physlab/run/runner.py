"""Run one strategy on one problem: the core of `physlab solve`, of the Python API and of every
sweep cell (``run(problem, strategy, options, shared) -> RunRecord``).

``run`` takes the run directory's lock, records the session's start (run.json: its options, its
problem, its servers), builds the RunEnvironment (public problem, models recording into calls.jsonl,
budget, in-flight limiters, sandbox, grader bound to the full problem), runs the strategy, writes
PROBLEM.md / ANSWER.md / answer.py, grades, and writes the record (metrics.json). A budget, a
failing model or a strategy bug ends the run with a status in its record, never with a traceback (a
bug's traceback goes to the workspace's error.log). Bad input raises UserError before anything of
the run changes.
"""

from __future__ import annotations

import asyncio
import errno
import json
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import pydantic_core
from pydantic_ai.concurrency import AbstractConcurrencyLimiter, ConcurrencyLimiter
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import Model

from physlab.errors import UserError
from physlab.grading.verdict import Verdict
from physlab.llm.defaults import ModelRegistry, RetryPolicy
from physlab.llm.errors import ModelFailure, ReplayError, budget_error, find_error
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.prompt import problem_text
from physlab.llm.usage import Budget, CallRecord
from physlab.problems.model import Problem
from physlab.run.attempt import Attempt, AttemptStatus
from physlab.run.checkpoints import grade_checkpoints
from physlab.run.environment import RunEnvironment
from physlab.run.events import CallDone, EventSink, Notice, RunFinished, RunStarted, ignore
from physlab.run.files import (
    CALLS,
    JUDGE_CALLS,
    OPTIONS,
    PROBLEM,
    STATE,
    STATE_OF,
    default_workspace,
    is_run_dir,
    read_bytes,
    write_atomic,
)
from physlab.run.lock import LOCK, RunLock, lock_run
from physlab.run.options import RunOptions, differences
from physlab.run.record import (
    FailedResume,
    RunRecord,
    RunStart,
    digest,
    read_record,
    read_start,
    write_record,
    write_start,
)
from physlab.run.resume import check_servers, registry_for, resume_lines, servers_for
from physlab.run.status import read_run
from physlab.tools.choice import ToolChoice

if TYPE_CHECKING:
    from physlab.grading import BoundGrader, Equivalence, Grader

# A strategy that ignores the wall budget is cancelled this long after it (the budget check before
# each request normally ends it first; the slack lets a forced formatter finish).
HARD_WALL_FACTOR = 1.5
HARD_WALL_SLACK_S = 30.0


def write_problem_md(problem: Problem, path: Path) -> None:
    """PROBLEM.md: the public problem only (never the reference or the solution)."""
    pub = problem.public()
    lines = [f"# {pub.id}", ""]
    if pub.source or pub.suite:
        lines += [f"_Source: {pub.source or pub.suite}_", ""]
    lines.append(problem_text(pub))
    if pub.images:
        lines += ["## Figures", ""] + [f"- {p}" for p in pub.images] + [""]
    path.write_text("\n".join(lines), encoding="utf-8")


def _graders(problem: Problem, grader: Grader | None, sandbox: Any, public: Problem | None = None
             ) -> tuple[BoundGrader | None, Equivalence]:
    """(the grader bound to the full problem, None when it has no reference; the reference-free
    Equivalence), both on ``grader`` (a sweep shares one) or a new Grader on this run's sandbox."""
    from physlab.grading import Equivalence, Grader, bind  # SymPy and friends: only once a run starts

    g = grader or Grader(sandbox)
    return (bind(problem, g) if problem.gradable else None), Equivalence(public or problem.public(), g)


def _reference_for(problem: Problem, params: Any) -> str | None:
    """The reference solution, for a strategy whose parameters ask to see it (the one exception
    to "no prompt holds the answer key": SCALAR's Judge and, in its paper setting, its Critic);
    None otherwise, and for a problem that has none (the strategy says whether it can do without)."""
    if not params.sees_reference:
        return None
    return problem.solution or problem.reference or None


def _resolve_workspace(problem: Problem, strategy: str, workspace: Path | str | None, resume: bool | Path | str,
                       replace: bool = False, resumable: bool = False) -> tuple[Path, bool, RunLock]:
    """(run directory, resuming, its lock): the lock is taken before anything in the directory
    changes, so a second process on the same run is refused before it spends anything."""
    if resume is True or isinstance(resume, (str, Path)):
        if resume is True and workspace is None:
            raise UserError("resume needs the run directory", field="--resume")
        ws = Path(resume) if not isinstance(resume, bool) else Path(workspace or "")
        if not ws.is_dir():
            raise UserError("no such run directory to resume", path=ws, field="--resume")
        _check_resumable(ws, problem, strategy, resumable)
        return ws, True, lock_run(ws)
    ws = Path(workspace) if workspace is not None else default_workspace(problem.id, strategy)
    try:
        ws.mkdir(parents=True)
    except FileExistsError:
        if not ws.is_dir():
            raise UserError("workspace exists and is not a directory", path=ws, field="--workspace") from None
        if any(p.name != LOCK for p in ws.iterdir()):
            if not replace:
                raise UserError("workspace already exists and is not empty (use --resume to continue it, "
                                "or --replace to start it over)", path=ws, field="--workspace") from None
            if not is_run_dir(ws):
                raise UserError("--replace only replaces a PhysLab run directory (no PROBLEM.md, calls.jsonl, "
                                "metrics.json or state.json here); nothing was deleted", path=ws,
                                field="--workspace") from None
            lock = lock_run(ws)
            for p in ws.iterdir():  # everything but the lock we hold
                if p.name != LOCK:
                    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            return ws, False, lock
    return ws, False, lock_run(ws)


_MACHINE_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)  # the disk, not the strategy

def recorded_run(ws: Path) -> tuple[str | None, str | None, bool]:
    """(strategy, problem id, has a final answer) of the run in ``ws``, as far as its files say."""
    files = read_run(ws)
    record, start, state = files.record, files.start, files.state or {}
    strategy = (record.strategy if record else None) or (start.options.strategy if start else None) or (
        STATE_OF if files.state is not None else None)
    problem_id = (record.problem_id if record else None) or (start.problem_id if start else None) or state.get(
        "problem_id")
    if problem_id is None and (ws / PROBLEM).is_file():
        first = (ws / PROBLEM).read_text(encoding="utf-8", errors="replace").partition("\n")[0]
        problem_id = first[2:].strip() if first.startswith("# ") else None
    return strategy, problem_id, bool(record and record.has_answer)


def _check_resumable(ws: Path, problem: Problem, strategy: str, resumable: bool) -> None:
    """``--resume`` continues the same strategy on the same problem, and never throws away an
    answer a strategy that cannot continue a run has already written."""
    was_strategy, was_problem, has_answer = recorded_run(ws)
    if was_strategy and was_strategy != strategy:
        raise UserError(f"this run was made with --strategy {was_strategy}, not {strategy}; resume it with "
                        f"--strategy {was_strategy} or start a new --workspace", path=ws, field="--resume")
    if was_problem and was_problem != problem.id:
        raise UserError(f"this run is on problem '{was_problem}', not '{problem.id}'; resume it with the same "
                        "problem or start a new --workspace", path=ws, field="--resume")
    if has_answer and not resumable:
        raise UserError(f"this {strategy} run already has its answer and {strategy} cannot continue a run; "
                        "start a new --workspace", path=ws, field="--resume")


def _check_replay(model: str, problem: Problem, strategy: str) -> None:
    """``replay:RUN`` re-serves the responses one strategy got on one problem: another strategy (or,
    unless PHYSLAB_REPLAY_CHECK=0, another problem) would only diverge at its first request."""
    if not model.startswith("replay:"):
        return
    src = Path(model[len("replay:"):]).expanduser()
    run_dir = src if src.is_dir() else src.parent
    was_strategy, was_problem, _ = recorded_run(run_dir)
    if was_strategy and was_strategy != strategy:
        raise UserError(f"the replayed run was made with --strategy {was_strategy}, not {strategy}; replay it "
                        f"with --strategy {was_strategy}", path=run_dir, field="--model")
    from physlab.llm.replay import replay_checks_requests

    if replay_checks_requests() and was_problem and was_problem != problem.id:
        raise UserError(f"the replayed run is on problem '{was_problem}', not '{problem.id}' (set "
                        "PHYSLAB_REPLAY_CHECK=0 to serve its responses anyway)", path=run_dir, field="--model")


@dataclass
class Shared:
    """What the caller lends a run: what it shares with other runs -- a sweep's in-flight limiter,
    sandbox, grader (bound here to each run's problem) and provider models (by spec, open until the
    caller closes them), the model registry it read once -- and its hooks: ``events`` (progress: the typed
    events of :mod:`physlab.run.events`) and ``on_call`` (each calls.jsonl record as it is written). ``retry``
    overrides every model's retry policy (tests)."""

    limiter: AbstractConcurrencyLimiter | None = None
    sandbox: Any = None
    grader: Grader | None = None
    providers: dict[str, Model] = field(default_factory=dict)
    registry: ModelRegistry | None = None
    retry: RetryPolicy | None = None
    events: EventSink | None = None
    on_call: Callable[[CallRecord], None] | None = None


class Scaffold(Protocol):
    """What the runner needs of a strategy (:class:`physlab.strategies.base.Strategy` is one)."""

    resumable: ClassVar[bool]
    params: Any  # its parameters; ``params.sees_reference``: hand it the reference solution

    async def run(self, env: RunEnvironment) -> Attempt: ...


def problem_spec(problem: Problem) -> str | None:
    """Where ``problem`` was loaded from, as `physlab solve` takes it (``FILE#ID``), so a resume
    (the dashboard's too) can load it again; None for a problem built in code."""
    if problem.path is None:
        return None
    return f"{Path(problem.path).resolve()}#{problem.id}"


def default_tools(problem: Problem) -> ToolChoice:
    """The tools of a run that chose none: the literature only for a physicist's own Markdown question."""
    return ToolChoice.default(open_question=problem.extra.get("format") == "markdown")


async def run(problem: Problem, strategy: Scaffold, options: RunOptions, shared: Shared | None = None, *,
              workspace: Path | str | None = None, resume: bool = False, replace: bool = False) -> RunRecord:
    """Run ``strategy`` (built with ``options.params``; named ``options.strategy``) on ``problem``
    as ``options`` say, in ``workspace`` (default ``runs/<time>-<problem>-<strategy>``); returns the
    run's record, also written to metrics.json, with the answer as written.

    ``resume``: continue the run in ``workspace`` (``options`` are then the recorded ones with what
    the caller changed: :func:`physlab.run.resume.resume_options`); a model that would now go to
    another server, or without the key it carried, is refused before anything changes. ``replace``
    removes what an earlier, unfinished try left in ``workspace`` (a sweep restarting a cell)."""
    shared = shared or Shared()
    emit: EventSink = shared.events or ignore
    name = options.strategy
    if options.tools is None:  # the problem's default, recorded as chosen (a resume keeps it)
        options = options.model_copy(update={"tools": default_tools(problem)})
    reference = _reference_for(problem, strategy.params)
    _check_replay(options.model, problem, name)
    registry = shared.registry or registry_for(options)
    ws, resuming, run_lock = _resolve_workspace(problem, name, workspace, resume, replace, strategy.resumable)
    calls_path = ws / CALLS
    meter: RunMeter | None = None
    models: RunModels | None = None
    before: tuple[RunRecord | None, bytes | None] = (None, None)
    recorded: RunStart | None = None

    def on_record(rec: CallRecord) -> None:
        if shared.on_call is not None:
            shared.on_call(rec)
        try:  # the run's totals after each call: a live view's last frame agrees with the summary
            assert meter is not None
            emit(CallDone(role=rec.role, failed=rec.response is None, **_totals(meter)))
        except Exception:  # noqa: BLE001 - a broken progress display must not fail a model call
            pass

    try:
        if resuming:  # what the run was, kept: a refused or failed session leaves it as it was
            recorded = read_start(ws)
            check_servers(ws, options, registry, recorded)
            before = (read_record(ws), read_bytes(ws / OPTIONS))
        previous = read_calls(calls_path) if resuming and calls_path.is_file() else None
        meter = RunMeter(options.budget, calls_path, previous=previous, on_record=on_record)
        own_cap = [ConcurrencyLimiter(options.max_in_flight, name="run")] if options.max_in_flight else []
        limiters = own_cap + ([shared.limiter] if shared.limiter is not None else [])
        models = RunModels(options.model, meter=meter, limiters=limiters, api_base=options.api_base,
                           api_key_env=options.api_key_env, registry=registry, retry=shared.retry,
                           providers=shared.providers, role_models=options.role_models,
                           output_mode=options.output_mode, events=shared.events)
    except BaseException:
        if meter is not None:
            meter.close()
        if not resuming:
            _discard_if_untouched(ws)  # bad input: leave no half-made workspace behind
        run_lock.release()
        raise
    t0 = time.monotonic()
    try:
        start = RunStart(started_at=datetime.now(UTC).isoformat(), problem_id=problem.id,
                         problem_spec=problem_spec(problem), options=options, servers=servers_for(options, registry))
        await models.open()
        write_start(ws, start)
        sandbox = shared.sandbox
        if sandbox is None:
            from physlab.sandbox import default_sandbox

            sandbox = default_sandbox()
        public = problem.public()
        write_problem_md(public, ws / PROBLEM)
        bound, equivalence = _graders(problem, shared.grader, sandbox, public)
        env = RunEnvironment(problem=public, workspace=ws, models=models, usage=meter, budget=options.budget,
                             sandbox=sandbox, grader=bound, equivalence=equivalence, seed=options.seed,
                             resume=resuming, events=emit, reference_solution=reference,
                             tools=options.tools or default_tools(problem))
        emit(RunStarted(strategy=name, model=options.model, problem_id=problem.id, workspace=str(ws)))
        if resuming:  # before the first request: where it goes, with which key variable, and the tools
            for line in resume_lines(options, registry):
                emit(Notice(text=f"resume: {line}"))
        if resuming and recorded is not None:  # what a flag given now changes of the run's options
            for line in differences(recorded.options, options):
                emit(Notice(text=f"resume: {line}"))
        attempt = await _run_strategy(strategy, env, name, options.model, problem, options.budget, ws, models)
        attempt.wall_s = time.monotonic() - t0
        attempt.usage_by_role = meter.by_role()
        attempt.strategy, attempt.model, attempt.problem_id = name, options.model, problem.id
        if attempt.status in ("complete", "partially_complete") and not attempt.has_answer:
            attempt.status = "no_answer"
        attempt.details = {**attempt.details, "workspace": str(ws)}
        if reference is not None:  # saw the answer key: never ranked beside solvers
            attempt.reference_conditioned = True
        attempt.checkpoints = attempt.checkpoints or env.checkpoints  # kept when a budget ended the run
        _write_answer(attempt, problem, ws)
        attempt.verdict = await _grade(attempt, problem, bound)
        if attempt.verdict is not None and attempt.verdict.verdict == "ungraded" and options.judge:
            attempt.verdict = await _judge(attempt, problem, options, registry, ws)
        if bound is not None:
            await grade_checkpoints(attempt.checkpoints, bound)
        record = _record(attempt, meter, models, start, ws, datetime.now(UTC), strategy.params)
        record.answer_latex = await _answer_latex(attempt, equivalence)
        write_record(ws, _kept_answer(record, before[0]) if resuming else record)
        _commit_outcome(attempt, ws)
        emit(RunFinished(status=attempt.status, stop_reason=attempt.stop_reason,
                         verdict=attempt.verdict.verdict if attempt.verdict else None, wall_s=attempt.wall_s,
                         **_totals(meter)))
        return record
    except UserError:
        meter.close()
        if resuming:  # refused: the run is as it was (its last session's start, not this one's)
            _restore(ws / OPTIONS, before[1])
        else:
            _discard_if_untouched(ws)  # bad input: leave no half-made workspace behind
        raise
    finally:
        meter.close()
        await models.aclose()
        run_lock.release()


def _restore(path: Path, data: bytes | None) -> None:
    if data is None:
        path.unlink(missing_ok=True)
    else:
        write_atomic(path, data)


async def _run_strategy(scaffold: Scaffold, ctx: RunEnvironment, strategy: str, model: str, problem: Problem,
                        budget: Budget, ws: Path, models: RunModels | None = None) -> Attempt:
    def ended(status: AttemptStatus, reason: str, **details: Any) -> Attempt:
        return Attempt(strategy=strategy, model=model, problem_id=problem.id, status=status,
                       stop_reason=reason, details=details)

    hard = budget.max_wall_s * HARD_WALL_FACTOR + HARD_WALL_SLACK_S if budget.max_wall_s else None
    try:
        return await asyncio.wait_for(scaffold.run(ctx), hard)
    except UserError:
        raise
    except TimeoutError:
        return ended("no_answer", "budget:max_wall", error=f"strategy cancelled {hard:.0f}s after start")
    except Exception as exc:
        # pydantic-ai / task groups may wrap ours (ExceptionGroup, __cause__): look inside first
        if (spent := budget_error(exc)) is not None:
            return ended("no_answer", f"budget:{spent.limit}", error=str(spent))
        if (failure := find_error(exc, ModelFailure)) is not None:
            reason = "replay_error" if isinstance(failure, ReplayError) else "model_failure"
            return ended("error", reason, error=str(failure))
        if isinstance(exc, OSError) and exc.errno in _MACHINE_FULL:  # no strategy bug: the run cannot go on
            raise
        # a model that could not give the structured output asked of it: say which role, in which
        # output mode, and what to try (the traceback still goes to error.log)
        explained = models.describe_failure(find_error(exc, UnexpectedModelBehavior) or exc) if models else None
        if explained:
            (ws / "error.log").write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
            return ended("error", "model_failure", error=explained)
        # a strategy bug: recorded in error.log, not shown as a traceback
        (ws / "error.log").write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        return ended("error", f"exception:{type(exc).__name__}", error=str(exc)[:2000])


def _commit_outcome(attempt: Attempt, ws: Path) -> None:
    """A run kept in git (the lab) gets one last commit with what was written after its last
    iteration (the final ANSWER.md and answer.py, metrics.json): its tree ends clean."""
    if not (ws / ".git").is_dir():
        return
    from physlab.run.git import ENDED, RunRepo

    verdict = f", verdict {attempt.verdict.verdict}" if attempt.verdict else ""
    try:
        RunRepo(ws).commit_outcome(f"{ENDED}: {attempt.status}{verdict} ({attempt.stop_reason})")
    except RuntimeError:  # git failed: the files are written all the same; the next commit takes them
        pass


def _totals(meter: RunMeter) -> dict[str, Any]:
    """The run's usage so far, as progress events carry it."""
    t = meter.total()
    return {"calls": t.calls, "tokens": t.total_tokens, "cost_usd": t.cost_usd}


def answered(attempt: Attempt) -> bool:
    """A final answer was produced (exit 0): a finishing status and an answer."""
    return attempt.status in ("complete", "partially_complete") and attempt.has_answer


def _discard_if_untouched(ws: Path) -> None:
    names = {p.name for p in ws.iterdir()}
    calls = ws / CALLS
    if names <= {PROBLEM, CALLS, OPTIONS, LOCK} and (not calls.exists() or calls.stat().st_size == 0):
        shutil.rmtree(ws, ignore_errors=True)


def _write_answer(attempt: Attempt, problem: Problem, ws: Path) -> None:
    """ANSWER.md / answer.py for a final answer; what a failed run left behind goes to
    DRAFT_ANSWER.md / draft_answer.py instead (kept, never graded)."""
    md, py = ("ANSWER.md", "answer.py") if answered(attempt) else ("DRAFT_ANSWER.md", "draft_answer.py")
    if attempt.answer_code:
        if not attempt.answer_code.endswith("\n"):
            attempt.answer_code += "\n"
        (ws / py).write_text(attempt.answer_code, encoding="utf-8")
    if attempt.answer_text:
        (ws / md).write_text(attempt.answer_text.rstrip() + "\n", encoding="utf-8")
    elif attempt.answer_code:
        (ws / md).write_text(f"```python\n{attempt.answer_code}```\n", encoding="utf-8")


async def _grade(attempt: Attempt, problem: Problem, bound: BoundGrader | None) -> Verdict | None:
    if not problem.gradable or attempt.status == "paused":  # a paused run has no answer to grade yet
        return None
    if not answered(attempt):
        return Verdict(verdict="invalid", reason=f"no answer ({attempt.status}: {attempt.stop_reason})")
    candidate = attempt.answer_code or attempt.answer_text or ""
    assert bound is not None  # a gradable problem always has one
    try:
        return await bound.grade_full(candidate)  # the run's record keeps what was compared
    except Exception as exc:  # noqa: BLE001 - the grader must not lose the run's work
        return Verdict(verdict="invalid", reason=f"grader failed: {type(exc).__name__}: {exc}"[:500])


async def _judge(attempt: Attempt, problem: Problem, options: RunOptions, registry: ModelRegistry | None,
                 ws: Path) -> Verdict:
    """The judge model's verdict on an answer no rule reads (a prose reference): its calls go to
    judge_calls.jsonl on a meter of their own, counted apart from the run's (metrics.json keeps them in
    the verdict's ``judge``); a judge that fails leaves the answer ungraded."""
    from physlab.llm.judge import judge_with

    assert attempt.verdict is not None and options.judge is not None
    candidate = attempt.answer_text or attempt.answer_code or ""
    try:
        return await judge_with(problem, candidate, options.judge, api_base=options.api_base,
                                api_key_env=options.api_key_env, registry=registry,
                                calls_path=ws / JUDGE_CALLS, output_mode=options.output_mode)
    except Exception as exc:  # noqa: BLE001 - the run keeps its answer, ungraded
        return attempt.verdict.model_copy(update={"reason": f"{attempt.verdict.reason}; the judge failed: "
                                                            f"{type(exc).__name__}: {exc}"[:300]})


async def _answer_latex(attempt: Attempt, equivalence: Equivalence) -> str | None:
    """The answer's value as LaTeX, for the pages that show it as math: the grader's reading when
    it graded the answer, else the grader's reading of the code alone (no reference needed)."""
    latex = attempt.verdict.details.get("candidate_latex") if attempt.verdict is not None else None
    if isinstance(latex, str) and latex:
        return latex
    if not answered(attempt) or not attempt.answer_code or attempt.verdict is not None:
        return None  # no answer, a written one, or graded without a reading: nothing more to read
    try:
        return await equivalence.answer_latex(attempt.answer_code)
    except Exception:  # noqa: BLE001 - the answer is kept and shown as code all the same
        return None


def _record(attempt: Attempt, meter: RunMeter, models: RunModels, start: RunStart, ws: Path,
            finished_at: datetime, params: Any = None) -> RunRecord:
    """The session's record (metrics.json), with the answer as written."""
    record = RunRecord.model_validate({
        "problem_id": attempt.problem_id,
        "strategy": attempt.strategy,
        "model": attempt.model,
        "status": attempt.status,
        "stop_reason": attempt.stop_reason,
        "has_answer": answered(attempt),
        "verdict": attempt.verdict,
        "ran_as": attempt.ran_as,
        "reference_conditioned": attempt.reference_conditioned,
        "wall_s": round(attempt.wall_s, 4),
        **meter.summary(),
        "max_in_flight_seen": meter.max_in_flight_seen,
        "seed": start.options.seed,
        "api_base": start.options.api_base,
        "started_at": start.started_at,
        "finished_at": finished_at.isoformat(),
        "details": json.loads(pydantic_core.to_json(attempt.details, fallback=str)),  # what JSON can hold
        "checkpoints": attempt.checkpoints,
        "models_by_role": models.models_by_role(),
        "output_modes": models.output_modes(),
        "warnings": [f"--role-model {r}=...: no request of this run was made by role '{r}' (roles: "
                     f"{', '.join(sorted(models.models_by_role())) or 'none'})" for r in models.unused_role_models()],
        "options": start.options,
        "problem_spec": start.problem_spec,
        "servers": start.servers,
        "state_digest": digest(read_bytes(ws / STATE)),
        "protocol": start.options.protocol,
        "strategy_params": _params_json(params),
    })
    record.answer_text, record.answer_code, record.workspace = attempt.answer_text, attempt.answer_code, ws
    return record


def _params_json(params: Any) -> dict[str, Any]:
    """A strategy's parameters, every one, as this session used them (metrics.json)."""
    dump = getattr(params, "model_dump", None)
    return dump(mode="json") if dump is not None else {}


def _kept_answer(record: RunRecord, before: RunRecord | None) -> RunRecord:
    """What a resume writes: its record, unless it ended without an answer (it failed, or a budget
    stopped it) where the run had one -- then the run keeps its answer, its verdict and how it got
    them, and says beside them how the resume ended."""
    if before is None or not before.has_answer or record.has_answer or record.status == "paused":
        return record
    kept = {k: getattr(before, k) for k in ("status", "stop_reason", "has_answer", "verdict", "ran_as",
                                             "reference_conditioned", "checkpoints", "details", "answer_latex")}
    failed = FailedResume(status=record.status, stop_reason=record.stop_reason, error=record.error,
                          started_at=record.started_at, finished_at=record.finished_at)
    return record.model_copy(update={**kept, "resume_failed": failed})
