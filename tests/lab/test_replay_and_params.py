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


def test_preset_paper_runs_one_worker_at_a_time_with_the_seeds_caps():
    paper = LabStrategy.configured({"preset": "paper"}).params.settings()
    assert (paper.parallel_workers, paper.max_dispatches, paper.max_iterations) == (1, 1, 40)
    assert (paper.critic_every, paper.max_critiques) == (4, 2)
    ours = LabStrategy.configured({}).params.settings()
    assert ours.parallel_workers > 1 and ours.max_iterations == 12
    mixed = LabStrategy.configured({"preset": "paper", "max_iterations": 8}).params.settings()
    assert (mixed.max_iterations, mixed.parallel_workers) == (8, 1)            # a value given wins
    with pytest.raises(UserError, match="--param preset"):
        LabStrategy.configured({"preset": "fast"})


def test_strategies_show_lab_marks_each_default_as_the_seeds_or_physlabs():
    from typer.testing import CliRunner

    from physlab.cli import app

    out = CliRunner().invoke(app, ["strategies", "show", "lab"])
    assert out.exit_code == 0, out.output
    sources = [line.strip() for line in out.output.splitlines() if line.strip().startswith("default from:")]
    assert sources and all(s.removeprefix("default from: ").startswith(("seed:", "PhysLab:")) for s in sources), sources
    keys = [line.split(" = ")[0].strip() for line in out.output.splitlines() if line.startswith("  ") and
            not line.startswith("    ") and " = " in line]
    assert len(keys) == len(sources)                                       # every parameter says where it comes from
    by_key = dict(zip(keys, sources))
    assert by_key["parallel_workers"].startswith("default from: PhysLab:")
    assert "preset=paper" in by_key["parallel_workers"]
    assert by_key["max_refutations"].startswith("default from: seed:")


def test_strategies_show_lab_gives_each_departure_from_the_paper_with_its_default_under_each_preset():
    """Issue 41: every PhysLab choice where physics-intern does otherwise is a parameter of its own,
    listed with its default under preset=physlab and under preset=paper and where each comes from."""
    import json

    from typer.testing import CliRunner

    from physlab.cli import app
    from physlab.lab.engine import PAPER

    out = CliRunner().invoke(app, ["strategies", "show", "lab", "--json"])
    assert out.exit_code == 0, out.output
    params = json.loads(out.output)["params"]
    ours = LabStrategy.configured({}).params.settings()
    for key, paper in PAPER.items():
        p = params[key]
        assert p["presets"] == {"physlab": getattr(ours, key), "paper": paper}, key
        assert p["departs"] is (getattr(ours, key) != paper), key
        if p["departs"]:      # ours, with the reason, and the paper's code it departs from
            assert p["source"].startswith("PhysLab:") and "physics-intern" in p["source"], key
    for key in ("judges_compute", "role_views", "one_exit_per_turn", "max_open_questions", "critic_cadence",
                "upheld_abandons", "completion_gates", "forced_answer", "best_guess_every", "max_output_tokens",
                "post_integration_checks", "standards", "computer_algebra", "review_history"):
        assert params[key]["departs"], key
    text = CliRunner().invoke(app, ["strategies", "show", "lab"]).output
    assert "  judges_compute = true  (boolean)\n" in text
    assert "      departs from the paper: preset=physlab true, preset=paper false\n" in text
    assert "      departs from the paper: preset=physlab 12, preset=paper 40\n" in text        # max_iterations


def test_strategies_show_names_the_papers_not_the_seed_files():
    """Issue 44, item 8: a default's source names the paper it comes from, never a seed file."""
    import re

    from typer.testing import CliRunner

    from physlab.cli import app
    from physlab.strategies import registry

    for name in registry.names():
        out = CliRunner().invoke(app, ["strategies", "show", name])
        assert out.exit_code == 0, out.output
        assert not re.search(r"\d{3}_[0-9a-f]{16}\.txt", out.output), name
    lab = CliRunner().invoke(app, ["strategies", "show", "lab"]).output
    assert "the physics-intern paper §5" in lab
    assert "PhysicsMinions (arXiv:2509.24855)" in CliRunner().invoke(app, ["strategies", "show", "minions"]).output
