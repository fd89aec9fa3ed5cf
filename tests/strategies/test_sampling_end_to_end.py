"""Every sampling scaffold end to end through the runner (`physlab solve`'s core) with its scripted
QEC scenario: offline, graded by the real grader, same metrics.json / calls.jsonl shape."""

from __future__ import annotations

import json

import pytest

from physlab.api import solve_async
from physlab.llm.usage import Budget
from physlab.problems import resolve_problem

SMALL = {"n_samples": 7}
VERIFY = {"n_samples": 7, "k_verif": 2, "k_tie": 3}
CASES = [
    ("two-step", "two-step-qec", {}),
    ("rsa", "rsa-qec", {}),
    ("manager", "manager-qec", {}),
    ("multi-round", "multi-round-qec", {}),
    ("tpbench-vote", "tpbench-qec", SMALL),
    ("tpbench-bon", "tpbench-qec", SMALL),
    ("tpbench-weak", "tpbench-qec", VERIFY),
    ("tpbench-sympy", "tpbench-qec", VERIFY),
]


@pytest.fixture
def qec(shared_data):
    path = shared_data / "critpt" / "example_challenges" / "quantum_error_correction_main.json"
    return resolve_problem(str(path))


@pytest.mark.slow
async def test_every_strategy_solves_the_qec_example_offline(tmp_path, qec):
    keys = None
    for strategy, scenario, params in CASES:
        ws = tmp_path / strategy
        attempt = await solve_async(qec, strategy, f"scripted:{scenario}", workspace=ws,
                                   params=dict(params), budget=Budget(max_calls=400))
        assert attempt.status == "complete", (strategy, attempt.stop_reason, attempt.details.get("error"))
        assert (ws / "answer.py").is_file() and (ws / "ANSWER.md").is_file()
        metrics = json.loads((ws / "metrics.json").read_text())
        assert metrics["verdict"]["verdict"] == "correct", (strategy, metrics["verdict"])
        shape = set(metrics) - {"details"}
        keys = keys or shape
        assert shape == keys, strategy
        calls = [json.loads(line) for line in (ws / "calls.jsonl").read_text().splitlines()]
        assert calls and all({"role", "model", "input_tokens", "output_tokens", "cost_usd",
                              "latency_s", "finish_reason", "error"} <= set(c) for c in calls)
        assert metrics["totals"]["calls"] == len(calls)


def test_scenarios_are_discoverable_by_name():
    from physlab.llm.scripted import scenario_names

    names = scenario_names()
    for scenario in {s for _, s, _ in CASES}:
        assert scenario in names
