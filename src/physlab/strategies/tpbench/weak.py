"""`tpbench-weak`: TPBench sampling-based search with a simple weak verifier (§3.5).

Stage 1: N candidates, grouped by their outputs at M test points (see tpbench/candidates.py).
Stage 2: each distinct candidate is judged k_verif (10) times by the model (role ``verifier``);
each judgement uses one of the three verification prompts, drawn with the seeded RNG, and answers
through its output tool with its reasoning and then yes/no (a pydantic model; no valid verdict
after the retries counts as no); the score is the fraction of yes among the judgements that
finished. ``verdict_reasoning=third`` (``--protocol paper``) asks for the yes/no alone on the first
two prompts, as the seed's (A.3), and for reasoning first on the third only. The classes scoring within ``delta`` of the best are kept (default 0.05; with k_verif=10
that is "the top score").
Stage 3: if more than one is kept, a pairwise tie-break (one comparison per pair by default, as
Algorithm 2 shows; role ``tiebreaker``) picks the final answer.
"""

from __future__ import annotations

import random
import time
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai.exceptions import UnexpectedModelBehavior

from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import TPBENCH, param
from physlab.strategies.sampling import answer_requirements, ask_structured, model_settings, render
from physlab.strategies.tpbench.candidates import build_pool
from physlab.strategies.tpbench.select import Job, VerifierParams, verify_and_select

VARIANTS = ("weak_verify_1", "weak_verify_2", "weak_verify_3")


class WeakVerdict(BaseModel):
    """The simple verifier's judgement of one solution (Appendix A.3): its reasoning first, then the
    yes/no (the paper's prompts reason, then give the JSON verdict)."""

    reasoning: str = Field(description="Your analysis of the solution, step by step, before the verdict.")
    is_solution_correct: Literal["yes", "no"]


class BareVerdict(BaseModel):
    """The seed's verdict on its first two prompts (A.3): 'a JSON object with only' the yes/no."""

    is_solution_correct: Literal["yes", "no"]


class WeakParams(VerifierParams):
    verdict_reasoning: Literal["all", "third"] = param(
        "all", "Which verification prompts ask for reasoning before the yes/no: 'all' three, or only the "
               "third (the first two then ask for the verdict alone).",
        f"PhysLab: a verdict after its reasoning on every prompt (a bare yes/no gives the verifier no room to "
        f"check the steps); {TPBENCH} A.3: prompts 1-2 ask for the JSON verdict only, prompt 3 reasons first -- "
        "--protocol paper")

    protocols = {"paper": {"verdict_reasoning": "third"}}


class TPBenchWeak(Strategy[WeakParams]):
    """TPBench sampling-based search: N candidates, a simple yes/no verifier, a pairwise tie-break."""

    name = "tpbench-weak"
    Params = WeakParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        started = time.monotonic()
        pool = await build_pool(ctx, self.name, self.params)
        settings = model_settings(self.params)
        problem = ctx.problem.statement.strip()
        requirements = answer_requirements(ctx.problem)

        def make_jobs(g: int, k: int, rng: random.Random) -> list[Job]:
            solution = pool.representative(g).text or ""
            jobs = []
            for _ in range(k):
                variant = rng.choice(VARIANTS)
                bare = self.params.verdict_reasoning == "third" and variant != VARIANTS[-1]
                prompt = render(variant + "_bare" if bare else variant, problem=problem,
                                requirements=requirements, solution=solution)
                reply: type[WeakVerdict] | type[BareVerdict] = BareVerdict if bare else WeakVerdict

                def job(prompt: str = prompt, variant: str = variant,
                        reply: type[WeakVerdict] | type[BareVerdict] = reply) -> Job:
                    async def run() -> tuple[str, int | None]:
                        try:
                            verdict = await ask_structured(ctx, "verifier", prompt, reply,
                                                           tool="submit_verdict", settings=settings)
                        except UnexpectedModelBehavior:
                            return variant, None
                        return variant, int(verdict.is_solution_correct == "yes")
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
                variant, vote = o.value
                records.append({"variant": variant, "vote": vote})
                # No verdict after the retries counts as "no": the verifier did not endorse it.
                votes.append(vote or 0)
            return (sum(votes) / len(votes) if votes else None), records

        return await verify_and_select(ctx, self.name, self.params, pool, make_jobs, score_of, started)
