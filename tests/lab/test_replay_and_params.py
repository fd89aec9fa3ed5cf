"""A finished run replays offline from its calls.jsonl; strategy parameters are validated."""

from __future__ import annotations

import pytest

from physlab.errors import UserError
from physlab.strategies.lab import settings_from_params

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
    assert settings_from_params({"max_iterations": "5", "critic_every": 0}).max_iterations == 5
    with pytest.raises(UserError, match="unknown parameter"):
        settings_from_params({"max_iteration": 5})
    with pytest.raises(UserError, match="parallel_workers"):
        settings_from_params({"parallel_workers": 0})
