"""What a strategy receives from the runner: the seam between scaffolds and the infrastructure.

The runner (``physlab.strategies.runner``) builds a :class:`RunContext` for one run; strategies
never construct models, sandboxes or graders themselves. Everything here is per run: two
concurrent runs share nothing except the explicitly shared in-flight limiter and sandbox pool.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from pydantic_ai.models import Model

from physlab.grading.verdict import Verdict
from physlab.llm.usage import Budget, Usage
from physlab.problems.model import Problem
from physlab.sandbox.core import Sandbox


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

    def grace(self, calls: int = 1) -> AbstractContextManager[None]:
        """Allow a bounded number of calls past the budget (the lab's forced formatter)."""


class BoundGrader(Protocol):
    """The grader bound to this run's problem. Strategies see verdicts, never the reference."""

    async def grade(self, candidate_code: str) -> Verdict: ...


class Equivalence(Protocol):
    """Reference-free comparison of two candidate answers (for votes and aggregation)."""

    async def equivalent(self, code_a: str, code_b: str) -> bool: ...


EventSink = Callable[..., None]


@dataclass
class RunContext:
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
    params: dict[str, Any] = field(default_factory=dict)
    events: EventSink = lambda *a, **k: None  # noqa: E731 - progress/console events (kind, **data)
    # The reference solution for SCALAR's reference-conditioned Critic: the one prompt that may hold
    # the answer key, and only when the run asks for it (--param critic_reference=true). The runner
    # fills it explicitly; everywhere else it stays None.
    critic_reference: str | None = None
