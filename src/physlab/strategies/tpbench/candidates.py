"""TPBench stage 1 (seed 002, §3.3-3.5): generate N candidates concurrently and group the
functionally identical ones with the grader's own equivalence (the filled templates compared in the
sandbox, numerically at M test points and symbolically where it can: the paper compares output
tuples at M points; two candidates that do not evaluate to numbers there are never "identical");
plus the parameters every TPBench strategy shares and the Attempt built from a chosen group."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from physlab.grading.extract import extract_code
from physlab.llm.usage import Usage
from physlab.run.checkpoints import record_as_they_came
from physlab.run.environment import RunEnvironment
from physlab.run.events import Candidates, Distinct
from physlab.strategies.base import Attempt, AttemptStatus
from physlab.strategies.params import TPBENCH, SamplingParams, param
from physlab.strategies.sampling import (
    answer_classes,
    answer_requirements,
    ask,
    budget_reason,
    error_text,
    final_answer_classes,
    finish,
    gather_bounded,
    model_settings,
    render,
)


class TPBenchParams(SamplingParams):
    n_samples: int = param(50, "Candidate solutions generated (N).", f"{TPBENCH} §3.3: N=50 candidates", ge=1)
    n_points: int = param(5, "Test points at which candidates must agree to be one class (M).",
                          f"{TPBENCH} §3.5, stage 1: M=5 test inputs", ge=1, le=100)


@dataclass
class Candidate:
    index: int
    text: str | None = None
    code: str | None = None
    error: str | None = None
    eval_error: str | None = None  # why the code is in no class
    group: int | None = None

    def summary(self) -> dict[str, Any]:
        return {"index": self.index, "group": self.group, "code": self.code,
                "error": self.error, "eval_error": self.eval_error}


@dataclass
class Pool:
    candidates: list[Candidate]
    groups: list[list[int]] = field(default_factory=list)  # indices into candidates, by size
    budget_hit: BaseException | None = None
    finished: list[tuple[int, Usage]] = field(default_factory=list)  # (candidate, spend then), as they came

    def representative(self, group: int) -> Candidate:
        return self.candidates[self.groups[group][0]]


async def generate_candidates(ctx: RunEnvironment, strategy: str, params: TPBenchParams, *, role: str = "generator",
                              finished: list[tuple[int, Usage]] | None = None
                              ) -> tuple[list[Candidate], BaseException | None]:
    """N independent solutions with the default generation prompt (run concurrently); each one that
    comes back is appended to ``finished`` with what the run had spent then."""
    prompt = render("tpbench_generate", problem=ctx.problem.statement.strip(),
                    requirements=answer_requirements(ctx.problem))
    settings = model_settings(params)

    def job() -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            text, _ = await ask(ctx, role, prompt, settings=settings)
            return text
        return run

    def arrived(i: int, out: Any) -> None:
        if finished is not None and out.ok:
            finished.append((i, ctx.usage.total()))

    outcomes = await gather_bounded([job() for _ in range(params.n_samples)], params.concurrency, on_done=arrived)
    candidates: list[Candidate] = []
    budget_hit = None
    for i, out in enumerate(outcomes):
        if out.ok:
            candidates.append(Candidate(index=i, text=out.value, code=extract_code(out.value)))
        else:
            if out.budget:
                budget_hit = budget_hit or out.error
            candidates.append(Candidate(index=i, error=error_text(out.error)))
    ctx.events(Candidates(strategy=strategy, generated=sum(c.text is not None for c in candidates)))
    return candidates, budget_hit


async def distinct_pool(ctx: RunEnvironment, strategy: str, params: TPBenchParams, candidates: list[Candidate],
                        budget_hit: BaseException | None = None) -> Pool:
    """Stage 1: group the candidates whose filled templates the grader finds equivalent.

    Candidates that failed to generate, have no code, or whose code does not run are left out of
    every group. Groups are ordered by size (largest first), ties by first index.
    """
    if not ctx.problem.has_template:  # nothing to evaluate: the "Final Answer:" lines decide
        return _pool(ctx, strategy, candidates, final_answer_classes([c.text for c in candidates]), budget_hit)
    groups = await answer_classes(ctx, [c.code for c in candidates], n_points=params.n_points)
    grouped = {i for g in groups for i in g}
    for i, c in enumerate(candidates):
        if c.code and i not in grouped:
            c.eval_error = "no valid answer: the filled template does not run or returns no answer"
    return _pool(ctx, strategy, candidates, groups, budget_hit)


def _pool(ctx: RunEnvironment, strategy: str, candidates: list[Candidate], groups: list[list[int]],
          budget_hit: BaseException | None) -> Pool:
    for g, members in enumerate(groups):
        for pos in members:
            candidates[pos].group = g
    ctx.events(Distinct(strategy=strategy, groups=[len(g) for g in groups]))
    return Pool(candidates=candidates, groups=groups, budget_hit=budget_hit)


def pool_details(pool: Pool, m: int) -> dict[str, Any]:
    return {
        "n_generated": sum(c.text is not None for c in pool.candidates),
        "n_requested": len(pool.candidates),
        "n_points": m,
        "group_sizes": [len(g) for g in pool.groups],
        "candidates": [c.summary() for c in pool.candidates],
    }


async def build_pool(ctx: RunEnvironment, strategy: str, params: TPBenchParams) -> Pool:
    """Stage 1, and its checkpoints: after each sample came back, the majority class so far."""
    finished: list[tuple[int, Usage]] = []
    candidates, budget_hit = await generate_candidates(ctx, strategy, params, finished=finished)
    pool = await distinct_pool(ctx, strategy, params, candidates, budget_hit)
    pool.finished = finished
    group_of = {i: g for g, members in enumerate(pool.groups) for i in members}

    def majority(arrived: list[int]) -> int | None:  # the vote's rule: most members, then the earliest
        members: dict[int, list[int]] = {}
        for i in arrived:
            if i in group_of:
                members.setdefault(group_of[i], []).append(i)
        return min(members, key=lambda g: (-len(members[g]), min(members[g]))) if members else None

    record_as_they_came(ctx, finished, majority, lambda g: (pool.representative(g).code,
                                                            pool.representative(g).text), "sample")
    return pool


def attempt_from_group(ctx: RunEnvironment, strategy: str, pool: Pool, group: int | None, *,
                       started: float, reason: str, details: dict[str, Any],
                       partial: bool = False) -> Attempt:
    if group is None:
        status: AttemptStatus = "no_answer"
        reason = budget_reason(pool.budget_hit) if pool.budget_hit is not None else reason
        return finish(ctx, strategy, status, reason, started=started, details=details)
    rep = pool.representative(group)
    details = {**details, "chosen_group": group, "chosen_candidate": rep.index}
    partial = partial or pool.budget_hit is not None
    status = "partially_complete" if partial else "complete"
    if partial and pool.budget_hit is not None:
        reason = budget_reason(pool.budget_hit)
    return finish(ctx, strategy, status, reason, started=started, answer_text=rep.text,
                  answer_code=rep.code, details=details)


