"""Run one strategy on one problem: the reusable core of `physlab solve` (and of the sweep).

``run_solve`` builds the RunEnvironment (public problem, models recording into calls.jsonl, budget,
in-flight limiter, sandbox, grader bound to the full problem), runs the strategy, writes
PROBLEM.md / ANSWER.md / answer.py / metrics.json and grades. A budget, a failing model or a
strategy bug ends the run with a status in metrics.json, never with a traceback (a bug's traceback
goes to the workspace's error.log). Bad input raises UserError.
"""

from __future__ import annotations

import asyncio
import errno
import re
import shutil
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pydantic_core
from pydantic_ai.concurrency import AbstractConcurrencyLimiter, ConcurrencyLimiter
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import Model

from physlab.errors import UserError
from physlab.grading.verdict import Verdict
from physlab.run.lock import LOCK, RunLock, lock_run
from physlab.llm.defaults import ModelRegistry
from physlab.llm.errors import ModelFailure, ReplayError, budget_error, find_error
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.prompt import problem_text
from physlab.llm.recording import RetryPolicy
from physlab.llm.usage import Budget, CallRecord
from physlab.problems.model import Problem
from physlab.run.files import write_atomic
from physlab.strategies import registry
from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import StrategyParams

if TYPE_CHECKING:
    from physlab.grading import BoundGrader, Equivalence, Grader
from physlab.run.checkpoints import grade_checkpoints

# A strategy that ignores the wall budget is cancelled this long after it (the budget check before
# each request normally ends it first; the slack lets a forced formatter finish).
HARD_WALL_FACTOR = 1.5
HARD_WALL_SLACK_S = 30.0


def default_workspace(problem: Problem, strategy: str, root: Path | str = "runs") -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{problem.id}-{strategy}")
    return Path(root) / f"{stamp}-{safe}"


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


def _reference_for(problem: Problem, params: StrategyParams) -> str | None:
    """The reference solution, for a strategy whose parameters ask to see it (the one exception
    to "no prompt holds the answer key": SCALAR's Judge and, in its paper setting, its Critic);
    None otherwise, and for a problem that has none (the strategy says whether it can do without)."""
    if not params.sees_reference:
        return None
    return problem.solution or problem.reference or None


def _resolve_workspace(problem: Problem, strategy: str, workspace: Path | str | None,
                       resume: Path | str | bool | None, replace: bool = False, resumable: bool = False) -> tuple[Path, bool, RunLock]:
    """(run directory, resuming, its lock): the lock is taken before anything in the directory
    changes, so a second process on the same run is refused before it spends anything."""
    if resume not in (None, False):
        ws = Path(workspace) if resume is True else Path(resume)  # type: ignore[arg-type]
        if resume is True and workspace is None:
            raise UserError("resume needs the run directory", field="--resume")
        if not ws.is_dir():
            raise UserError("no such run directory to resume", path=ws, field="--resume")
        _check_resumable(ws, problem, strategy, resumable)
        return ws, True, lock_run(ws)
    ws = Path(workspace) if workspace is not None else default_workspace(problem, strategy)
    try:
        ws.mkdir(parents=True)
    except FileExistsError:
        if not ws.is_dir():
            raise UserError("workspace exists and is not a directory", path=ws, field="--workspace") from None
        if any(p.name != LOCK for p in ws.iterdir()):
            if not replace:
                raise UserError("workspace already exists and is not empty (use --resume to continue it, "
                                "or --replace to start it over)", path=ws, field="--workspace") from None
            if not _is_run_dir(ws):
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

_RUN_FILES = ("PROBLEM.md", "calls.jsonl", "metrics.json", "state.json")


def _is_run_dir(ws: Path) -> bool:
    """A directory a run made (so ``replace`` may delete it), not any directory a typo names."""
    return any((ws / name).exists() for name in _RUN_FILES)


def recorded_run(ws: Path) -> tuple[str | None, str | None, bool]:
    """(strategy, problem id, has a final answer) of the run in ``ws``, as far as its files say."""
    from physlab.run.files import read_json  # the lab's reader of run files (only on resume/replay)

    metrics = read_json(ws / "metrics.json")
    strategy, problem_id = metrics.get("strategy"), metrics.get("problem_id")
    if (ws / "state.json").is_file():
        strategy = strategy or "lab"
        problem_id = problem_id or read_json(ws / "state.json").get("problem_id")
    if problem_id is None and (ws / "PROBLEM.md").is_file():
        first = (ws / "PROBLEM.md").read_text(encoding="utf-8", errors="replace").partition("\n")[0]
        problem_id = first[2:].strip() if first.startswith("# ") else None
    return strategy, problem_id, bool(metrics.get("has_answer"))


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


async def run_solve(problem: Problem, strategy: str, model: str, *, workspace: Path | str | None = None,
                    budget: Budget | None = None, api_base: str | None = None,
                    api_key_env: str | None = None, seed: int = 0, params: dict[str, Any] | None = None,
                    resume: Path | str | bool | None = None, limiter: AbstractConcurrencyLimiter | None = None,
                    sandbox: Any = None, grader: Grader | None = None, events: Any = None,
                    max_in_flight: int | None = None, models_config: Path | str | None = None,
                    model_registry: ModelRegistry | None = None, retry: RetryPolicy | None = None,
                    provider: Model | None = None,
                    on_call: Callable[[CallRecord], None] | None = None,
                    replace: bool = False, role_models: dict[str, str] | None = None,
                    output_mode: str | None = None, providers: dict[str, Model] | None = None) -> Attempt:
    """Run ``strategy`` with ``model`` on ``problem``; returns the Attempt (also in metrics.json).

    ``limiter`` is an in-flight limiter shared with other runs (a sweep's: pydantic-ai's
    ``ConcurrencyLimiter``); ``max_in_flight`` caps this run's own requests too. ``grader`` is a
    physlab.grading Grader (bound here to the full problem; a sweep shares one). ``provider`` is a
    provider model for ``model`` that the caller built and closes (a sweep shares one between its
    cells); ``on_call`` sees each calls.jsonl record as it is written. ``replace`` removes what an
    earlier, unfinished try left in ``workspace`` (a sweep restarting a cell) instead of refusing it.
    ``role_models`` gives roles their own model (over the registry's ``roles:``; ``model`` plays the
    others), ``providers`` shares provider models by spec like ``provider``; ``output_mode``
    (tool|native|prompted|auto) overrides the registry's for every model of the run."""
    budget = budget or Budget()
    emit = events or (lambda *a, **k: None)
    kind = registry.get(strategy)  # unknown name or bad parameters: UserError before any file
    scaffold = kind(kind.Params.parse(strategy, params))
    reference = _reference_for(problem, scaffold.params)
    _check_replay(model, problem, strategy)
    reg = model_registry or ModelRegistry.load(models_config)
    ws, resuming, run_lock = _resolve_workspace(problem, strategy, workspace, resume, replace, scaffold.resumable)
    calls_path = ws / "calls.jsonl"

    def on_record(rec: CallRecord) -> None:
        if on_call is not None:
            on_call(rec)
        try:  # the run's totals after each call: a live view's last frame agrees with the summary
            emit("usage", role=rec.role, failed=rec.response is None, **_totals(meter))
        except Exception:  # noqa: BLE001 - a broken progress display must not fail a model call
            pass

    try:
        previous = read_calls(calls_path) if resuming and calls_path.is_file() else None
        meter = RunMeter(budget, calls_path, previous=previous, on_record=on_record)
    except BaseException:
        run_lock.release()
        raise
    own_cap = [ConcurrencyLimiter(max_in_flight, name="run")] if max_in_flight else []
    limiters = own_cap + ([limiter] if limiter is not None else [])
    models = None
    started_at = datetime.now(timezone.utc)
    t0 = time.monotonic()
    try:
        models = RunModels(model, meter=meter, limiters=limiters, api_base=api_base,
                           api_key_env=api_key_env, registry=reg, retry=retry, provider=provider,
                           providers=providers, role_models=role_models, output_mode=output_mode,
                           events=events)
        await models.open()
        if sandbox is None:
            from physlab.sandbox import default_sandbox

            sandbox = default_sandbox()
        public = problem.public()
        write_problem_md(public, ws / "PROBLEM.md")
        bound, equivalence = _graders(problem, grader, sandbox, public)
        ctx = RunEnvironment(problem=public, workspace=ws, models=models, usage=meter, budget=budget,
                         sandbox=sandbox, grader=bound, equivalence=equivalence, seed=seed,
                         resume=resuming, events=emit, reference_solution=reference)
        emit("run_started", strategy=strategy, model=model, problem_id=problem.id, workspace=str(ws))
        attempt = await _run_strategy(scaffold, ctx, strategy, model, problem, budget, ws, models)
        attempt.wall_s = time.monotonic() - t0
        attempt.usage_by_role = meter.by_role()
        attempt.strategy, attempt.model, attempt.problem_id = strategy, model, problem.id
        if attempt.status in ("complete", "partially_complete") and not attempt.has_answer:
            attempt.status = "no_answer"
        attempt.details = {**attempt.details, "workspace": str(ws)}
        if reference is not None:  # saw the answer key: never ranked beside solvers
            attempt.reference_conditioned = True
        attempt.checkpoints = attempt.checkpoints or ctx.checkpoints  # kept when a budget ended the run
        _write_answer(attempt, problem, ws)
        attempt.verdict = await _grade(attempt, problem, bound)
        if bound is not None:
            await grade_checkpoints(attempt.checkpoints, bound)
        _write_metrics(attempt, meter, ws, seed=seed, api_base=api_base, started_at=started_at, models=models)
        _commit_outcome(attempt, ws)
        emit("run_finished", status=attempt.status, stop_reason=attempt.stop_reason,
             verdict=attempt.verdict.verdict if attempt.verdict else None, wall_s=attempt.wall_s, **_totals(meter))
        return attempt
    except UserError:
        meter.close()
        if not resuming:
            _discard_if_untouched(ws)  # bad input: leave no half-made workspace behind
        raise
    finally:
        meter.close()
        if models is not None:
            await models.aclose()
        run_lock.release()


async def _run_strategy(scaffold: Strategy, ctx: RunEnvironment, strategy: str, model: str, problem: Problem,
                        budget: Budget, ws: Path, models: RunModels | None = None) -> Attempt:
    def ended(status: str, reason: str, **details: Any) -> Attempt:
        return Attempt(strategy=strategy, model=model, problem_id=problem.id, status=status,  # type: ignore[arg-type]
                       stop_reason=reason, details=details)

    hard = budget.max_wall_s * HARD_WALL_FACTOR + HARD_WALL_SLACK_S if budget.max_wall_s else None
    try:
        return await asyncio.wait_for(scaffold.run(ctx), hard)
    except UserError:
        raise
    except asyncio.TimeoutError:
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
    calls = ws / "calls.jsonl"
    if names <= {"PROBLEM.md", "calls.jsonl", LOCK} and (not calls.exists() or calls.stat().st_size == 0):
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
    except Exception as exc:  # the grader must not lose the run's work
        return Verdict(verdict="invalid", reason=f"grader failed: {type(exc).__name__}: {exc}"[:500])


def _write_metrics(attempt: Attempt, meter: RunMeter, ws: Path, *, seed: int,
                   api_base: str | None, started_at: datetime, models: RunModels | None = None) -> None:
    data: dict[str, Any] = {
        "problem_id": attempt.problem_id,
        "strategy": attempt.strategy,
        "model": attempt.model,
        "status": attempt.status,
        "stop_reason": attempt.stop_reason,
        "has_answer": answered(attempt),
        "verdict": attempt.verdict.contract_json() if attempt.verdict else None,
        "ran_as": attempt.ran_as,
        "reference_conditioned": attempt.reference_conditioned,
        "wall_s": round(attempt.wall_s, 4),
        **meter.summary(),
        "max_in_flight_seen": meter.max_in_flight_seen,
        "seed": seed,
        "api_base": api_base,
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "details": attempt.details,
        "checkpoints": [cp.model_dump(exclude_none=True) for cp in attempt.checkpoints],
    }
    if models is not None:
        data["models_by_role"] = models.models_by_role()
        data["output_modes"] = models.output_modes()
        if unused := models.unused_role_models():
            data["warnings"] = [f"--role-model {r}=...: no request of this run was made by role '{r}' (roles: "
                                f"{', '.join(sorted(models.models_by_role())) or 'none'})" for r in unused]
    # metrics.json is the run's record that it finished (resume, the dashboard, `runs show` read it):
    # replaced whole. pydantic's encoder: it takes models and values json.dumps would refuse.
    write_atomic(ws / "metrics.json", pydantic_core.to_json(data, indent=2, fallback=str) + b"\n")
