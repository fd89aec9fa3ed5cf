"""What a strategy receives from the runner: the seam between scaffolds and the infrastructure.

The runner (``physlab.run.runner``) builds a :class:`RunEnvironment` for one run; strategies
never construct models, sandboxes or graders themselves. Everything here is per run: two
concurrent runs share nothing except the explicitly shared in-flight limiter and sandbox pool.
A strategy's parameters are not here: the strategy object is built with them (``Strategy.params``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic_ai.models import Model

from physlab.grading.verdict import Verdict
from physlab.llm.usage import Budget, Usage
from physlab.problems.model import Problem
from physlab.run.checkpoints import Checkpoint
from physlab.run.events import Emit, ignore
from physlab.sandbox.core import Sandbox
from physlab.tools.choice import ToolChoice


class ModelSource(Protocol):
    """Gives the pydantic-ai model to use for a role. Every request through it is recorded in
    calls.jsonl under that role, counted against the budget (raising BudgetExceeded when a limit
    is hit) and bounded by the in-flight cap."""

    name: str

    def for_role(self, role: str) -> Model: ...


class UsageMeter(Protocol):
    def by_role(self) -> dict[str, Usage]: ...

    def total(self) -> Usage: ...

    def check(self) -> None:
        """Raise BudgetExceeded if any limit is already reached (call between steps)."""

    def set_aside(self, *, calls: int = 0, share: float = 0.0) -> None:
        """Keep calls and a share of the token/cost caps for a last step (the lab's formatter)."""

    def finishing(self) -> AbstractContextManager[None]:
        """Requests inside may use what set_aside kept; no request ever goes past a cap."""

    def grace(self, calls: int = 1) -> AbstractContextManager[None]:
        """The old name of finishing(): grants nothing past a cap."""


class BoundGrader(Protocol):
    """The grader bound to this run's problem. Strategies see verdicts, never the reference."""

    async def grade(self, candidate_code: str) -> Verdict: ...


class Equivalence(Protocol):
    """Reference-free comparison of candidate answers: the grader's own, the one every clustering
    of a run uses (votes, aggregation, de-duplication). Answers it cannot show equal -- two that
    do not evaluate, say -- are never equivalent."""

    async def equivalent(self, code_a: str, code_b: str) -> bool: ...

    async def equivalence_classes(self, codes: list[str], *, n_points: int | None = None) -> list[list[int]]:
        """Indices of ``codes`` grouped by equivalence, in order of their first member (a code
        without a valid answer is in no group); ``n_points``: test points the numeric comparison
        needs (default: the grader's)."""


@dataclass
class RunEnvironment:
    problem: Problem  # public view: no reference, no solution
    workspace: Path
    models: ModelSource
    usage: UsageMeter
    budget: Budget
    sandbox: Sandbox
    grader: BoundGrader | None  # None when the problem has no reference
    equivalence: Equivalence
    seed: int = 0
    resume: bool = False
    events: Emit = ignore  # progress: typed events (physlab.run.events), for the console
    # The reference solution, for the one prompt that may hold the answer key (SCALAR's
    # reference-conditioned Critic). The runner fills it only when the strategy's parameters ask
    # for it (``StrategyParams.sees_reference``); everywhere else it stays None.
    reference_solution: str | None = None
    # Best answer so far, each time it changed (runs.checkpoints.record_best appends here).
    checkpoints: list[Checkpoint] = field(default_factory=list)
    # The tools beyond Python this run gives its roles (--tools, else the problem's default).
    tools: ToolChoice = field(default_factory=ToolChoice)
