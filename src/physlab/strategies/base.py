"""The Strategy type every scaffold is, and the one Attempt record every strategy returns."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Literal, Mapping, Self, TypeVar

from pydantic import BaseModel, Field

from physlab.grading.verdict import Verdict
from physlab.llm.usage import Usage
from physlab.runs.context import RunContext
from physlab.strategies.params import StrategyParams
from physlab.runs.checkpoints import Checkpoint

AttemptStatus = Literal[
    "complete",  # a final answer was produced the normal way
    "partially_complete",  # a budget ended the run; the best supported answer was written
    "no_answer",  # the run ended without a final answer
    "paused",  # the physicist paused it (the lab): no final answer yet, continue with --resume
    "error",  # the run failed (model errors exhausted retries, ...)
]


class Attempt(BaseModel):
    strategy: str
    model: str
    problem_id: str
    status: AttemptStatus
    stop_reason: str = ""
    answer_text: str | None = Field(default=None, description="Contents of ANSWER.md.")
    answer_code: str | None = Field(default=None, description="The filled template (answer.py).")
    verdict: Verdict | None = None
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    wall_s: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)
    checkpoints: list[Checkpoint] = Field(
        default_factory=list, description="Best answer so far, each time it changed (see runs.checkpoints).")
    ran_as: str | None = Field(
        default=None, description="What the run really was when a cap changed the strategy (TPBench's "
                                  "verifiers falling back to a majority vote, RSA stopping after round 1); "
                                  "None when it ran as named. The report never shows such a run under its "
                                  "full name.")
    reference_conditioned: bool = Field(
        default=False, description="A role saw the reference (SCALAR's paper setting): not a solver, never "
                                   "ranked beside solvers.")

    @property
    def usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_role.values():
            total = total.add(u)
        return total

    @property
    def has_answer(self) -> bool:
        return bool(self.answer_code or self.answer_text)


P = TypeVar("P", bound=StrategyParams)


class Strategy(Generic[P]):
    """A scaffold, built with its parameters. ``run`` receives the run context (problem, models,
    budget, sandbox, grader, workspace) built by the runner and returns one Attempt. Prompts are
    built from ``ctx.problem``, the public view: the reference answer is never shown to a model.

    A subclass sets ``name`` (its ``--strategy``), ``Params`` (its parameter model) and a one-line
    docstring (``physlab strategies list``), and is registered in ``physlab.strategies.registry``."""

    name: ClassVar[str]
    Params: ClassVar[type[StrategyParams]] = StrategyParams

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else self.Params()  # type: ignore[assignment]

    @classmethod
    def configured(cls, values: Mapping[str, Any] | None = None) -> Self:
        """The strategy with the user's parameter values (one UserError line when one is bad)."""
        return cls(cls.Params.parse(cls.name, values))  # type: ignore[arg-type]

    async def run(self, ctx: RunContext) -> Attempt:
        raise NotImplementedError
