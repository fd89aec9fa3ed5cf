"""`tpbench-weak`: TPBench sampling-based search with a simple weak verifier (§3.5).

Stage 1: N candidates, grouped by their outputs at M test points (see tpbench_common).
Stage 2: each distinct candidate is judged k_verif (10) times by the model (role ``verifier``);
each judgement uses one of the three verification prompts, drawn with the seeded RNG, and answers
yes/no; the score is the fraction of yes among the judgements that answered. The classes scoring
within ``delta`` of the best are kept (default 0.05; with k_verif=10 that is "the top score").
Stage 3: if more than one is kept, a pairwise tie-break (k_tie votes per pair, role ``tiebreaker``)
picks the final answer.
"""

from __future__ import annotations

import random
import time
from typing import Any, Awaitable, Callable

from physlab.strategies.base import Attempt
from physlab.strategies.tpbench.pool import (
    TPBENCH_PARAMS, Pool, attempt_from_group, build_pool, pool_details, tpbench_sizes,
)
from physlab.strategies.tpbench.select import pairwise_tie_break, parse_yes_no, select_best
from physlab.strategies.tpbench_common import (
    answer_requirements, ask, budget_reason, check_known_params, concurrency, gather_bounded,
    model_settings, param_float, param_int, render,
)

NAME = "tpbench-weak"
VARIANTS = ("weak_verify_1", "weak_verify_2", "weak_verify_3")

# A scorer gets (ctx, pool, group, k_verif, rng) and returns the job factories for one group plus
# a function turning their outcomes into (score or None, per-check records).
Scorer = Callable[..., Any]


def verifier_params(ctx: Any, name: str, extra: tuple[str, ...] = ()) -> tuple[int, float, int]:
    check_known_params(ctx, name, TPBENCH_PARAMS + ("k_verif", "delta", "k_tie") + extra)
    k_verif = param_int(ctx, name, "k_verif", 10, minimum=1)
    delta = param_float(ctx, name, "delta", 0.05, minimum=0.0, maximum=1.0) or 0.0
    k_tie = param_int(ctx, name, "k_tie", 5, minimum=1)
    return k_verif, delta, k_tie


async def verify_and_select(ctx: Any, name: str, pool: Pool, m: int, k_verif: int, delta: float,
                            k_tie: int, make_jobs: Callable[[int, int, random.Random], list],
                            score_of: Callable[[list], tuple[float | None, list]],
                            started: float) -> Attempt:
    """Stages 2 and 3 for either verifier; ``make_jobs(group, k, rng)`` returns k job factories
    and ``score_of(outcomes)`` their score (None when no check finished)."""
    rng = random.Random(ctx.seed)
    details: dict[str, Any] = {**pool_details(pool, m), "k_verif": k_verif, "delta": delta,
                               "k_tie": k_tie}
    if not pool.groups:
        return attempt_from_group(ctx, name, pool, None, started=started,
                                  reason="no_valid_candidate", details=details)
    jobs: list[Callable[[], Awaitable[Any]]] = []
    owners: list[int] = []
    for g in range(len(pool.groups)):
        group_jobs = make_jobs(g, k_verif, rng)
        jobs.extend(group_jobs)
        owners.extend([g] * len(group_jobs))
    outcomes = await gather_bounded(jobs, concurrency(ctx, name))
    budget_hit = next((o.error for o in outcomes if o.budget), None)
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
        return attempt_from_group(ctx, name, pool, 0, started=started, reason=reason,
                                  details=details, partial=True)
    best = select_best(scores, delta)
    details["best_groups"] = best
    chosen = best[0]
    partial = budget_hit is not None
    reason = "verified"
    if len(best) > 1:
        chosen, record, tie_budget = await pairwise_tie_break(ctx, name, pool, best, k_tie, scores)
        details["tie_break"] = record
        partial = partial or tie_budget is not None
        budget_hit = budget_hit or tie_budget
        reason = "tie_break"
    if budget_hit is not None:
        reason = budget_reason(budget_hit)
    return attempt_from_group(ctx, name, pool, chosen, started=started, reason=reason,
                              details=details, partial=partial)


class TPBenchWeak:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        k_verif, delta, k_tie = verifier_params(ctx, NAME)
        n, m = tpbench_sizes(ctx, NAME)
        started = time.monotonic()
        pool = await build_pool(ctx, NAME, n, m)
        settings = model_settings(ctx, NAME)
        problem = ctx.problem.statement.strip()
        requirements = answer_requirements(ctx.problem)

        def make_jobs(g: int, k: int, rng: random.Random) -> list:
            solution = pool.representative(g).text or ""
            jobs = []
            for _ in range(k):
                variant = rng.choice(VARIANTS)
                prompt = render(variant, problem=problem, requirements=requirements,
                                solution=solution)

                def job(prompt: str = prompt, variant: str = variant):
                    async def run() -> tuple[str, str]:
                        text, _ = await ask(ctx, "verifier", prompt, settings=settings)
                        return variant, text
                    return run
                jobs.append(job())
            return jobs

        def score_of(outcomes: list) -> tuple[float | None, list]:
            votes = []
            records = []
            for o in outcomes:
                if not o.ok:
                    records.append({"error": str(o.error)[:200]})
                    continue
                variant, text = o.value
                vote = parse_yes_no(text)
                records.append({"variant": variant, "vote": vote})
                # An answer without a verdict counts as "no": the verifier did not endorse it.
                votes.append(vote or 0)
            return (sum(votes) / len(votes) if votes else None), records

        return await verify_and_select(ctx, NAME, pool, m, k_verif, delta, k_tie, make_jobs,
                                       score_of, started)


def strategy() -> TPBenchWeak:
    return TPBenchWeak()
