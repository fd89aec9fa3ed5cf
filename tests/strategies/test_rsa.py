"""rsa: population N, K-subsets drawn without replacement, T rounds, final vote over the grader's
equivalence classes (not string match)."""

from __future__ import annotations

import re

import pytest
from sampling_ctx import make_ctx, make_problem, solution

from physlab.errors import UserError
from physlab.llm.scripted import last_user_text
from physlab.llm.usage import Budget
from physlab.strategies.rsa import RSA

# The tests that are not about the final vote use the open-question form of the problem: the vote
# then compares "Final Answer:" lines and needs no grader run.
OPEN = make_problem(template=False)

FIRST = ["(1 - p)**2", "1 - 2*p", "1 - p", "1 - p**2"]
# The last round: three answers equal to (1-p)^2 but each written differently, one other answer.
LAST = ["(1 - p)**2", "1 - 2*p + p**2", "(p - 1)*(p - 1)", "1 - 2*p"]


def _scenario(log: dict):
    def factory():
        state = {"generator": 0, "aggregator": 0}

        def respond(role, messages, info):
            i = state[role]
            state[role] += 1
            prompt = last_user_text(messages)
            if role == "generator":
                return solution(FIRST[i % 4], reasoning=f"candidate-{i}")
            shown = re.findall(r"--- Candidate solution \d+ ---\n(.*?)(?=\n--- Candidate|\Z)",
                               prompt, flags=re.DOTALL)
            log.setdefault("subsets", []).append(shown)
            return solution(LAST[i % 4], reasoning=f"aggregate-{i}")
        return respond
    return factory


async def test_aggregation_sees_k_distinct_candidates_and_votes_by_equivalence(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _scenario(log), seed=7)
    attempt = await RSA.configured({"population": 4, "subset_size": 3, "rounds": 3, "concurrency": 1}).run(ctx)
    assert attempt.status == "complete"
    assert attempt.usage.calls == 4 * 3
    assert set(attempt.usage_by_role) == {"generator", "aggregator"}
    assert len(log["subsets"]) == 8
    for shown in log["subsets"]:
        assert len(shown) == 3
        assert len({s.strip() for s in shown}) == 3  # K distinct members of the population
    # round 2 aggregates round-1 candidates, round 3 aggregates round-2 aggregates
    assert all("candidate-" in s for shown in log["subsets"][:4] for s in shown)
    assert all("aggregate-" in s for shown in log["subsets"][4:] for s in shown)
    # every final answer is a different string; three of them are the same function
    assert attempt.details["final_classes"][0] == [0, 1, 2]
    assert attempt.answer_code is not None and "(1 - p)**2" in attempt.answer_code
    assert attempt.ran_as is None
    # a checkpoint per round: the answer the vote would have given then, at what had been spent
    assert [(c.step, c.calls) for c in ctx.checkpoints] == [("round 1", 4), ("round 2", 8), ("round 3", 12)]


async def test_subsets_follow_the_seed(tmp_path):
    runs = []
    for seed in (1, 1, 2):
        ctx = make_ctx(tmp_path / f"s{len(runs)}", _scenario({}), problem=OPEN, seed=seed)
        attempt = await RSA.configured({"population": 4, "subset_size": 2, "rounds": 2}).run(ctx)
        runs.append(attempt.details["rounds"][1]["subsets"])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


async def test_budget_mid_round_returns_best_so_far(tmp_path):
    ctx = make_ctx(tmp_path, _scenario({}), budget=Budget(max_calls=6), problem=OPEN)
    attempt = await RSA.configured({"population": 4, "subset_size": 2, "rounds": 4, "concurrency": 1}).run(ctx)
    assert attempt.status == "partially_complete"
    assert attempt.stop_reason == "budget:max_calls"
    assert "Final Answer" in attempt.answer_text
    assert attempt.details["rounds_done"] == 2
    assert attempt.usage.calls == 6
    assert attempt.ran_as == "1 of 4 rounds"  # round 2 was cut: RSA stopped after round 1


async def test_defaults_and_validation(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _scenario(log), problem=OPEN)
    attempt = await RSA().run(ctx)
    assert attempt.usage.calls == 24  # 6 x 4, the physics-intern comparison's setting
    assert all(len(s) == 2 for s in log["subsets"])
    with pytest.raises(UserError, match=r"strategy rsa: --param subset_size: expected at most population \(2\), got 3"):
        RSA.configured({"population": 2, "subset_size": 3})
    assert RSA.configured({"max_iterations": 2}).params.rounds == 2  # --max-iterations sets T
