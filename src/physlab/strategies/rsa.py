"""`rsa`: Recursive Self-Aggregation (Venkatraman et al., 2025).

Round 1 samples a population of N solutions. Each later round builds a new population of N: every
member is an aggregation of K candidates drawn without replacement from the previous population
(seeded RNG, ``ctx.seed``). After T rounds (N*T requests in all) the final answer is chosen by
majority vote over the grader's reference-free equivalence classes of the last population's
filled templates (so "(1-p)**2" and "1 - 2*p + p**2" vote together).

Parameters (``--param``): ``population`` N (default 6), ``subset_size`` K (2), ``rounds`` T (4)
-- the values of the physics-intern comparison (about 24 requests); the RSA paper used 16/4/10.
``--max-iterations`` sets T when ``rounds`` is not given.
"""

from __future__ import annotations

import random
import time
from typing import Any

from physlab.strategies.base import Attempt
from physlab.strategies.tpbench_common import (
    answer_requirements, ask, budget_reason, check_known_params, concurrency, error_text,
    extract_code, final_answer_line, finish, gather_bounded, model_settings, param_int, render,
)

NAME = "rsa"


async def equivalence_classes(ctx: Any, codes: list[str]) -> list[list[int]]:
    """Group codes by the run's reference-free equivalence (the grader's, never string match)."""
    # Identical strings are equivalent without asking: only distinct codes go to the grader.
    distinct: list[str] = []
    where: dict[str, int] = {}
    for code in codes:
        if code not in where:
            where[code] = len(distinct)
            distinct.append(code)
    eq = ctx.equivalence
    bulk = getattr(eq, "equivalence_classes", None)
    if bulk is not None:
        local = [list(c) for c in await bulk(distinct)]
    else:
        local = []
        for i, code in enumerate(distinct):
            for cls in local:
                if await eq.equivalent(distinct[cls[0]], code):
                    cls.append(i)
                    break
            else:
                local.append([i])
    member = {d: k for k, cls in enumerate(local) for d in cls}
    classes: dict[int, list[int]] = {}
    for i, code in enumerate(codes):
        if where[code] in member:  # codes the grader found invalid belong to no class
            classes.setdefault(member[where[code]], []).append(i)
    return sorted(classes.values(), key=lambda c: c[0])


async def vote(ctx: Any, texts: list[str]) -> tuple[int | None, list[list[int]]]:
    """Index (into ``texts``) of the majority answer and the classes it was chosen from.

    Templated problems vote over equivalence classes of the extracted code (texts without code are
    left out); open questions vote over the normalised "Final Answer:" line.
    """
    if ctx.problem.has_template:
        pos = [i for i, t in enumerate(texts) if extract_code(t)]
        if not pos:
            return None, []
        local = await equivalence_classes(ctx, [extract_code(texts[i]) or "" for i in pos])
        classes = [[pos[j] for j in cls] for cls in local]
    else:
        keyed: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            key = " ".join((final_answer_line(t) or t).split()).lower()
            keyed.setdefault(key, []).append(i)
        classes = list(keyed.values())
    if not classes:
        return None, []
    classes.sort(key=lambda c: (-len(c), c[0]))
    return classes[0][0], classes


class RSA:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        check_known_params(ctx, NAME, ["population", "subset_size", "rounds"])
        n = param_int(ctx, NAME, "population", 6, minimum=1)
        k = param_int(ctx, NAME, "subset_size", 2, minimum=1)
        # --max-iterations caps the rounds when --param rounds is not given
        t = param_int(ctx, NAME, "rounds", (ctx.params or {}).get("max_iterations", 4), minimum=1)
        if k > n:
            from physlab.errors import UserError
            raise UserError(f"strategy {NAME}: --param subset_size: expected at most "
                            f"population ({n}), got {k}")
        settings = model_settings(ctx, NAME)
        limit = concurrency(ctx, NAME)
        rng = random.Random(ctx.seed)
        started = time.monotonic()
        problem = ctx.problem
        requirements = answer_requirements(problem)
        statement = problem.statement.strip()

        def sample(prompt: str, role: str):
            async def run() -> str:
                text, _ = await ask(ctx, role, prompt, settings=settings)
                return text
            return run

        rounds: list[dict[str, Any]] = []
        first = render("rsa_generate", problem=statement, requirements=requirements)
        outcomes = await gather_bounded([sample(first, "generator") for _ in range(n)], limit)
        population = [o.value for o in outcomes if o.ok]
        budget_hit = next((o.error for o in outcomes if o.budget), None)
        rounds.append({"round": 1, "answers": [extract_code(p) for p in population],
                       "errors": [error_text(o.error) for o in outcomes if not o.ok]})
        ctx.events("round", strategy=NAME, round=1, population=len(population))

        for r in range(2, t + 1):
            if budget_hit is not None or len(population) < k:
                break
            subsets = [rng.sample(range(len(population)), k) for _ in range(n)]
            jobs = []
            for subset in subsets:
                shown = "\n\n".join(
                    f"--- Candidate solution {j + 1} ---\n{population[i].strip()}"
                    for j, i in enumerate(subset))
                prompt = render("rsa_aggregate", k=str(k), problem=statement, candidates=shown,
                                requirements=requirements)
                jobs.append(sample(prompt, "aggregator"))
            outcomes = await gather_bounded(jobs, limit)
            budget_hit = next((o.error for o in outcomes if o.budget), None)
            # A member whose aggregation failed keeps its predecessor, so the population stays N.
            new = [o.value if o.ok else population[min(i, len(population) - 1)]
                   for i, o in enumerate(outcomes)]
            rounds.append({"round": r, "subsets": subsets,
                           "answers": [extract_code(p) for p in new],
                           "errors": [error_text(o.error) for o in outcomes if not o.ok]})
            population = new
            ctx.events("round", strategy=NAME, round=r, population=len(population))

        details: dict[str, Any] = {"population": n, "subset_size": k, "rounds_planned": t,
                                   "rounds_done": len(rounds), "rounds": rounds}
        if not population:
            status = "no_answer"
            return finish(ctx, NAME, status, budget_reason(budget_hit) if budget_hit else
                          "no_samples", started=started, details=details)
        chosen, classes = await vote(ctx, population)
        details["final_classes"] = classes
        if chosen is None:
            return finish(ctx, NAME, "no_answer", "no_code_in_population", started=started,
                          details=details)
        details["chosen"] = chosen
        status = "partially_complete" if budget_hit is not None else "complete"
        reason = budget_reason(budget_hit) if budget_hit is not None else "voted"
        text = population[chosen]
        return finish(ctx, NAME, status, reason, started=started, answer_text=text,
                      answer_code=extract_code(text), details=details)


def strategy() -> RSA:
    return RSA()
