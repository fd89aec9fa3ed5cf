"""Room kept in the run's budget for the final answer.

When a budget ends the research, the forced formatter still has to write the answer, and it must
do so within the budget (no request goes past a cap). So the research keeps back a call and a
share of every token and cost cap (``FORMATTER_SHARE``, the engine's): before each research
request, ``held_back`` says whether one more request of the run's mean size would eat into that
room, and which limit binds. The meter counts tokens after the fact, so the next request is sized
at the run's mean so far; wall-clock time keeps no room (as the meter's own ``set_aside``).
"""

from __future__ import annotations

from physlab.llm.usage import Budget, Usage


def held_back(budget: Budget, used: Usage, *, calls: int, share: float) -> str | None:
    """The budget limit one more research request would breach once ``calls`` requests and
    ``share`` of each token and cost cap are kept for the final answer (None: research may go on).
    ``calls`` covers the formatter and the research requests that may still be in flight."""
    if budget.max_calls is not None and used.calls + 1 + max(calls, 0) > budget.max_calls:
        return "max_calls"
    if used.calls == 0:
        return None                       # nothing to size a request by yet
    keep = min(max(share, 0.0), 0.9)
    mean = 1 / used.calls                 # the next request, as a fraction of what was spent so far
    room = {
        "max_tokens": (budget.max_tokens, used.total_tokens),
        "max_input_tokens": (budget.max_input_tokens, used.input_tokens),
        "max_output_tokens": (budget.max_output_tokens, used.output_tokens),
        "max_cost": (budget.max_cost_usd, used.cost_usd),
    }
    for limit, (cap, spent) in room.items():
        if cap is not None and spent * (1 + mean) > cap * (1 - keep):
            return limit
    return None
