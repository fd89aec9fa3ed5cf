"""TPBench stages 2-3 helpers (seed 002, §3.5, Algorithm 2): reading the verifiers' JSON verdicts,
keeping the classes within delta of the best score, and the pairwise tie-break."""

from __future__ import annotations

import re
from typing import Any

from physlab.strategies.tpbench.pool import Pool
from physlab.strategies.tpbench_common import (
    answer_requirements, ask, concurrency, gather_bounded, model_settings, parse_json_object,
    render,
)

def parse_yes_no(text: str | None) -> int | None:
    """1/0 from {"is_solution_correct": "yes"|"no"} (None when the reply has no verdict)."""
    obj = parse_json_object(text)
    value: Any = obj.get("is_solution_correct") if obj else None
    if value is None and text:
        found = re.findall(r'is_solution_correct"?\s*[:=]\s*"?(yes|no|true|false)', text, re.I)
        value = found[-1] if found else None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in {"yes", "true", "1"}:
        return 1
    if isinstance(value, str) and value.strip().lower() in {"no", "false", "0"}:
        return 0
    return None


def parse_choice(text: str | None) -> int | None:
    """1 or 2 from {"correct_attempt": ...} (None when the reply has no choice)."""
    obj = parse_json_object(text)
    value: Any = obj.get("correct_attempt") if obj else None
    if value is None and text:
        found = re.findall(r'correct_attempt"?\s*[:=]\s*"?([12])', text)
        value = found[-1] if found else None
    try:
        choice = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return choice if choice in (1, 2) else None


def select_best(scores: dict[int, float], delta: float) -> list[int]:
    """Stage 2: the groups scoring within ``delta`` of the best score."""
    if not scores:
        return []
    top = max(scores.values())
    return sorted(g for g, s in scores.items() if s >= top - delta - 1e-12)


async def pairwise_tie_break(ctx: Any, strategy: str, pool: Pool, groups: list[int],
                             k_tie: int, scores: dict[int, float]
                             ) -> tuple[int, dict[str, Any], BaseException | None]:
    """Stage 3: every unordered pair of the best groups is compared k_tie times by the model; the
    pair's majority winner gets the matchup; the group with the most matchups wins (ties: higher
    verifier score, then the larger group, then the lower group number).

    The two attempts swap places on alternate votes so a position bias cannot decide a matchup.
    """
    problem = ctx.problem.statement.strip()
    requirements = answer_requirements(ctx.problem)
    settings = model_settings(ctx, strategy)
    pairs = [(a, b) for i, a in enumerate(groups) for b in groups[i + 1:]]
    jobs = []
    meta: list[tuple[int, int, bool]] = []
    for a, b in pairs:
        for j in range(k_tie):
            swapped = j % 2 == 1
            first, second = (b, a) if swapped else (a, b)
            prompt = render("tiebreak", problem=problem, requirements=requirements,
                            attempt_1=pool.representative(first).text or "",
                            attempt_2=pool.representative(second).text or "")

            def job(prompt: str = prompt):
                async def run() -> str:
                    text, _ = await ask(ctx, "tiebreaker", prompt, settings=settings)
                    return text
                return run
            jobs.append(job())
            meta.append((a, b, swapped))
    outcomes = await gather_bounded(jobs, concurrency(ctx, strategy))
    budget_hit = next((o.error for o in outcomes if o.budget), None)
    tally: dict[tuple[int, int], list[int]] = {p: [0, 0] for p in pairs}
    for (a, b, swapped), out in zip(meta, outcomes):
        choice = parse_choice(out.value) if out.ok else None
        if choice is None:
            continue
        a_won = (choice == 1) != swapped
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
