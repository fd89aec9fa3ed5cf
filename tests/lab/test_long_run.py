"""The long scripted run (``scripted:lab-long``, the cost benchmark's scenario), a few rounds of it:
three independent questions a round research in parallel, reviews and audits run concurrently,
and the run still replays exactly from its calls.jsonl."""

from __future__ import annotations

from physlab.lab.scenarios.long import PROBLEM, LongScenario
from physlab.llm.scripted import register_scenario
from tests.lab.helpers import calls, solve, state_of

ROUNDS = 6


async def test_a_short_long_run_researches_in_parallel_completes_and_replays(tmp_path):
    register_scenario("lab-long-test", lambda: LongScenario(ROUNDS))
    first = await solve(tmp_path / "a", "scripted:lab-long-test", problem=PROBLEM, max_iterations=ROUNDS + 6)
    s = state_of(tmp_path / "a")
    assert first.status == "complete" and s.iteration > ROUNDS
    assert len(s.rqs) == 3 * ROUNDS and len(s.evidence) == 3 * ROUNDS
    assert [e.wh for e in s.ers] and all(e.status == "active" for e in s.ers)
    assert any(e.role == "computer" and "E0(0.1) =" in e.output for e in s.evidence)     # code really ran
    roles = [c["role"] for c in calls(tmp_path / "a")]
    assert roles.count("reviewer") >= 3 * ROUNDS and roles.count("critic") >= ROUNDS // 2
    again = await solve(tmp_path / "b", f"replay:{tmp_path / 'a' / 'calls.jsonl'}", problem=PROBLEM,
                        max_iterations=ROUNDS + 6)
    r = state_of(tmp_path / "b")
    assert again.status == first.status and again.answer_code == first.answer_code
    assert [(x.id, x.wh, x.verdict) for x in r.reviews] == [(x.id, x.wh, x.verdict) for x in s.reviews]
    assert [(x.id, x.wh) for x in r.ers] == [(x.id, x.wh) for x in s.ers]
    assert [(x.id, x.target) for x in r.evidence] == [(x.id, x.target) for x in s.evidence]
