"""TPBench stages 2-3 (seed 002, §3.5, Algorithm 2): score every distinct candidate with a
verifier, keep the classes within delta of the best score, and break ties pairwise. The
verifiers' and tie-breakers' replies are pydantic models (structured output), not parsed text."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai.exceptions import UnexpectedModelBehavior

from physlab.llm.usage import Usage
from physlab.run.checkpoints import record_as_they_came
from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt
from physlab.strategies.params import TPBENCH, param
from physlab.strategies.sampling import (
    answer_requirements,
    ask_structured,
    budget_reason,
    gather_bounded,
    model_settings,
    render,
)
from physlab.strategies.tpbench.candidates import Pool, TPBenchParams, attempt_from_group, pool_details

Job = Callable[[], Awaitable[Any]]


class VerifierParams(TPBenchParams):
    k_verif: int = param(10, "Verifications of each distinct candidate (k_verif).",
                         f"{TPBENCH} §3.5, stage 2: 'queried k_verif times (here 10)'", ge=1)
    delta: float = param(0.05, "Classes scoring within delta of the best go on to the tie-break.",
                         f"{TPBENCH} §3.5, stage 2: delta = 0.05", ge=0.0, le=1.0)
    k_tie: int = param(1, "Comparisons of each pair of best classes in the tie-break (k_tie); with more than "
                          "one the two attempts swap places on alternate comparisons.",
                       f"{TPBENCH} Algorithm 2, lines 15-16: one comparison C_ij per pair (§3.5's text names "
                       "k_tie without a number)", ge=1)


class TieBreakChoice(BaseModel):
    """The tie-breaker's decision between two attempts."""

    analysis: str = Field(description="Where the other attempt goes wrong (LaTeX for mathematics).")
    correct_attempt: Literal[1, 2] = Field(description="The attempt that is correct (or closer to correct).")


def select_best(scores: dict[int, float], delta: float) -> list[int]:
    """Stage 2: the groups scoring within ``delta`` of the best score."""
    if not scores:
        return []
    top = max(scores.values())
    return sorted(g for g, s in scores.items() if s >= top - delta - 1e-12)


async def pairwise_tie_break(ctx: RunEnvironment, strategy: str, params: VerifierParams, pool: Pool,
                             groups: list[int], scores: dict[int, float]
                             ) -> tuple[int, dict[str, Any], BaseException | None]:
    """Stage 3: every unordered pair of the best groups is compared k_tie times by the model; the
    pair's majority winner gets the matchup; the group with the most matchups wins (ties: higher
    verifier score, then the larger group, then the lower group number).

    The two attempts swap places on alternate votes so a position bias cannot decide a matchup.
    """
    problem = ctx.problem.statement.strip()
    requirements = answer_requirements(ctx.problem)
    settings = model_settings(params)
    pairs = [(a, b) for i, a in enumerate(groups) for b in groups[i + 1:]]
    jobs: list[Job] = []
    meta: list[tuple[int, int, bool]] = []
    for a, b in pairs:
        for j in range(params.k_tie):
            swapped = j % 2 == 1
            first, second = (b, a) if swapped else (a, b)
            prompt = render("tiebreak", problem=problem, requirements=requirements,
                            attempt_1=pool.representative(first).text or "",
                            attempt_2=pool.representative(second).text or "")

            def job(prompt: str = prompt) -> Job:
                async def run() -> int | None:
                    try:
                        reply = await ask_structured(ctx, "tiebreaker", prompt, TieBreakChoice,
                                                     tool="choose_attempt", settings=settings)
                    except UnexpectedModelBehavior:  # no valid choice after the retries: no vote
                        return None
                    return reply.correct_attempt
                return run
            jobs.append(job())
            meta.append((a, b, swapped))
    outcomes = await gather_bounded(jobs, params.concurrency)
    budget_hit = next((o.error for o in outcomes if o.budget), None)
    tally: dict[tuple[int, int], list[int]] = {p: [0, 0] for p in pairs}
    for (a, b, swapped), out in zip(meta, outcomes):
        if not out.ok or out.value is None:
            continue
        a_won = (out.value == 1) != swapped
        tally[(a, b)][0 if a_won else 1] += 1
    wins = {g: 0 for g in groups}
    matchups = []
    for (a, b), (va, vb) in tally.items():
        winner = a if va > vb else b if vb > va else None
        if winner is not None:
            wins[winner] += 1
        matchups.append({"a": a, "b": b, "votes_a": va, "votes_b": vb, "winner": winner})
    best = sorted(groups, key=lambda g: (-wins[g], -scores.get(g, 0.0),
                                         -len(pool.groups[g]), g))[0]
    return best, {"matchups": matchups, "wins": wins}, budget_hit


async def verify_and_select(ctx: RunEnvironment, strategy: str, params: VerifierParams, pool: Pool,
                            make_jobs: Callable[[int, int, random.Random], list[Job]],
                            score_of: Callable[[list], tuple[float | None, list]],
                            started: float) -> Attempt:
    """Stages 2 and 3 for either verifier; ``make_jobs(group, k, rng)`` returns k job factories
    and ``score_of(outcomes)`` their score (None when no check finished)."""
    rng = random.Random(ctx.seed)
    details: dict[str, Any] = {**pool_details(pool, params.n_points), "k_verif": params.k_verif,
                               "delta": params.delta, "k_tie": params.k_tie}
    if not pool.groups:
        return attempt_from_group(ctx, strategy, pool, None, started=started,
                                  reason="no_valid_candidate", details=details)
    jobs: list[Job] = []
    owners: list[int] = []
    for g in range(len(pool.groups)):
        group_jobs = make_jobs(g, params.k_verif, rng)
        jobs.extend(group_jobs)
        owners.extend([g] * len(group_jobs))
    finished: list[tuple[int, Usage]] = []
    outcomes = await gather_bounded(jobs, params.concurrency,
                                    on_done=lambda i, _: finished.append((i, ctx.usage.total())))
    budget_hit = next((o.error for o in outcomes if o.budget), None)

    def top_scored(done: list[int]) -> int | None:  # the best class once these checks were back
        running = {g: score_of([outcomes[i] for i in done if owners[i] == g]) for g in set(owners)}
        scored = {g: sc for g, (sc, _) in running.items() if sc is not None}
        return min(scored, key=lambda g: (-scored[g], -len(pool.groups[g]), g)) if scored else None

    record_as_they_came(ctx, finished, top_scored, lambda g: (pool.representative(g).code,
                                                              pool.representative(g).text), "verification")
    scores: dict[int, float] = {}
    checks: dict[int, list] = {}
    for g in range(len(pool.groups)):
        mine = [o for o, owner in zip(outcomes, owners) if owner == g]
        score, records = score_of(mine)
        checks[g] = records
        if score is not None:
            scores[g] = score
    details["scores"] = {str(g): s for g, s in scores.items()}
    details["checks"] = {str(g): r for g, r in checks.items()}
    if not scores:  # no verification finished: fall back to the majority class
        details["fallback"] = "majority (no verification finished)"
        reason = budget_reason(budget_hit) if budget_hit is not None else "fallback_vote"
        attempt = attempt_from_group(ctx, strategy, pool, 0, started=started, reason=reason,
                                     details=details, partial=True)
        attempt.ran_as = "majority vote (no verification finished)"  # never reported as the verifier
        return attempt
    best = select_best(scores, params.delta)
    details["best_groups"] = best
    chosen = best[0]
    partial = budget_hit is not None
    reason = "verified"
    if len(best) > 1:
        chosen, record, tie_budget = await pairwise_tie_break(ctx, strategy, params, pool, best, scores)
        details["tie_break"] = record
        partial = partial or tie_budget is not None
        budget_hit = budget_hit or tie_budget
        reason = "tie_break"
    if budget_hit is not None:
        reason = budget_reason(budget_hit)
    return attempt_from_group(ctx, strategy, pool, chosen, started=started, reason=reason,
                              details=details, partial=partial)
