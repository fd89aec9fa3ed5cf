"""Room kept in the run's budget for the final answer.

When a budget ends the research, the forced formatter still has to write the answer, and it must
do so within the budget (the meter allows nothing past it). So the research stops early enough to
leave room for it: before each of the lab's model requests, ``held_back`` says whether the budget
left would fall below the reserve, and which limit binds. The reserve is a number of requests,
each sized at twice the mean request of the run so far (tokens, cost, latency): a forced
formatter's prompt is about the size of the other roles' and its reply is short.
"""

from __future__ import annotations

from physlab.llm.usage import Budget, Usage

SIZE_FACTOR = 2.0     # a reserved request may be this many times the run's mean request


def held_back(budget: Budget, used: Usage, reserve_calls: int, *, elapsed_s: float | None = None) -> str | None:
    """The budget limit that leaves less than ``reserve_calls`` requests of room after one more
    research request (None: the research may go on)."""
    if reserve_calls <= 0:
        return None
    if budget.max_calls is not None and used.calls + 1 + reserve_calls > budget.max_calls:
        return "max_calls"
    if used.calls == 0:
        return None                       # nothing to size a request by yet
    per = SIZE_FACTOR * reserve_calls / used.calls
    room = {
        "max_tokens": (budget.max_tokens, used.total_tokens, used.total_tokens * per),
        "max_input_tokens": (budget.max_input_tokens, used.input_tokens, used.input_tokens * per),
        "max_output_tokens": (budget.max_output_tokens, used.output_tokens, used.output_tokens * per),
        "max_cost": (budget.max_cost_usd, used.cost_usd, used.cost_usd * per),
    }
    # one more research request of the mean size, then the reserve
    for limit, (cap, spent, reserve) in room.items():
        if cap is not None and spent + reserve * (1 + 1 / (SIZE_FACTOR * reserve_calls)) > cap:
            return limit
    if budget.max_wall_s is not None and elapsed_s is not None and used.wall_s > 0:
        if elapsed_s + used.wall_s * per > budget.max_wall_s:
            return "max_wall"
    return None
