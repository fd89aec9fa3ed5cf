"""`rsa`: Recursive Self-Aggregation (Venkatraman et al., 2025), as physics-intern's baseline runs it.

Round 1 samples a population of N solutions under CritPt's one-step system prompt (the problem and
its template, as `oneshot` sends them). Each later round builds a new population of N: every member
is an aggregation of K candidates drawn without replacement from the previous population (seeded
RNG, ``ctx.seed``), under an aggregation system prompt, the problem, the K candidates and the
template. After T rounds (N*T requests in all) the final answer is chosen by majority vote over the
last population: by default over the grader's reference-free equivalence classes of the filled
templates (so "(1-p)**2" and "1 - 2*p + p**2" vote together); ``vote=exact`` keys on the exact
answer string as physics-intern's code does (the filled code, else the "Final Answer:" text; ties
to the first).

Parameters: ``population`` N, ``subset_size`` K, ``rounds`` T (see :class:`RSAParams`; the RSA
paper itself used 16/4/10). ``--max-iterations`` sets T when ``rounds`` is not given.
"""

from __future__ import annotations

import random
import time
from typing import Any, Literal, Self

from pydantic import model_validator

from physlab.grading.extract import extract_code, extract_final_answer
from physlab.run.checkpoints import record_best
from physlab.run.environment import RunEnvironment
from physlab.run.events import Round
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.critpt_protocol import builtin_system, user_message
from physlab.strategies.params import PHYSICS_INTERN, SamplingParams, param
from physlab.strategies.sampling import (
    answer_classes,
    ask,
    budget_reason,
    error_text,
    final_answer_classes,
    finish,
    gather_bounded,
    load_prompt,
    model_settings,
)

_RSA_RUN = f"{PHYSICS_INTERN} §4 (RSA on the example puzzle, about 24 requests: N, K, T = 6, 2, 4)"
_RSA_CODE = "physics-intern public code, src/open_dirac/rsa/runner.py"


class RSAParams(SamplingParams):
    population: int = param(6, "Solutions in each round's population (N).", f"{_RSA_RUN}; {_RSA_CODE}: -N 6", ge=1)
    subset_size: int = param(2, "Candidates shown to each aggregation (K).", f"{_RSA_RUN}; {_RSA_CODE}: -K 2", ge=1)
    rounds: int = param(4, "Rounds: the first sampling, then T-1 aggregations (T).", f"{_RSA_RUN}; {_RSA_CODE}: -T 4",
                        ge=1)
    vote: Literal["equivalence", "exact"] = param(
        "equivalence", "How the last population votes: 'equivalence' groups answers the grader's reference-free "
        "comparison shows equal; 'exact' groups identical answer strings (the filled code, else the Final Answer "
        "text), ties to the first.",
        f"PhysLab's default, argued: {_RSA_CODE} (_majority_vote, the seed's 35%) keys on the exact string, which "
        "splits one answer written two ways ('(1-p)**2', '1 - 2*p + p**2') into rival votes, so the winner depends "
        "on spelling; the grader's equivalence counts what the grader would count as one answer. 'exact' is the "
        "seed's vote (--protocol paper)")

    protocols = {"paper": {"vote": "exact"}}  # --protocol paper: physics-intern's runner's vote

    @classmethod
    def from_max_iterations(cls, n: int) -> dict[str, Any]:
        return {"rounds": n}

    @model_validator(mode="after")
    def _subset_fits(self) -> Self:
        if self.subset_size > self.population:
            raise ValueError(f"--param subset_size: expected at most population ({self.population}), "
                             f"got {self.subset_size}")
        return self


def exact_classes(texts: list[str]) -> list[list[int]]:
    """physics-intern's vote key: the filled code, else the text after "Final Answer:", as written;
    texts with neither vote for nothing. Largest group first, ties to the first occurrence."""
    groups: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        key = (extract_code(text) or extract_final_answer(text) or "").strip()
        if key:
            groups.setdefault(key, []).append(i)
    return sorted(groups.values(), key=lambda c: (-len(c), c[0]))


async def vote(ctx: RunEnvironment, texts: list[str], how: str = "equivalence") -> tuple[int | None, list[list[int]]]:
    """Index (into ``texts``) of the majority answer and the classes it was chosen from.

    By equivalence, templated problems vote over equivalence classes of the extracted code (texts
    without code are left out) and open questions over the normalised "Final Answer:" line; by
    ``exact``, over identical answer strings.
    """
    if how == "exact":
        classes = exact_classes(texts)
    elif ctx.problem.has_template:
        classes = await answer_classes(ctx, [extract_code(t) for t in texts])
    else:
        classes = final_answer_classes(texts)
    return (classes[0][0] if classes else None), classes


def aggregation_prompt(problem_text: str, template: str | None, candidates: list[str]) -> str:
    """The problem, the K candidates and the template, as physics-intern's aggregation shows them."""
    if len(candidates) == 1:
        intro = "Below is a candidate solution (it may contain errors). Refine it into an improved solution.\n"
        shown = [f"## Candidate\n\n{candidates[0].strip()}\n"]
    else:
        intro = (f"Below are {len(candidates)} candidate solutions (some may contain errors). Examine them and write "
                 "one improved solution.\n")
        shown = [f"## Candidate {i}\n\n{c.strip()}\n" for i, c in enumerate(candidates, 1)]
    parts = [problem_text.strip(), "\n---\n", intro, *shown]
    if template:
        parts.append(f"---\n\nFill your final answer into this code template:\n\n```python\n{template.strip()}\n```")
    return "\n".join(parts)


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
        how = self.params.vote
        generate_system = builtin_system("one-step" if problem.has_template else "two-step")
        aggregate_system = load_prompt("rsa_aggregate_system").strip()

        def sample(prompt: str, role: str, system: str):
            async def run() -> str:
                text, _ = await ask(ctx, role, prompt, system=system, settings=settings)
                return text
            return run

        async def checkpoint(r: int) -> None:  # the answer the run would give after round r
            chosen, _ = await vote(ctx, population, how)
            if chosen is not None:
                record_best(ctx, f"round {r}", answer_code=extract_code(population[chosen]),
                            answer_text=population[chosen])

        rounds: list[dict[str, Any]] = []
        first = user_message(problem, with_template=True)
        outcomes = await gather_bounded([sample(first, "generator", generate_system) for _ in range(n)], limit)
        population = [o.value for o in outcomes if o.ok]
        budget_hit = next((o.error for o in outcomes if o.budget), None)
        rounds.append({"round": 1, "answers": [extract_code(p) for p in population],
                       "errors": [error_text(o.error) for o in outcomes if not o.ok]})
        ctx.events(Round(strategy=self.name, round=1, population=len(population)))
        completed = 0 if budget_hit is not None else 1
        await checkpoint(1)

        for r in range(2, t + 1):
            if budget_hit is not None or len(population) < k:
                break
            subsets = [rng.sample(range(len(population)), k) for _ in range(n)]
            jobs = []
            for subset in subsets:
                prompt = aggregation_prompt(problem.statement, problem.answer_template,
                                            [population[i] for i in subset])
                jobs.append(sample(prompt, "aggregator", aggregate_system))
            outcomes = await gather_bounded(jobs, limit)
            budget_hit = next((o.error for o in outcomes if o.budget), None)
            # A member whose aggregation failed keeps its predecessor, so the population stays N.
            new = [o.value if o.ok else population[min(i, len(population) - 1)]
                   for i, o in enumerate(outcomes)]
            rounds.append({"round": r, "subsets": subsets,
                           "answers": [extract_code(p) for p in new],
                           "errors": [error_text(o.error) for o in outcomes if not o.ok]})
            population = new
            ctx.events(Round(strategy=self.name, round=r, population=len(population)))
            completed += budget_hit is None
            await checkpoint(r)

        details: dict[str, Any] = {"population": n, "subset_size": k, "rounds_planned": t,
                                   "rounds_done": len(rounds), "rounds_completed": completed, "rounds": rounds}
        if not population:
            status: AttemptStatus = "no_answer"
            return finish(ctx, self.name, status, budget_reason(budget_hit) if budget_hit else
                          "no_samples", started=started, details=details)
        chosen, classes = await vote(ctx, population, how)
        details["final_classes"] = classes
        details["vote"] = how
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

