"""A node of a Ray sweep: one actor per node runs the cells the driver sends it, many at once on one
event loop (a cell is mostly waiting for model replies), with the node's own sandbox pool.

The actor holds as many of the node's CPUs as its sandbox pool has workers, so Ray never gives the
node more sandbox work than it has cores for. A cell runs in a scratch directory of the node's own;
when it ends, the directory goes back to the driver as an archive and is removed here. Each model
call is reported to the sweep's coordinator as it is made (the driver's progress, and the spend of
an attempt whose node dies). Made a Ray actor by ``physlab.bench.ray_sweep``; Ray is imported inside.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physlab.bench.cell import BoundedSandbox, CellOutcome, CellShared, SolveFn, open_providers, run_cell
from physlab.bench.ray_coordinator import ClusterLimiter
from physlab.bench.ray_inputs import InputFile, unseen
from physlab.bench.run_archive import pack
from physlab.bench.store import CellSpec
from physlab.errors import UserError
from physlab.llm.usage import CallRecord
from physlab.run.moved import sealed_records

if TYPE_CHECKING:
    from physlab.bench.sweep_config import SweepConfig

SCRATCH_PREFIX = "physlab-ray-cells-"


@dataclass
class NodeCell:
    """What a node sends back for one cell: how it ended, its run directory (an archive), where it
    ran; or the one line of bad input that stops the sweep."""

    node: str
    outcome: CellOutcome | None = None
    archive: bytes | None = None
    ran_in: str | None = None
    user_error: str | None = None
    sealed: list[str] = field(default_factory=list)  # its records that carried the node's seal


class NodeRunner:
    """The cells of one node (see the module's docstring)."""

    def __init__(self, cfg: SweepConfig, *, coordinator: Any, runner_id: str, cpus: int, solve: SolveFn,
                 registry: Any, registry_path: str | None) -> None:
        import ray

        from physlab.sandbox import Sandbox

        self.cfg = cfg
        self.node = ray.get_runtime_context().get_node_id()
        self.coordinator = coordinator
        _remove_stale_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        self.sandbox = Sandbox(workers=cpus)
        self.shared = CellShared(limiter=ClusterLimiter(coordinator, runner_id),
                                 sandbox=BoundedSandbox(self.sandbox, cpus), registry=registry,
                                 registry_path=registry_path, solve=solve)
        self._stack = AsyncExitStack()

    async def ready(self, inputs: list[InputFile]) -> tuple[str, str, list[str]]:
        """Open the node's model clients (with the key variables the driver forwarded); (node id,
        sandbox backend, the files of ``inputs`` this node does not read as the driver did)."""
        self.shared.providers.update(await open_providers(self.cfg, self.shared.registry, self._stack))
        return self.node, self.sandbox.backend, await asyncio.to_thread(unseen, inputs)

    async def run_cell(self, spec: CellSpec, problem: Any, rel: str, attempt: str) -> NodeCell:
        workspace = self.scratch / rel
        workspace.parent.mkdir(parents=True, exist_ok=True)

        def on_call(rec: CallRecord) -> None:
            self.coordinator.spent.remote(attempt, rec.model_copy(update={"request": None, "response": None}))

        try:
            outcome = await run_cell(self.cfg, spec, problem, workspace, self.shared, on_call)
        except UserError as exc:  # (its own type would reach the driver wrapped in Ray's)
            return NodeCell(node=self.node, user_error=str(exc))
        return send_back(self.node, outcome, workspace)

    async def close(self) -> None:
        await self._stack.aclose()
        await self.sandbox.aclose()
        shutil.rmtree(self.scratch, ignore_errors=True)


def send_back(node: str, outcome: CellOutcome, workspace: Path) -> NodeCell:
    """What goes back to the driver when a cell ends: its run directory as an archive, with the
    names of its records that carry this node's seal (written by its runner, not edited since:
    the driver seals those as its own, ``physlab.run.moved``); the scratch directory is removed."""
    try:
        if not workspace.is_dir():
            return NodeCell(node=node, outcome=outcome, ran_in=str(workspace))
        return NodeCell(node=node, outcome=outcome, archive=pack(workspace), ran_in=str(workspace),
                        sealed=sealed_records(workspace))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def _remove_stale_scratch() -> None:
    """Scratch directories of runners whose process is gone (a driver or node killed mid-cell)."""
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        pid = path.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
