"""`tpbench-bon`: TPBench best-of-N with the grader as oracle (§3.4) -- an UPPER BOUND.

It reads verdicts from the reference-bound grader, so it is not a method a user could run on an
unsolved problem; it measures how often at least one of N candidates is right. Problems without a
reference are refused (UserError, exit 2) before any request is made.

One representative per functionally distinct class is graded (classes share outputs at M points);
the answer is the first correct class, largest first. When none is correct the largest class is
written (status complete, ``details.oracle_found`` false) so the run still has an answer.
"""

from __future__ import annotations

import time
from typing import Any

from physlab.errors import UserError
from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.sampling import error_text
from physlab.strategies.tpbench.candidates import TPBenchParams, attempt_from_group, build_pool, pool_details


class TPBenchBestOfN(Strategy[TPBenchParams]):
    """TPBench best-of-N with the grader as oracle: an upper bound, not a method (needs a reference)."""

    name = "tpbench-bon"
    Params = TPBenchParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        if ctx.grader is None:
            raise UserError(f"strategy {self.name}: problem {ctx.problem.id!r} has no reference answer; "
                            "best-of-N uses the grader as an oracle (an upper bound), so it needs one")
        m = self.params.n_points
        started = time.monotonic()
        pool = await build_pool(ctx, self.name, self.params)
        verdicts: list[dict[str, Any]] = []
        chosen = None
        for g in range(len(pool.groups)):
            rep = pool.representative(g)
            try:
                verdict = await ctx.grader.grade(rep.code or rep.text or "")
            except Exception as exc:  # noqa: BLE001 - a grading failure is recorded, not fatal
                verdicts.append({"group": g, "verdict": "invalid", "reason": error_text(exc)})
                continue
            verdicts.append({"group": g, "verdict": verdict.verdict, "reason": verdict.reason})
            if verdict.correct:
                chosen = g
                break
        details = {**pool_details(pool, m), "oracle": "grader (uses the reference: upper bound)",
                   "oracle_found": chosen is not None, "oracle_verdicts": verdicts}
        group = chosen if chosen is not None else (0 if pool.groups else None)
        reason = "oracle_correct" if chosen is not None else (
            "no_correct_candidate" if group is not None else "no_valid_candidate")
        return attempt_from_group(ctx, self.name, pool, group, started=started, reason=reason,
                                  details=details)

