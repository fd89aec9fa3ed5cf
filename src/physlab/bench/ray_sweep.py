"""The driver's side of a sweep on a Ray cluster (``bench run --ray [ADDRESS]``): the sweep still
claims every cell in its results database and writes every result itself (SQLite, one writer);
each claimed cell is sent to the node runner with the most room (``physlab.bench.ray_node``), and
its run directory comes back into ``--workspace-root``, its record rewritten to name it
(``physlab.run.moved``). A node that does not read the files the cells read by path as this
machine does (figures, replay files: ``physlab.bench.ray_inputs``) is given no cell.

A node that dies under a cell: Ray reports the runner dead; the attempt's spend (from the
coordinator's ledger, ``physlab.bench.ray_coordinator``) is recorded as a lost attempt beside the
cell, the node's in-flight slots are freed, and the cell runs again on a live node. Ray's own retry
of an actor call would wait for the actor to restart, which needs CPUs the other nodes' runners
hold, so the driver sends the cell again itself. Ray is imported here, only when a sweep asks for it.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physlab.bench.cell import CellOutcome, SolveFn, provider_specs
from physlab.bench.ray_inputs import InputFile, sweep_inputs
from physlab.bench.run_archive import unpack
from physlab.bench.store import CellSpec, LostAttempt
from physlab.errors import UserError
from physlab.llm.usage import CallRecord
from physlab.run.moved import moved_here

if TYPE_CHECKING:
    from physlab.bench.sweep_config import SweepConfig

# A cell whose node dies this many times is recorded failed (its error says so) instead of being
# sent round the cluster for ever.
MAX_LOST = 3
READY_TIMEOUT_S = 300.0  # a runner starting: its process, PhysLab's imports, the model clients
FEED_S = 0.5  # how often the driver takes the calls reported by the nodes (live progress)
NEW_NODES_S = 10.0  # how often it looks for nodes that joined the cluster


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("Ray is not installed: pip install 'physlab[ray]' (on the driver and on every node)",
                        field="--ray") from None
    return ray


@dataclass
class _Runner:
    id: str
    node: str
    cpus: int
    actor: Any
    backend: str = ""
    running: int = 0
    alive: bool = True


class RayCells:
    """Runs the cells of one sweep on the cluster (an async context: it joins the cluster and
    starts the runners and the coordinator on entry, and stops them on exit)."""

    def __init__(self, cfg: SweepConfig, *, solve: SolveFn, registry: Any, registry_path: str | None,
                 problems: list[Any]) -> None:
        self.cfg = cfg
        self._problems = problems
        self._inputs: list[InputFile] = []  # the files the cells read by path (figures, replay files)
        self._solve = solve
        self._registry = registry
        self._registry_path = registry_path
        self._runners: dict[str, _Runner] = {}  # by node id
        self._feeds: dict[str, Callable[[CallRecord], None]] = {}  # attempt -> the cell's on_call
        self._joined = False
        self._tasks: list[asyncio.Task] = []
        self.coordinator: Any = None

    # -- the cluster ---------------------------------------------------------------------------

    async def __aenter__(self) -> RayCells:
        ray = import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            try:
                ray.init(address=self.cfg.ray_address, logging_level="ERROR", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.cfg.ray_address or "RAY_ADDRESS or this machine"
                hint = ("; start one (ray start --head) or give its HOST:PORT (--ray local: a new Ray on this "
                        "machine)") if self.cfg.ray_address in (None, "auto") else ""
                raise UserError(f"cannot join the Ray cluster at {where}: {str(exc).splitlines()[0]}{hint}",
                                field="--ray") from None
            self._joined = True
        try:
            self._inputs = await asyncio.to_thread(sweep_inputs, self.cfg, self._problems, self._registry)
            here = ray.get_runtime_context().get_node_id()
            self.coordinator = ray.remote(_coordinator_class()).options(
                num_cpus=0, max_concurrency=100_000, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
            ).remote(self.cfg.max_inflight or self.cfg.concurrency)
            await self._add_runners(refuse=True)
            if not any(r.alive for r in self._runners.values()):
                raise UserError("no node of the Ray cluster has a free CPU for a cell runner", field="--ray")
            self._tasks = [asyncio.create_task(self._take_feed()), asyncio.create_task(self._watch_nodes())]
        except BaseException as exc:
            await self.__aexit__(type(exc), exc, None)
            raise
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        ray = import_ray()
        for task in self._tasks:
            task.cancel()
        for r in self._runners.values():
            if r.alive and exc_type is None:  # done: each runner closes its pool and removes its scratch
                try:
                    await asyncio.wait_for(_await(r.actor.close.remote()), 30)
                except Exception:  # noqa: BLE001 - a runner that cannot close is killed all the same
                    pass
            # stopped or failed: cells still running are abandoned (their cells are given back);
            # the next runner on the node removes the scratch they leave
            ray.kill(r.actor)
        if self.coordinator is not None:
            ray.kill(self.coordinator)
        if self._joined:
            ray.shutdown()

    async def _add_runners(self, refuse: bool = False) -> None:
        """A runner on every live node with CPUs that has none yet (nodes that joined since too).
        A node that does not read the cells' files as this machine does (``physlab.bench.ray_inputs``)
        gets no cells: at the start (``refuse``) the sweep stops in one line, later the node is left out."""
        ray = import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from physlab.bench.ray_node import NodeRunner

        env = _forwarded_keys(self.cfg, self._registry)
        made: list[_Runner] = []
        for node in ray.nodes():
            node_id, cpus = node["NodeID"], int(node.get("Resources", {}).get("CPU", 0))
            if not node.get("Alive") or cpus < 1 or node_id in self._runners:
                continue
            if self.cfg.sandbox_workers:
                cpus = min(cpus, self.cfg.sandbox_workers)
            runner_id = uuid.uuid4().hex
            actor = ray.remote(NodeRunner).options(
                num_cpus=cpus, max_concurrency=self.cfg.concurrency + 8, max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                runtime_env={"env_vars": env} if env else None,
            ).remote(self.cfg, coordinator=self.coordinator, runner_id=runner_id, cpus=cpus, solve=self._solve,
                     registry=self._registry, registry_path=self._registry_path)
            runner = _Runner(id=runner_id, node=node_id, cpus=cpus, actor=actor)
            self._runners[node_id] = runner
            made.append(runner)
        if not made:
            return
        readies = {asyncio.ensure_future(_await(r.actor.ready.remote(self._inputs))): r for r in made}
        done, pending = await asyncio.wait(readies, timeout=READY_TIMEOUT_S)
        for fut, runner in readies.items():
            if fut in done and fut.exception() is None:
                _, runner.backend, unread = fut.result()
                if not unread:
                    continue
                if refuse:  # (the runners are killed on the way out)
                    raise UserError(f"node {runner.node[:12]} of the Ray cluster: {unread[0]}"
                                    + (f" (and {len(unread) - 1} more)" if len(unread) > 1 else "")
                                    + "; problem figures and replay: files are read at their path on every node: "
                                    "put them where every node sees the same file (an absolute path)", field="--ray")
            runner.alive = False  # never came up (no room on its node, or it died starting), or cannot read: not used
            fut.cancel()
            if fut in done and isinstance(fut.exception(), UserError):
                raise fut.exception()  # type: ignore[misc]
            ray.kill(runner.actor)

    async def _watch_nodes(self) -> None:
        while True:
            await asyncio.sleep(NEW_NODES_S)
            try:
                await self._add_runners()
            except Exception:  # noqa: BLE001 - a node that cannot take a runner now is tried again later
                continue

    async def _take_feed(self) -> None:
        """The calls the nodes reported, to each cell's live progress."""
        while True:
            await asyncio.sleep(FEED_S)
            for attempt, record in await _await(self.coordinator.take_feed.remote()):
                on_call = self._feeds.get(attempt)
                if on_call is not None:
                    on_call(record)

    def _pick(self) -> _Runner:
        """The live runner with the most room: the fewest running cells per CPU it holds."""
        alive = [r for r in self._runners.values() if r.alive]
        if not alive:
            raise UserError("every node of the Ray cluster is gone; the cells not done are pending: run the same "
                            "command again when the cluster is back", field="--ray")
        return min(alive, key=lambda r: (r.running / r.cpus, r.running))

    async def _lose(self, runner: _Runner) -> None:
        """The runner is gone (or out of reach: then it is killed, so that no cell of it runs on
        unseen and no slot of it is counted twice); its in-flight slots are free again."""
        if runner.alive:
            runner.alive = False
            import_ray().kill(runner.actor)
            await _await(self.coordinator.forget.remote(runner.id))

    # -- one cell ------------------------------------------------------------------------------

    async def run(self, spec: CellSpec, problem: Any, workspace: Path, on_call: Callable[[CallRecord], None],
                  lost: Callable[[LostAttempt], Awaitable[None]]) -> CellOutcome:
        ray = import_ray()
        rel = workspace.relative_to(self.cfg.runs_dir()).as_posix()
        for _ in range(MAX_LOST + 1):
            runner = self._pick()
            attempt, started = uuid.uuid4().hex, time.time()
            self._feeds[attempt] = on_call
            runner.running += 1
            try:
                sent = await _await(runner.actor.run_cell.remote(spec, problem, rel, attempt))
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                await self._lose(runner)
                spent = await _await(self.coordinator.close_attempt.remote(attempt))
                await lost(LostAttempt(attempt=attempt, node=runner.node, reason=_why(exc), started_at=started,
                                       lost_at=time.time(), usage=spent))
                continue
            finally:
                runner.running -= 1
                self._feeds.pop(attempt, None)
            self.coordinator.close_attempt.remote(attempt)
            if sent.user_error is not None:
                raise UserError(sent.user_error)
            outcome = sent.outcome
            if sent.archive is not None:
                await asyncio.to_thread(bring_back, sent.archive, sent.sealed, workspace)
            if outcome.result is not None:
                outcome.result.workspace = str(workspace)
                outcome.result.node = sent.node
            return outcome
        return CellOutcome(error=f"its node died under it {MAX_LOST + 1} times (the lost attempts' spend is in "
                                 "lost_attempts)")


def bring_back(archive: bytes, sealed: list[str], workspace: Path) -> None:
    """A cell's run directory, sent back by its node, into ``workspace`` (under ``--workspace-root``):
    its record names where it is now, and the records its node vouched for are sealed here."""
    unpack(archive, workspace)
    moved_here(workspace, sealed)


async def _await(ref: Any) -> Any:
    return await ref


def _why(exc: BaseException) -> str:
    return f"node lost ({type(exc).__name__})"


def _coordinator_class() -> type:
    from physlab.bench.ray_coordinator import Coordinator

    return Coordinator


def _forwarded_keys(cfg: SweepConfig, registry: Any) -> dict[str, str]:
    """The API key variables the sweep's models read, as set here: the nodes' runners get them in
    their runtime environment (a node's own environment need not hold them)."""
    from physlab.llm.models import endpoint_of

    names = set()
    for spec in provider_specs(cfg, registry):
        endpoint = endpoint_of(spec, registry, cfg.api_base, cfg.api_key_env)
        if endpoint is not None and endpoint[1]:
            names.add(endpoint[1])
    return {name: os.environ[name] for name in sorted(names) if name in os.environ}
