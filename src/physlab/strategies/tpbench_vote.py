"""`tpbench-vote`: TPBench majority vote (§3.3).

N candidates (default 50) are generated concurrently; each filled template is evaluated at M test
points (default 5) by the grader's reference-free evaluator in the sandbox; candidates with the same
output vector form one class; the answer is a representative of the largest class (ties: the class
whose first member came first). An open question (no template) has nothing to evaluate: its
candidates are grouped by their normalised "Final Answer:" line instead.
"""

from __future__ import annotations

import time
from typing import Any

from physlab.strategies.base import Attempt
from physlab.strategies.tpbench.pool import (
    TPBENCH_PARAMS, attempt_from_group, build_pool, pool_details, tpbench_sizes,
)
from physlab.strategies.tpbench_common import check_known_params

NAME = "tpbench-vote"


class TPBenchVote:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        check_known_params(ctx, NAME, TPBENCH_PARAMS)
        n, m = tpbench_sizes(ctx, NAME)
        started = time.monotonic()
        pool = await build_pool(ctx, NAME, n, m)
        group = 0 if pool.groups else None
        return attempt_from_group(ctx, NAME, pool, group, started=started,
                                  reason="voted" if group is not None else "no_valid_candidate",
                                  details=pool_details(pool, m))


def strategy() -> TPBenchVote:
    return TPBenchVote()
