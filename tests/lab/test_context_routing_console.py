"""Per-role context (what each sees, bounded windows), routing, the console view."""

from __future__ import annotations

import io
import json

from physlab.lab import context as C, routing
from physlab.lab.console import LabView
from physlab.lab.state import transitions as T
from physlab.lab.state.invariants import check
from physlab.lab.state.models import ResearchState
from physlab.run.console import make_console
from tests.lab.mini import mini_problem


def grown_state(n: int) -> ResearchState:
    """A long run's state, built directly (fast) rather than through n*8 transitions."""
    from physlab.lab.state.models import DeadEnd, Dispatch, Evidence, Note, ResearchQuestion, Review, WorkingHypothesis
    s = ResearchState(problem_id="mini")
    s, _ = T.set_strategy(s, "plan", add_checks=["c1"])
    for i in range(1, n + 1):
        s.rqs.append(ResearchQuestion(id=f"RQ-{i}", question=f"question {i} " + "x" * 80, status="dropped"))
        s.dispatches.append(Dispatch(id=f"DS-{i}", iteration=i, role="computer", target=f"RQ-{i}", task="t", evidence=f"EV-{i}"))
        s.evidence.append(Evidence(id=f"EV-{i}", target=f"RQ-{i}", role="computer", findings=f"f{i}"))
        s.whs.append(WorkingHypothesis(id=f"WH-{i}", claim=f"claim {i}", evidence=[f"EV-{i}"], status="refuted", reviews=[f"RV-{i}"]))
        s.reviews.append(Review(id=f"RV-{i}", wh=f"WH-{i}", verdict="REFUTED"))
        s.notes.append(Note(id=f"NT-{i}", text=f"note {i} " + "y" * 80))
        s.dead_ends.append(DeadEnd(id=f"DE-{i}", description=f"dead end {i}", related=[f"RQ-{i}"]))
    s.counters.update({k: n for k in ("RQ", "DS", "EV", "WH", "RV", "NT", "DE")})
    assert check(s) == []
    return s


def orch_prompt(s):
    return C.for_orchestrator(mini_problem(), s, C.Windows(), new_evidence=[], new_reviews=[],
                              events=[f"[e] {e.text}" for e in s.events], human=[], gates=[], max_workers=3).text


def test_orchestrator_prompt_stays_bounded_as_the_run_grows():
    # windows move in steps of half their size: at 24 of everything each shows its full size
    full = len(orch_prompt(grown_state(24)))
    assert all(len(orch_prompt(grown_state(n))) < full * 1.1 for n in (25, 30, 61, 150, 300))
    assert "Older hypotheses refuted or abandoned: 288" in orch_prompt(grown_state(300))


def test_windows_move_in_steps_so_what_they_show_is_only_appended_to_in_between():
    shown = [C.window_start(n, 12) for n in range(0, 40)]
    assert shown[:13] == [0] * 13 and all(12 - 6 < n - s <= 12 for n, s in enumerate(shown) if n > 12)
    assert sorted(set(shown)) == [0, 6, 12, 18, 24, 30]                    # moves only in steps of half the window


def test_established_results_and_open_critiques_are_never_cut():
    s = grown_state(30)
    for i in range(40):                                                  # a long run's many results
        s, rq = T.create_rq(s, f"result question {i}")
        s, ev = T.add_evidence(s, target=rq, role="computer", findings=f"f{i}")
        s, wh = T.propose_wh(s, claim=f"RESULT-{i} " + "z" * 300, value=f"v{i}", evidence=[ev])
        s, _ = T.record_review(s, wh, "VERIFIED")
    for i in range(14):
        s, _ = T.file_critique(s, target_type="strategy", text=f"OPEN-CRITIQUE-{i} " + "w" * 500)
    orch = orch_prompt(s)
    assert all(f"RESULT-{i} " + "z" * 300 in orch for i in range(40))
    for prompt in (C.for_critic(mini_problem(), s, C.Windows(), max_critiques=4).text,
                   C.for_planner(mini_problem(), s, s.open_critiques(), C.Windows()).text):
        assert all(f"OPEN-CRITIQUE-{i} " + "w" * 500 in prompt for i in range(14))
        assert all(f"RESULT-{i} " + "z" * 300 in prompt for i in range(40))


def test_each_role_sees_only_its_context():
    s = grown_state(2)
    s, rq = T.create_rq(s, "live question")
    s, ev = T.add_evidence(s, target=rq, role="computer", findings="F = 1", method="m",
                           code="SECRET_CODE = 1", output="printed 1")
    s, wh = T.propose_wh(s, claim="F is one", value="1", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED", "REVIEWER_REASONING")
    er = s.wh(wh).er
    # the reviewer sees claim, evidence, code and output
    s2, ev2 = T.add_evidence(s, target=rq, role="computer", findings="G = 2", code="print(2)", output="2")
    s2, wh2 = T.propose_wh(s2, claim="G is two", value="2", evidence=[ev2], depends_on=[wh])
    rv = C.for_reviewer(mini_problem(), s2, C.Windows(), wh2).text
    assert "print(2)" in rv and "G is two" in rv and "F is one" in rv
    assert "SECRET_CODE" not in rv and "REVIEWER_REASONING" not in rv    # not how earlier results were reached
    # the planner never sees raw computations
    pl = C.for_planner(mini_problem(), s, [], C.Windows()).text
    assert "SECRET_CODE" not in pl and "printed 1" not in pl
    # workers see conventions, established results and their task
    wk = C.for_worker("researcher", mini_problem(), s, C.Windows(), target=rq, instructions="do it", method_hints="hint",
                      relevant=[er]).text
    assert "live question" in wk and "F is one" in wk and "SECRET_CODE" not in wk
    # the formatter sees the established results (and, only when the run is ending, the rest)
    fm = C.for_formatter(mini_problem(), s, C.Windows(), forced=False).text
    assert er in fm and "claim 1" not in fm


def test_routing():
    s = ResearchState()
    s, rq = T.create_rq(s, "q")
    s, ev = T.add_evidence(s, target=rq, role="researcher", findings="f")
    s, wh = T.propose_wh(s, claim="c", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED")
    s, c1 = T.file_critique(s, target_type="ER", target=s.wh(wh).er, text="t")
    s, c2 = T.file_critique(s, target_type="strategy", text="t")
    s, c3 = T.file_critique(s, target_type="coordination", text="t")
    s, c4 = T.file_critique(s, target_type="sanity_check", text="t")
    adj, plan = routing.split_open_critiques(s)
    assert [c.id for c in adj] == [c1] and [c.id for c in plan] == [c2, c3, c4]
    assert [routing.critic_due(i, 3) for i in range(1, 7)] == [False, False, True, False, False, True]
    assert routing.critic_due(1, 0, on_demand=True) and not routing.critic_due(3, 0)


def test_console_view_and_json_mode():
    v = LabView()
    v.feed("iteration", {"iteration": 2, "calls": 5, "tokens": 900, "cost_usd": 0.25})
    v.feed("role_start", {"role": "reviewer"})
    v.feed("verdict", {"wh": "WH-1", "verdict": "VERIFIED", "promoted": ["ER-1"]})
    v.feed("critique_resolved", {"id": "CR-1", "status": "dismissed", "by": "adjudicator"})
    assert v.iteration == 2 and v.role == "reviewer" and v.tokens == 900 and v.cost == 0.25
    assert list(v.verdicts) == ["WH-1: VERIFIED → ER-1"] and "dismissed" in v.critiques[0]
    v.feed("completion_refused", {"blockers": ["CR-2 (ER-1) is open"]})
    assert "CR-2 (ER-1) is open" in v.events[-1]
    buf = io.StringIO()
    sink = make_console("json", stream=buf)
    sink("verdict", wh="WH-1", verdict="REFUTED")
    assert json.loads(buf.getvalue()) == {"event": "verdict", "wh": "WH-1", "verdict": "REFUTED"}
    make_console("quiet")("anything", x=1)


def test_live_view_shows_a_request_waiting_out_a_rate_limit():
    from rich.console import Console

    v = LabView()
    v.feed("role_start", {"role": "reviewer"})
    v.feed("rate_limited", {"role": "reviewer", "wait_s": 12.0, "text": "waiting for rate limit (12s)"})
    v.feed("output_mode", {"text": "openai:qwen3-32b: ... output mode auto -> prompted for the rest of the run"})
    out = io.StringIO()
    Console(file=out, width=160).print(v.renderable())
    assert "reviewer — waiting for rate limit (12s)" in out.getvalue()
    assert "auto -> prompted" in out.getvalue()
    v.feed("role_end", {"role": "reviewer"})
    assert v.waiting is None
