"""`tpbench-vote`: TPBench majority vote (§3.3).

N candidates (default 50) are generated concurrently; each filled template is evaluated at M test
points (default 5) by the grader's reference-free evaluator in the sandbox; candidates with the same
output vector form one class; the answer is a representative of the largest class (ties: the class
whose first member came first). An open question (no template) has nothing to evaluate: its
candidates are grouped by their normalised "Final Answer:" line instead.
"""

from __future__ import annotations

import time

from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.tpbench.candidates import TPBenchParams, attempt_from_group, build_pool, pool_details


class TPBenchVote(Strategy[TPBenchParams]):
    """TPBench majority vote over N candidates grouped by their values at M test points."""

    name = "tpbench-vote"
    Params = TPBenchParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        started = time.monotonic()
        pool = await build_pool(ctx, self.name, self.params)
        group = 0 if pool.groups else None
        return attempt_from_group(ctx, self.name, pool, group, started=started,
                                  reason="voted" if group is not None else "no_valid_candidate",
                                  details=pool_details(pool, self.params.n_points))
