"""One sweep cell run in this process: the runner called with what the cells of a process share,
and its record turned into the row the results database keeps.

Both executors run a cell through here: the sweep's own process (``physlab.bench.sweep``) and each
node of a Ray cluster (``physlab.bench.ray_node``), so a cell is the same run wherever it ran.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from physlab.bench.store import CellResult, CellSpec
from physlab.llm.usage import CallRecord
from physlab.run.summary import read_calls

if TYPE_CHECKING:
    from pydantic_ai.concurrency import AbstractConcurrencyLimiter

    from physlab.bench.sweep_config import SweepConfig
    from physlab.run.options import OutputMode

SolveFn = Callable[..., Awaitable[Any]]  # physlab.run.runner.run's signature (tests wrap it)


class BoundedSandbox:
    """The shared sandbox behind a semaphore: at most ``workers`` sandbox runs at once across all
    cells of this process. Other attributes pass through to the wrapped sandbox."""

    def __init__(self, inner: Any, workers: int, _sem: asyncio.Semaphore | None = None):
        self._inner = inner
        self._sem = _sem or asyncio.Semaphore(workers)
        self.workers = workers

    @property
    def trusted(self) -> BoundedSandbox:
        """The grader's pool for trusted code (its own workers), under the same bound."""
        return BoundedSandbox(self._inner.trusted, self.workers, self._sem)

    async def run(self, *args, **kwargs):
        async with self._sem:
            return await self._inner.run(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class CellShared:
    """What the cells of one process share: the in-flight limiter, the bounded sandbox, one
    grader on it (made for the first cell that grades), the provider models by name, the model
    registry read once (and the file it came from, recorded in each cell's options), the solve
    function."""

    limiter: AbstractConcurrencyLimiter | None
    sandbox: BoundedSandbox
    providers: dict[str, Any] = field(default_factory=dict)
    registry: Any = None
    registry_path: str | None = None
    solve: SolveFn | None = None
    _grader: Any = None

    def grader(self) -> Any:
        """One grader for all the cells, on the bounded sandbox (so grading work queues with the
        other sandbox work instead of oversubscribing cores); each run binds it to its problem."""
        if self._grader is None:
            from physlab.grading import Grader

            self._grader = Grader(sandbox=cast(Any, self.sandbox))  # a BoundedSandbox: a Sandbox behind a bound
        return self._grader


@dataclass
class CellOutcome:
    """How a cell's run ended: ``result`` when it finished (whatever its status), ``error`` (the
    traceback) when it crashed."""

    result: CellResult | None = None
    error: str | None = None


async def run_cell(cfg: SweepConfig, spec: CellSpec, problem: Any, workspace: Path, shared: CellShared,
                   on_call: Callable[[CallRecord], None] | None = None) -> CellOutcome:
    """Run ``spec`` on ``problem`` in ``workspace`` (an unfinished earlier try there is started
    over). Bad input (UserError) and cancellation propagate: the caller gives the cell back."""
    from physlab.run.options import RunOptions
    from physlab.run.runner import Shared
    from physlab.strategies import registry

    start = time.monotonic()
    seen: list[CallRecord] = []

    def recorded(rec: CallRecord) -> None:
        seen.append(rec.model_copy(update={"request": None, "response": None}))
        if on_call is not None:
            on_call(rec)

    try:
        options = RunOptions(strategy=spec.strategy, model=spec.model, role_models=dict(cfg.role_models),
                             api_base=cfg.api_base, api_key_env=cfg.api_key_env,
                             output_mode=cast("OutputMode | None", cfg.output_mode),  # RunOptions checks it
                             models_config=shared.registry_path, params=dict(cfg.params), budget=cfg.budget,
                             seed=cfg.seed + spec.repeat, tools=spec.tools, protocol=cfg.protocol, judge=cfg.judge)
        run_shared = Shared(limiter=shared.limiter, sandbox=shared.sandbox, grader=shared.grader(),
                            providers=shared.providers, registry=shared.registry, on_call=recorded)
        solve = cast(SolveFn, shared.solve)
        record = await solve(problem, registry.build(spec.strategy, cfg.params, cfg.protocol), options, run_shared,
                             workspace=workspace,
                             replace=True)  # an unfinished earlier try: the cell restarts from scratch
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a crashed cell is recorded, the sweep goes on
        from physlab.errors import UserError

        if isinstance(exc, UserError):
            raise
        return CellOutcome(error="".join(traceback.format_exception(exc)))
    calls = seen or read_calls(workspace)  # (a solve function without on_call: from the file)
    return CellOutcome(result=CellResult.from_record(record, workspace=str(workspace), calls=calls,
                                                     wall_s=time.monotonic() - start,
                                                     sandbox_backend=_backend(shared.sandbox)))


def provider_specs(cfg: SweepConfig, registry: Any) -> list[str]:
    """The models of the sweep that go to a provider (not scripted, not replayed), roles' too."""
    from physlab.llm.models import parse_spec

    specs = dict.fromkeys([*cfg.models, *registry.roles.values(), *cfg.role_models.values()])
    return [s for s in specs if parse_spec(s)[0] not in ("scripted", "replay")]


async def open_providers(cfg: SweepConfig, registry: Any, stack: AsyncExitStack) -> dict[str, Any]:
    """One provider model per model name, open until ``stack`` closes (a missing API key: UserError)."""
    from physlab.llm.models import RunModels, cap_field_for, open_provider

    out: dict[str, Any] = {}
    for spec in provider_specs(cfg, registry):
        defaults = registry.defaults_for(spec)
        api_base = RunModels.api_base_for(spec, defaults, cfg.api_base)
        out[spec] = await stack.enter_async_context(open_provider(
            spec, api_base=api_base, api_key_env=defaults.api_key_env or cfg.api_key_env, timeout_s=defaults.timeout_s,
            cap_field=cap_field_for(defaults, api_base), max_reply_bytes=defaults.max_reply_bytes))
    return out


def _backend(sandbox: Any) -> str | None:
    backend = getattr(sandbox, "backend", None)
    return backend if isinstance(backend, str) else None
