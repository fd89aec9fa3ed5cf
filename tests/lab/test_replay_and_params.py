"""A finished run replays offline from its calls.jsonl; strategy parameters are validated."""

from __future__ import annotations

import pytest

from physlab.errors import UserError
from physlab.strategies.lab import LabStrategy
from tests.lab.helpers import solve, state_of
from tests.lab.mini import mini_problem, register


async def test_finished_run_replays_offline(tmp_path):
    first = await solve(tmp_path / "a", register("lab-mini-replay"), problem=mini_problem())
    again = await solve(tmp_path / "b", f"replay:{tmp_path / 'a' / 'calls.jsonl'}", problem=mini_problem())
    assert again.status == first.status == "complete"
    assert again.answer_code == first.answer_code
    a, b = state_of(tmp_path / "a"), state_of(tmp_path / "b")
    assert [e.claim for e in a.ers] == [e.claim for e in b.ers] and a.iteration == b.iteration


def test_params_are_validated():
    settings = LabStrategy.configured({"max_iterations": 5, "critic_every": 0}).params.settings()
    assert (settings.max_iterations, settings.critic_every) == (5, 0)
    with pytest.raises(UserError, match="strategy lab: unknown --param 'max_iteration'; expected one of: max_iterations"):
        LabStrategy.configured({"max_iteration": 5})
    with pytest.raises(UserError, match="strategy lab: --param parallel_workers: input should be greater than"):
        LabStrategy.configured({"parallel_workers": 0})
    with pytest.raises(UserError, match="--param resume_iteration"):
        LabStrategy.configured({"resume_iteration": -1})
