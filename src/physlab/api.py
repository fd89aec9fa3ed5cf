"""PhysLab from Python (a notebook, a script): load problems, solve one, grade an answer.

The same machinery as the CLI -- ``physlab solve`` is :func:`solve_async` plus printing, ``physlab
grade`` is :func:`grade_async` -- with Python values in and out: a :class:`~physlab.problems.Problem`
or a spec string in, a :class:`~physlab.run.record.RunRecord` (the run's metrics.json) or a
:class:`~physlab.grading.verdict.Verdict` out. Each async function has a blocking twin of the same
name without ``_async``; the twins also work where an event loop is already running (Jupyter): the
work then runs on its own loop in a worker thread. docs/api.md has an example.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from physlab.errors import UserError

if TYPE_CHECKING:
    from physlab.grading.verdict import Verdict
    from physlab.llm.usage import Budget
    from physlab.problems.model import Problem
    from physlab.run.record import RunRecord

T = TypeVar("T")


def load_problems(spec: str | os.PathLike[str]) -> list[Problem]:
    """Problems from a suite name (``"examples"``), a directory, a file (every problem in it), or
    one problem (``"examples/sm_ising_1d"``, ``"file.json#ID"``)."""
    from physlab.problems import load_suite, resolve_problem

    text = str(spec)
    path = Path(text).expanduser()
    if not path.exists() and ("#" in text or "/" in text):
        return [resolve_problem(text)]
    return load_suite(text)


def load_problem(spec: str | os.PathLike[str]) -> Problem:
    """One problem: a file holding one, ``FILE#ID``, ``SUITE/ID`` or ``DIR/ID``."""
    from physlab.problems import resolve_problem

    return resolve_problem(str(spec))


def _problem(problem: Any) -> Problem:
    from physlab.problems.model import Problem

    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, (str, os.PathLike)):
        return load_problem(problem)
    raise UserError(f"expected a Problem, a problem file or SUITE/ID, got {type(problem).__name__}")


async def solve_async(problem: Problem | str | os.PathLike[str], strategy: str | None = None,
                      model: str | None = None, *,
                      workspace: str | os.PathLike[str] | None = None, budget: Budget | None = None,
                      max_calls: int | None = None, max_tokens: int | None = None, max_cost: float | None = None,
                      max_wall: float | None = None, params: dict[str, Any] | None = None, seed: int | None = None,
                      api_base: str | None = None, api_key_env: str | None = None,
                      resume: str | os.PathLike[str] | None = None, replace: bool = False,
                      events: Callable[..., None] | None = None, role_models: dict[str, str] | None = None,
                      output_mode: str | None = None, max_in_flight: int | None = None,
                      models_config: str | os.PathLike[str] | None = None, tools: str | None = None,
                      protocol: str | None = None, yes: bool = False) -> RunRecord:
    """Run ``strategy`` (default ``lab``) with ``model`` on ``problem``, exactly as ``physlab solve`` does: a run
    workspace is written (``workspace``, default ``runs/<time>-<problem>-<strategy>/``) and the
    answer graded when the problem has a reference. Returns the run's record (what metrics.json
    holds): ``status``, ``verdict``, ``usage`` and ``usage_by_role``, ``answer_code``/``answer_text``
    (as written to answer.py / ANSWER.md), ``workspace``.

    ``model``: ``provider:model``, ``scripted:NAME`` or ``replay:RUN_DIR`` (default:
    ``$PHYSLAB_MODEL``). ``budget`` or the ``max_*`` shortcuts cap calls, tokens, cost (USD) and
    wall time (s). ``params``: the strategy's parameters (``physlab strategies show NAME`` lists them).
    ``events``: called as ``events(kind, **data)`` for progress (run_started, step, ...: the kinds and fields
    of the typed events in :mod:`physlab.run.events`).
    ``role_models``: ``{role: "provider:model"}`` for roles played by another model;
    ``output_mode``: tool | native | constrained | prompted | auto (docs/serving.md). ``tools``: the lab's tools beyond
    Python, as ``--tools`` writes them (``"cas,literature,corpus=DIR,web"``, ``"none"``; docs/tools.md).
    ``protocol``: ``"physlab"`` (PhysLab's defaults) or ``"paper"`` (the strategy at its published setting;
    ``params`` given still win). ``resume``: a run directory to continue with the options it recorded (any
    given here override them); a record not written on this machine (or edited since) that chooses the
    server, the key variable, the registry or the tools is refused (``UserError``) unless ``yes`` or those
    options are given here."""
    from physlab.run.entry import Given, prepare
    from physlab.run.events import Notice, legacy
    from physlab.run.runner import Shared, run
    from physlab.strategies import registry

    limits = {k: v for k, v in (("max_calls", max_calls), ("max_tokens", max_tokens), ("max_cost_usd", max_cost),
                                ("max_wall_s", max_wall)) if v is not None}
    if budget is not None and limits:
        raise UserError("give either budget=Budget(...) or the max_* shortcuts, not both", field="budget")
    given = Given(strategy=strategy, model=model, api_base=api_base, api_key_env=api_key_env,
                  output_mode=output_mode, role_models=role_models, models_config=models_config,
                  max_in_flight=max_in_flight, seed=seed, params=params, tools=tools, protocol=protocol,
                  budget=budget.model_dump(exclude_none=True) if budget is not None else limits)
    if resume is None and not (model or os.environ.get("PHYSLAB_MODEL")):
        raise UserError("no model given: pass model='provider:model' (or scripted:NAME, replay:PATH)", field="model")
    # (a resume: what it changes is said as a "notice" event as it starts)
    options, scaffold = prepare(given, Path(resume) if resume is not None else None, registry,
                                name=lambda option: option, yes=yes)
    prob = _problem(problem)
    sink = legacy(events) if events is not None else None  # the documented events(kind, **data)
    if sink is not None:
        for line in registry.protocol_notes(options.strategy, options.params, options.protocol):
            sink(Notice(text=line))
    return await run(prob, scaffold, options, Shared(events=sink),
                     workspace=resume if resume is not None else workspace, resume=resume is not None,
                     replace=replace)


async def grade_async(problem: Problem | str | os.PathLike[str], candidate: str | os.PathLike[str], *,
                      timeout: float = 30.0) -> Verdict:
    """Grade ``candidate`` against ``problem``'s reference, exactly as ``physlab grade`` does (the
    candidate's code runs in the sandbox). ``candidate`` is Python source or model text (its last
    fenced python block, or its final answer), or a ``pathlib.Path`` to a file holding either."""
    from physlab.grading.grader import Grader

    prob = _problem(problem)
    if prob.reference is None:
        raise UserError(f"problem '{prob.id}' has no reference answer: nothing to grade against", path=prob.path)
    if isinstance(candidate, os.PathLike):
        try:
            candidate = Path(candidate).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UserError(f"cannot read the candidate ({exc.strerror or exc})", path=candidate) from None
    if not isinstance(candidate, str):
        raise UserError(f"expected the candidate as text or a Path, got {type(candidate).__name__}", field="candidate")
    return await Grader(timeout_s=timeout).grade(prob, candidate)


def _blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to the end from synchronous code, inside a running loop too (Jupyter): then on
    its own loop in a worker thread, since a running loop cannot be re-entered."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it is
            box["error"] = exc

    worker = threading.Thread(target=target, name="physlab-api", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def solve(problem: Problem | str | os.PathLike[str], strategy: str | None = None, model: str | None = None,
          **options: Any) -> RunRecord:
    """Blocking :func:`solve_async` (same arguments)."""
    return _blocking(solve_async(problem, strategy, model, **options))


def grade(problem: Problem | str | os.PathLike[str], candidate: str | os.PathLike[str], *,
          timeout: float = 30.0) -> Verdict:
    """Blocking :func:`grade_async` (same arguments)."""
    return _blocking(grade_async(problem, candidate, timeout=timeout))
