"""The Strategy type every scaffold is (the one Attempt record every strategy returns is the run's:
:mod:`physlab.run.attempt`, named here too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Generic, Self, TypeVar

from physlab.run.attempt import Attempt, AttemptStatus
from physlab.run.environment import RunEnvironment
from physlab.run.progress import ProgressView, RunView
from physlab.strategies.params import StrategyParams

__all__ = ["Attempt", "AttemptStatus", "Strategy"]

P = TypeVar("P", bound=StrategyParams)


class Strategy(Generic[P]):
    """A scaffold, built with its parameters. ``run`` receives the run context (problem, models,
    budget, sandbox, grader, workspace) built by the runner and returns one Attempt. Prompts are
    built from ``ctx.problem``, the public view: the reference answer is never shown to a model.

    A subclass sets ``name`` (its ``--strategy``), ``Params`` (its parameter model) and a one-line
    docstring (``physlab strategies list``), and is registered in ``physlab.strategies.registry``.
    It says whether it continues a run from what its workspace holds (``resumable``: ``--resume``
    then continues it; any other strategy's run is started over, never one that has its answer) and
    may draw its own live panel (``live_view``)."""

    name: ClassVar[str]
    Params: ClassVar[type[StrategyParams]] = StrategyParams
    resumable: ClassVar[bool] = False

    @classmethod
    def live_view(cls) -> ProgressView:
        """What ``--console live`` draws while this strategy runs: its steps, rounds and calls."""
        return RunView(cls.name)

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else self.Params()  # type: ignore[assignment]

    @classmethod
    def configured(cls, values: Mapping[str, Any] | None = None) -> Self:
        """The strategy with the user's parameter values (one UserError line when one is bad)."""
        return cls(cls.Params.parse(cls.name, values))  # type: ignore[arg-type]

    async def run(self, ctx: RunEnvironment) -> Attempt:
        raise NotImplementedError
