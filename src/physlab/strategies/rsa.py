"""`rsa`: Recursive Self-Aggregation (Venkatraman et al., 2025).

Round 1 samples a population of N solutions. Each later round builds a new population of N: every
member is an aggregation of K candidates drawn without replacement from the previous population
(seeded RNG, ``ctx.seed``). After T rounds (N*T requests in all) the final answer is chosen by
majority vote over the grader's reference-free equivalence classes of the last population's
filled templates (so "(1-p)**2" and "1 - 2*p + p**2" vote together).

Parameters: ``population`` N, ``subset_size`` K, ``rounds`` T (see :class:`RSAParams`; the RSA
paper itself used 16/4/10). ``--max-iterations`` sets T when ``rounds`` is not given.
"""

from __future__ import annotations

import random
import time
from typing import Any, Self

from pydantic import model_validator

from physlab.grading.extract import extract_code
from physlab.run.checkpoints import record_best
from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.params import PHYSICS_INTERN, SamplingParams, param
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

_RSA_RUN = f"{PHYSICS_INTERN} §4 (RSA on the example puzzle, about 24 requests: N, K, T = 6, 2, 4)"


class RSAParams(SamplingParams):
    population: int = param(6, "Solutions in each round's population (N).", _RSA_RUN, ge=1)
    subset_size: int = param(2, "Candidates shown to each aggregation (K).", _RSA_RUN, ge=1)
    rounds: int = param(4, "Rounds: the first sampling, then T-1 aggregations (T).", _RSA_RUN, ge=1)

    @classmethod
    def from_max_iterations(cls, n: int) -> dict[str, Any]:
        return {"rounds": n}

    @model_validator(mode="after")
    def _subset_fits(self) -> Self:
        if self.subset_size > self.population:
            raise ValueError(f"--param subset_size: expected at most population ({self.population}), "
                             f"got {self.subset_size}")
        return self


async def vote(ctx: RunEnvironment, texts: list[str]) -> tuple[int | None, list[list[int]]]:
    """Index (into ``texts``) of the majority answer and the classes it was chosen from.

    Templated problems vote over equivalence classes of the extracted code (texts without code are
    left out); open questions vote over the normalised "Final Answer:" line.
    """
    if ctx.problem.has_template:
        classes = await answer_classes(ctx, [extract_code(t) for t in texts])
    else:
        classes = final_answer_classes(texts)
    return (classes[0][0] if classes else None), classes


class RSA(Strategy[RSAParams]):
    """Recursive Self-Aggregation: a population of solutions, recombined in rounds, then a vote."""

    name = "rsa"
    Params = RSAParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        n, k, t = self.params.population, self.params.subset_size, self.params.rounds
        settings = model_settings(self.params)
        limit = self.params.concurrency
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

        async def checkpoint(r: int) -> None:  # the answer the run would give after round r
            chosen, _ = await vote(ctx, population)
            if chosen is not None:
                record_best(ctx, f"round {r}", answer_code=extract_code(population[chosen]),
                            answer_text=population[chosen])

        rounds: list[dict[str, Any]] = []
        first = render("rsa_generate", problem=statement, requirements=requirements)
        outcomes = await gather_bounded([sample(first, "generator") for _ in range(n)], limit)
        population = [o.value for o in outcomes if o.ok]
        budget_hit = next((o.error for o in outcomes if o.budget), None)
        rounds.append({"round": 1, "answers": [extract_code(p) for p in population],
                       "errors": [error_text(o.error) for o in outcomes if not o.ok]})
        ctx.events("round", strategy=self.name, round=1, population=len(population))
        completed = 0 if budget_hit is not None else 1
        await checkpoint(1)

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
            ctx.events("round", strategy=self.name, round=r, population=len(population))
            completed += budget_hit is None
            await checkpoint(r)

        details: dict[str, Any] = {"population": n, "subset_size": k, "rounds_planned": t,
                                   "rounds_done": len(rounds), "rounds_completed": completed, "rounds": rounds}
        if not population:
            status: AttemptStatus = "no_answer"
            return finish(ctx, self.name, status, budget_reason(budget_hit) if budget_hit else
                          "no_samples", started=started, details=details)
        chosen, classes = await vote(ctx, population)
        details["final_classes"] = classes
        if chosen is None:
            return finish(ctx, self.name, "no_answer", "no_code_in_population", started=started,
                          details=details)
        details["chosen"] = chosen
        status = "partially_complete" if budget_hit is not None else "complete"
        reason = budget_reason(budget_hit) if budget_hit is not None else "voted"
        text = population[chosen]
        attempt = finish(ctx, self.name, status, reason, started=started, answer_text=text,
                         answer_code=extract_code(text), details=details)
        if completed < t:  # a cap (or failing requests) cut the recursion short: not the full RSA
            attempt.ran_as = f"{completed} of {t} rounds"
        return attempt

