"""The sweep executor: every (problem, strategy, model, repeat) cell, concurrently, resumable.

One process runs up to ``concurrency`` cells at a time on one event loop. Everything on the model
path is async; model requests from all cells go through one shared in-flight limiter (pydantic-ai's
``ConcurrencyLimiter``) and one provider model per model name (so the cells share its HTTP
connections); sandbox work
(model-written code, grading) goes through one bounded pool so CPU-heavy scripts queue instead of
starving the model I/O. Cells are claimed in the results database before they run (see
``physlab.bench.store``), so an interrupted sweep resumes where it stopped and several worker
processes (on one machine or many, sharing one database file) each run a disjoint set of cells.
With ``executor="ray"`` the cells run on the nodes of a Ray cluster instead (``physlab.bench.ray_sweep``):
this process still claims them, writes every result and shows the progress.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from pydantic_ai.concurrency import ConcurrencyLimiter

from physlab.bench.cell import (
    BoundedSandbox,
    CellOutcome,
    CellShared,
    SolveFn,
    open_providers,
    run_cell,
)
from physlab.bench.store import CellSpec, LostAttempt, ResultsStore, params_tag, worker_id
from physlab.bench.sweep_config import SweepConfig
from physlab.errors import UserError
from physlab.llm.usage import CallRecord
from physlab.tools.choice import ToolChoice

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = ["BoundedSandbox", "SolveFn", "Sweep", "SweepConfig", "SweepSummary", "run_sweep"]


class SweepSummary(BaseModel):
    cells: int = 0
    ran: int = 0
    skipped_done: int = 0
    skipped_other_worker: int = 0
    failed: int = 0
    grid_done: int = 0
    grid_failed: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    cpu_s: float = Field(default=0.0, description="CPU this process used while running cells (all threads).")


def suite_label(spec: str) -> str:
    """The suite part of a cell key: a built-in suite's name, or a directory/file's name (so
    workers that mount the same data at different paths agree on keys)."""
    p = Path(spec)
    if p.exists():
        return p.resolve().name
    return spec


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_")[:180]


def _config_dirname(config: str) -> str:
    """A cell's budget/parameter tag as part of its workspace name: readable when short, a hash
    when long (the name is cut at 180 characters, and two cells must never share a workspace)."""
    safe = _safe(config)
    if "|" not in config or len(safe) <= 48:  # no parameters: the name it always had
        return safe
    import hashlib

    return safe[:32] + "_" + hashlib.sha1(config.encode()).hexdigest()[:12]


@dataclass
class _Live:
    done: int = 0
    failed: int = 0
    tokens: int = 0
    cost: float = 0.0
    active: set[str] = field(default_factory=set)


class Sweep:
    def __init__(self, config: SweepConfig, *, store: ResultsStore | None = None,
                 solve: SolveFn | None = None, progress: bool = True, problems: list | None = None,
                 wait_for_others: bool = True, poll_s: float = 1.0):
        self.config = config
        self.store = store or ResultsStore(config.db)
        self._runs_dir = config.runs_dir()
        self._models: Any = None  # the model registry, read once before the first cell
        self._models_path: str | None = None
        self._providers: dict[str, Any] = {}  # model name -> the provider model its cells share
        self._cells: Any = None  # the Ray cluster's cells (RayCells); None: run_cell in this process
        self._own_store = store is None
        self.worker = worker_id()
        self._solve = solve
        self.show_progress = progress
        self._problems = problems
        self.live = _Live()
        self._prog = _Progress(0, 0, enabled=False)
        self.summary = SweepSummary()
        self.wait_for_others = wait_for_others
        self.poll_s = poll_s

    # -- setup ----------------------------------------------------------------------------------

    def _load(self) -> list:
        if self._problems is not None:
            return self._problems
        from physlab.problems import load_suite

        problems = load_suite(self.config.suite)
        if not problems:
            raise UserError("suite has no problems", path=self.config.suite)
        return problems

    def plan(self) -> tuple[dict[str, Any], list[CellSpec]]:
        problems = self._load()
        label = suite_label(self.config.suite)
        ids = [p.id for p in problems]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise UserError(f"problem ids are not unique: {sorted(dup)[:3]}", path=self.config.suite)
        by_id = {p.id: p for p in problems}
        # other parameters, other cells (like a budget); so are other role models and output modes
        # other tools, other cells: a number with literature search is another experiment (an arm)
        arms: list[ToolChoice | None] = list(self.config.tools) or [None]
        specs = [
            CellSpec(problem_id=p.id, strategy=s, model=m, repeat=r, budget=self.config.budget,
                     suite=label, sweep=self.config.name or label, gradable=p.gradable,
                     params=params_tag({**self.config.params, **self._model_options(),
                                        **({"@tools": str(arm)} if arm is not None else {})}), tools=arm,
                     protocol=self.config.protocol)
            for arm in arms for p in problems for s in self.config.strategies for m in self.config.models
            for r in range(self.config.repeats)
        ]
        self.store.add_problems(problems, suite=label)
        self.store.add_cells(specs)
        return by_id, specs

    def _model_options(self) -> dict[str, Any]:
        """The model options that change what a cell measures, as they join its parameters' tag."""
        out: dict[str, Any] = {}
        if self.config.role_models:
            out["@role_models"] = dict(sorted(self.config.role_models.items()))
        if self.config.output_mode:
            out["@output_mode"] = self.config.output_mode
        if self.config.protocol != "physlab":  # PhysLab's keeps the keys it always had
            out["@protocol"] = self.config.protocol
        return out

    # -- one cell -------------------------------------------------------------------------------

    async def _db(self, fn, *args, **kwargs):
        # SQLite calls may wait on another process's write lock (busy timeout): keep them off the
        # event loop so model I/O of the other cells is never stalled by a lock wait.
        return await asyncio.get_running_loop().run_in_executor(self._db_pool, lambda: fn(*args, **kwargs))

    async def _run_cell(self, spec: CellSpec, problem: Any) -> None:
        workspace = self._runs_dir / _safe(spec.suite) / _safe(
            f"{spec.problem_id}__{spec.strategy}__{spec.model}__r{spec.repeat}__{_config_dirname(spec.config)}")
        workspace.parent.mkdir(parents=True, exist_ok=True)
        counted = [0, 0.0]  # this cell's tokens and cost already in the live display

        def on_call(rec: CallRecord) -> None:  # live tokens/cost while the cell runs
            if rec.input_tokens or rec.output_tokens or rec.cost_usd:  # an unusable reply's tokens too
                counted[0] += rec.input_tokens + rec.output_tokens
                counted[1] += rec.cost_usd
                self.live.tokens += rec.input_tokens + rec.output_tokens
                self.live.cost += rec.cost_usd
                self._prog.update(self.live)

        async def lost(attempt: LostAttempt) -> None:  # a Ray node died under the cell: its spend kept
            counted[:] = [0, 0.0]  # (what it showed stays shown: it was spent; the next attempt counts anew)
            await self._db(self.store.record_lost, spec.key, self.worker, attempt)

        try:
            if self._cells is None:
                outcome = await run_cell(self.config, spec, problem, workspace, self._shared, on_call)
            else:
                outcome = await self._cells.run(spec, problem, workspace, on_call, lost)
        except (asyncio.CancelledError, UserError):
            # interrupted, or bad input (an unknown model, a missing key...): the cell goes back
            # to pending and bad input stops the whole sweep (exit 2) instead of failing every cell
            await asyncio.shield(self._db(self.store.release, spec.key, self.worker))
            raise
        await self._record(spec, workspace, outcome, counted)

    async def _record(self, spec: CellSpec, workspace: Path, outcome: CellOutcome, counted: list) -> None:
        if outcome.result is None:  # crashed (an exception in the run, not a model failure)
            await self._db(self.store.fail, spec.key, self.worker, outcome.error or "", str(workspace))
            self.live.failed += 1
            self.summary.failed += 1
            return
        if await self._db(self.store.finish, spec.key, self.worker, outcome.result):
            total = outcome.result.usage()
            self.live.done += 1
            # what on_call did not show yet (a solve function without it; a report still on its way)
            self.live.tokens += max(0, total.total_tokens - counted[0])
            self.live.cost += max(0.0, total.cost_usd - counted[1])
            self.summary.ran += 1
            self.summary.tokens += total.total_tokens
            self.summary.cost_usd += total.cost_usd

    async def _show_grid(self, keys: list[str], since: float) -> None:
        """Once a second: the grid's counts from the database, so the display includes the cells
        of other workers (helper processes, other machines)."""
        while True:
            await asyncio.sleep(1.0)
            self._prog.grid(await self._db(self.store.grid_progress, keys, worker=self.worker, since=since))

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.config.lease_s / 3)
            await self._db(self.store.renew, list(self.live.active), self.worker, lease_s=self.config.lease_s)

    # -- the sweep ------------------------------------------------------------------------------

    async def _prepare(self, stack: AsyncExitStack) -> None:
        """What every cell needs, done once before the first is claimed: the strategies (an
        unavailable one stops the sweep here), the model registry (a bad file too), and one provider
        model per model name, open until the sweep ends (a missing API key stops the sweep here,
        exit 2, with every cell still pending)."""
        from physlab.llm.defaults import ModelRegistry
        from physlab.strategies import registry

        for strategy in self.config.strategies:
            registry.get(strategy)
        from physlab.run.options import registry_path

        self._models_path = registry_path(None)  # $PHYSLAB_MODELS_CONFIG, recorded in each cell's options
        self._models = ModelRegistry.load(self._models_path)
        # (on Ray each node opens its own clients; the driver opens them too, so that a missing
        # key stops the sweep here all the same)
        self._providers.update(await open_providers(self.config, self._models, stack))

    async def run(self, start_gate: Callable[[], Awaitable[None]] | None = None) -> SweepSummary:
        """Run the grid. ``start_gate``, when given, is awaited once the sweep is ready and before
        the first cell is claimed (so the worker processes of one machine start claiming together)."""
        from concurrent.futures import ThreadPoolExecutor

        cfg = self.config
        t0 = time.monotonic()
        self._db_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="physlab-db")
        stack = AsyncExitStack()
        try:
            by_id, specs = self.plan()
            if self._solve is None:
                from physlab.run.runner import run

                self._solve = run
            self.summary.cells = len(specs)
            await self._db(self.store.reap)
            states = await self._db(self.store.cell_states, [s.key for s in specs])
            self.summary.skipped_done = sum(states.get(s.key) == "done" for s in specs)
            await self._prepare(stack)
            if cfg.executor == "ray":  # Ray is imported here and nowhere else
                from physlab.bench.ray_sweep import RayCells

                self._cells = await stack.enter_async_context(
                    RayCells(cfg, solve=self._solve, registry=self._models, registry_path=self._models_path,
                             problems=list(by_id.values())))
            else:
                from physlab.sandbox import default_sandbox

                self.limiter = ConcurrencyLimiter(cfg.max_inflight or cfg.concurrency, name="sweep")
                self.sandbox = BoundedSandbox(default_sandbox(), cfg.sandbox_workers or os.cpu_count() or 2)
                self._shared = CellShared(limiter=self.limiter, sandbox=self.sandbox, providers=self._providers,
                                          registry=self._models, registry_path=self._models_path,
                                          solve=self._solve)
            if start_gate is not None:
                await start_gate()
            started, cpu0 = time.time(), time.process_time()
            with self._progress(len(specs), self.summary.skipped_done) as prog:
                self._prog = prog
                hb = asyncio.create_task(self._heartbeat())
                shown = asyncio.create_task(self._show_grid([s.key for s in specs], started)) \
                    if self.show_progress else None
                try:
                    await self._drive(specs, by_id, prog)
                finally:
                    hb.cancel()
                    if shown is not None:
                        shown.cancel()
            self.summary.cpu_s = time.process_time() - cpu0
            await self._db(self.store.record_worker_run, self.worker, sweep=cfg.name or suite_label(cfg.suite),
                           started_at=started, finished_at=time.time(), cells_ran=self.summary.ran,
                           cells_failed=self.summary.failed, cpu_s=self.summary.cpu_s)
            states = await self._db(self.store.cell_states, [s.key for s in specs])
            self.summary.grid_done = sum(v == "done" for v in states.values())
            self.summary.grid_failed = sum(v == "failed" for v in states.values())
            self.summary.wall_s = time.monotonic() - t0
            return self.summary
        finally:
            await stack.aclose()
            self._db_pool.shutdown(wait=True)
            if self._own_store:
                self.store.close()

    async def _drive(self, specs: list[CellSpec], by_id: dict[str, Any], prog: _Progress) -> None:
        """Run every claimable cell; then, while other workers still hold cells of this grid, wait
        for them (picking up any cell given back when a worker dies or its lease expires), so a
        worker returns only when the whole grid is finished."""
        cfg = self.config
        keys = [s.key for s in specs]
        first = True
        while True:
            retry_failed = cfg.retry_failed and first  # a cell that crashes now is retried next sweep
            first = False
            states = await self._db(self.store.cell_states, keys)
            todo = [s for s in specs if states.get(s.key) == "pending"
                    or (retry_failed and states.get(s.key) == "failed")]
            if todo:
                # Each worker walks the grid in its own order, so concurrent workers rarely race
                # for the same cell (a lost race costs one failed UPDATE, nothing more).
                random.Random(self.worker).shuffle(todo)
                await self._run_cells(todo, by_id, prog, retry_failed)
                continue
            elsewhere = sum(v == "running" for v in states.values())
            if not elsewhere or not self.wait_for_others:
                self.summary.skipped_other_worker = elsewhere
                return
            prog.waiting(elsewhere)
            await asyncio.sleep(self.poll_s)
            await self._db(self.store.reap)

    async def _run_cells(self, todo: list[CellSpec], by_id: dict[str, Any], prog: _Progress,
                         retry_failed: bool) -> None:
        """Run ``todo`` with at most ``concurrency`` cells at once, claiming them in batches as
        slots free up (one transaction per batch, not per cell). If a cell raises bad input
        (UserError), the others are cancelled and give their cells back before it leaves."""
        cfg = self.config
        spec_of = {s.key: s for s in todo}
        queue = [s.key for s in todo]
        not_started: set[str] = set()  # claimed, its task not yet running
        running: set[asyncio.Task] = set()

        async def one(spec: CellSpec) -> None:
            not_started.discard(spec.key)
            self.live.active.add(spec.key)
            try:
                await self._run_cell(spec, by_id[spec.problem_id])
            finally:
                self.live.active.discard(spec.key)
                prog.update(self.live)

        try:
            async with asyncio.TaskGroup() as tg:
                while queue or running:
                    free = cfg.concurrency - len(running)
                    if queue and free > 0:
                        taken, looked = await self._db(self.store.claim_many, list(queue), self.worker,
                                                       limit=free, lease_s=cfg.lease_s,
                                                       retry_failed=retry_failed)
                        del queue[:looked]
                        not_started.update(taken)
                        for key in taken:
                            task = tg.create_task(one(spec_of[key]))
                            running.add(task)
                            task.add_done_callback(running.discard)
                        continue
                    await asyncio.wait(set(running), return_when=asyncio.FIRST_COMPLETED)
        except* UserError as eg:
            raise eg.exceptions[0] from None
        finally:
            if not_started:  # stopped before these cells began: give them back
                keys = sorted(not_started)

                def release() -> None:
                    for k in keys:
                        self.store.release(k, self.worker)

                await asyncio.shield(self._db(release))

    def _progress(self, total: int, already: int) -> _Progress:
        return _Progress(total, already, enabled=self.show_progress)


def _si(n: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return str(int(n))


class _Progress:
    """Rich progress bar: cells done/failed (the whole grid, other workers included), cells running
    here, tokens and cost spent (this process's calls as they happen, other workers' cells as they
    finish), ETA."""

    def __init__(self, total: int, already: int, enabled: bool):
        self.enabled = enabled
        self.total = total
        self.already = already
        self._p: Progress | None = None
        self._grid: tuple[int, int, int, float] | None = None  # from the database, see grid()
        self._live = _Live()
        self._waiting = 0

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._p = Progress(TextColumn("[bold]cells"), BarColumn(bar_width=20), MofNCompleteColumn(),
                               TextColumn("{task.fields[info]}"), TextColumn("ETA"),
                               TimeRemainingColumn())
            self._p.__enter__()
            self._task = self._p.add_task("sweep", total=self.total, completed=self.already,
                                          info=f"{self.already} done earlier")
        return self

    def update(self, live: _Live) -> None:
        self._live = live
        if self._p is None:
            return
        done, failed = self.already + live.done, live.failed
        tokens, cost = live.tokens, live.cost
        if self._grid is not None:
            done, failed = max(done, self._grid[0]), max(failed, self._grid[1])
            tokens, cost = tokens + self._grid[2], cost + self._grid[3]
        info = f"ok {done} fail {failed} run {len(live.active)} {_si(tokens)} tok ${cost:.2f}"
        if self._waiting:
            info += f", {self._waiting} running elsewhere"
        self._p.update(self._task, completed=done + failed, info=info)

    def grid(self, counts: tuple[int, int, int, float]) -> None:
        self._grid = counts
        self.update(self._live)

    def waiting(self, n: int) -> None:
        self._waiting = n
        self.update(self._live)

    def __exit__(self, *exc) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)


async def run_sweep(config: SweepConfig, start_gate: Callable[[], Awaitable[None]] | None = None,
                    **kwargs) -> SweepSummary:
    """Run (or resume) a sweep; see :class:`Sweep`."""
    return await Sweep(config, **kwargs).run(start_gate=start_gate)
