"""Each transition of the ResearchState, its refusal of bad input, and the invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from physlab.lab import gates
from physlab.lab.state import transitions as T
from physlab.lab.state.invariants import check
from physlab.lab.state.models import ResearchState


def _with_evidence():
    s = ResearchState(problem_id="p")
    s, rq = T.create_rq(s, "What is F?")
    s, ev = T.add_evidence(s, target=rq, role="computer", findings="F = 1 - p", confidence="exact")
    return s, rq, ev


def test_transitions_are_pure():
    s0 = ResearchState()
    s1, rq = T.create_rq(s0, "q")
    assert s0.rqs == [] and s1.rq(rq).question == "q"


def test_lifecycle_rq_evidence_wh_review_er():
    s, rq, ev = _with_evidence()
    s, wh = T.propose_wh(s, claim="F(p) = 1 - p", value="1 - p", evidence=[ev])
    assert T.pending_reviews(s) == [wh]
    s, rv = T.record_review(s, wh, "VERIFIED", "ok")
    assert s.wh(wh).status == "established"
    er = s.wh(wh).er
    assert s.er(er).review == rv and s.er(er).value == "1 - p"
    assert check(s) == []


def test_refuted_and_inconclusive_do_not_promote():
    s, rq, ev = _with_evidence()
    s, w1 = T.propose_wh(s, claim="a", evidence=[ev])
    s, w2 = T.propose_wh(s, claim="b", evidence=[ev])
    s, _ = T.record_review(s, w1, "REFUTED")
    s, _ = T.record_review(s, w2, "INCONCLUSIVE")
    assert s.ers == [] and s.wh(w1).status == "refuted" and s.wh(w2).status == "inconclusive"
    s, ev2 = T.add_evidence(s, target=rq, role="researcher", findings="a second route")
    s = T.revise_wh(s, w2, add_evidence=[ev2])
    assert T.pending_reviews(s) == [w2]


def test_promotion_waits_for_dependencies():
    s, rq, ev = _with_evidence()
    s, base = T.propose_wh(s, claim="base", evidence=[ev])
    s, top = T.propose_wh(s, claim="top", evidence=[ev], depends_on=[base])
    s, _ = T.record_review(s, top, "VERIFIED")
    assert s.wh(top).status == "verified" and s.ers == []       # dependency not yet an ER
    s, _ = T.record_review(s, base, "VERIFIED")
    assert s.is_established(base) and s.is_established(top)
    assert check(s) == []


def _base_and_top():
    s, rq, ev = _with_evidence()
    s, base = T.propose_wh(s, claim="base", evidence=[ev])
    s, _ = T.record_review(s, base, "VERIFIED")
    s, top = T.propose_wh(s, claim="top", evidence=[ev], depends_on=[base])
    s, _ = T.record_review(s, top, "VERIFIED")
    return s, rq, ev, base, top


def test_demotion_demotes_dependents_then_both_are_reestablished_under_new_ids():
    s, rq, ev, base, top = _base_and_top()
    er_base, er_top = s.wh(base).er, s.wh(top).er
    s, cr = T.file_critique(s, target_type="ER", target=er_base, text="wrong sign")
    s = T.rule_on_critique(s, cr, "uphold", ruling="the sign is wrong")
    assert s.er(er_base).status == "demoted" and s.wh(base).status == "demoted"
    # what builds on the demoted result is demoted with it, saying why; its review stands
    assert s.er(er_top).status == "demoted" and base in s.er(er_top).demotion_reason
    assert s.wh(top).status == "verified" and s.active_ers() == []
    assert T.pending_reviews(s) == [] and check(s) == []          # needs new evidence first
    s, ev2 = T.add_evidence(s, target=base, role="computer", findings="independent check")
    assert T.pending_reviews(s) == [base]                          # sent to review automatically
    s, _ = T.record_review(s, base, "VERIFIED", "fixed")
    assert s.wh(base).er not in (None, er_base) and s.wh(top).er not in (None, er_top)   # ids never reused
    assert len(s.active_ers()) == 2 and check(s) == []


def test_a_demoted_hypothesis_is_not_reviewed_again_without_new_evidence():
    s, rq, ev, base, top = _base_and_top()
    s = T.demote_er(s, s.wh(base).er, "gap in the evidence")
    with pytest.raises(T.TransitionError, match="newer than its last verdict"):
        T.revise_wh(s, base)                                        # nothing new
    with pytest.raises(T.TransitionError, match="newer than its last verdict"):
        T.revise_wh(s, base, add_evidence=[ev])                     # the evidence it already had
    s, ev2 = T.add_evidence(s, target=rq, role="researcher", findings="new route")
    s = T.revise_wh(s, base, add_evidence=[ev2])                    # genuinely new: back to review
    assert T.pending_reviews(s) == [base] and check(s) == []


def test_restating_a_hypothesis_sends_what_builds_on_it_back_to_review():
    s, rq, ev = _with_evidence()
    s, base = T.propose_wh(s, claim="base", evidence=[ev])
    s, top = T.propose_wh(s, claim="top", evidence=[ev], depends_on=[base])
    s, _ = T.record_review(s, top, "VERIFIED")                      # waits for base
    s, _ = T.record_review(s, base, "INCONCLUSIVE")
    s, ev2 = T.add_evidence(s, target=rq, role="computer", findings="base is really base'")
    s = T.revise_wh(s, base, claim="base'", add_evidence=[ev2])
    assert set(T.pending_reviews(s)) == {base, top} and check(s) == []


def test_a_hypothesis_refuted_twice_is_abandoned_as_a_dead_end_with_the_reason():
    s, rq, ev = _with_evidence()
    s, wh = T.propose_wh(s, claim="F = 1", evidence=[ev])
    s, _ = T.record_review(s, wh, "REFUTED", "F(0.5) < 1 numerically")
    s, _ = T.add_evidence(s, target=wh, role="researcher", findings="argued again")   # back to review
    s, _ = T.record_review(s, wh, "REFUTED", "still fails at p = 0.5")
    assert s.wh(wh).status == "abandoned"
    de = next(d for d in s.dead_ends if wh in d.related)
    assert "still fails at p = 0.5" in de.description and check(s) == []
    s, _ = T.add_evidence(s, target=wh, role="computer", findings="more")            # recorded, not reviewed
    assert T.pending_reviews(s) == []
    with pytest.raises(T.TransitionError, match="abandoned"):
        T.revise_wh(s, wh, add_evidence=[s.evidence[-1].id])
    with pytest.raises(T.TransitionError, match="abandoned"):
        T.propose_wh(s, claim="builds on it", evidence=[ev], depends_on=[wh])


def test_result_changes_and_audits_are_counted():
    s, rq, ev, base, top = _base_and_top()
    assert s.er_changes == 2 and s.er_changes_audited == 0
    s = T.record_audit(s)
    assert s.er_changes_audited == 2
    s = T.demote_er(s, s.wh(base).er, "r")
    assert s.er_changes == 4 and check(s) == []                    # base and, with it, top


def test_dismissed_critique_keeps_er():
    s, rq, ev = _with_evidence()
    s, wh = T.propose_wh(s, claim="c", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED")
    er = s.wh(wh).er
    s, cr = T.file_critique(s, target_type="ER", target=er, text="exceeds 1")
    s = T.rule_on_critique(s, cr, "dismiss", ruling="it does not")
    assert s.er(er).status == "active" and s.critique(cr).status == "dismissed"


@pytest.mark.parametrize("call", [
    lambda s: T.propose_wh(s, claim="x", evidence=["EV-99"]),
    lambda s: T.propose_wh(s, claim="x", evidence=[]),
    lambda s: T.propose_wh(s, claim="x", evidence=["EV-1"], depends_on=["WH-7"]),
    lambda s: T.record_review(s, "WH-5", "VERIFIED"),
    lambda s: T.file_critique(s, target_type="ER", target="ER-3", text="t"),
    lambda s: T.rule_on_critique(s, "CR-1", "uphold", "r"),
    lambda s: T.respond_to_critique(s, "CR-2", "accept", "r"),
    lambda s: T.abandon_wh(s, "WH-3", "r", by="planner"),
    lambda s: T.mark_obsolete(s, "ER-2", "r"),
    lambda s: T.demote_er(s, "ER-1", "r"),
    lambda s: T.add_evidence(s, target="RQ-9", role="computer", findings="f"),
    lambda s: T.add_dead_end(s, "d", related=["WH-4"]),
    lambda s: T.close_rq(s, "RQ-4"),
    lambda s: T.set_strategy(s, "s", retire_checks=["SC-9"]),
])
def test_unknown_ids_are_refused(call):
    s, _, _ = _with_evidence()
    with pytest.raises(T.TransitionError):
        call(s)


def test_duplicate_promotion_is_refused():
    s, rq, ev = _with_evidence()
    s, wh = T.propose_wh(s, claim="c", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED")
    with pytest.raises(T.TransitionError):
        T.record_review(s, wh, "VERIFIED")


def test_human_messages_route():
    s, rq, ev = _with_evidence()
    s, wh = T.propose_wh(s, claim="c", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED")
    er = s.wh(wh).er
    s, h1 = T.receive_human(s, kind="challenge", text="check p=1", on=er, inbox_id="a")
    s, h2 = T.receive_human(s, kind="redirect", text="use tableaux", on=None, inbox_id="b")
    s, h3 = T.receive_human(s, kind="comment", text="nice", on=wh, inbox_id="c")
    s, h4 = T.receive_human(s, kind="hint", text="symplectic", on="WH-77", inbox_id="d")
    routes = {m.id: m.routed_to for m in s.human_messages}
    assert routes == {h1: "adjudicator", h2: "planner", h3: "orchestrator", h4: "orchestrator"}
    assert s.find(h4).on is None
    with pytest.raises(T.TransitionError):
        T.receive_human(s, kind="hint", text="again", on=None, inbox_id="a")
    assert check(s) == []


# ------------------------------------------------------------ property-based: random sequences
OPS = st.lists(st.tuples(st.sampled_from(
    ["rq", "ev", "wh", "wh_dep", "review", "critique_er", "rule", "respond", "critique_plan",
     "revise", "dead_end", "note", "human", "demote", "abandon", "obsolete", "iterate", "breaker",
     "stalls"]), st.integers(0, 20), st.integers(0, 2)),
    max_size=60)


def _pick(items, i):
    return items[i % len(items)].id if items else f"XX-{i}"


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_random_transition_sequences_keep_invariants(ops):
    s = ResearchState()
    issued: dict[str, set[str]] = {}
    for op, i, j in ops:
        before = s.model_dump()
        verdict = ["VERIFIED", "REFUTED", "INCONCLUSIVE"][j]
        try:
            if op == "rq":
                s, _ = T.create_rq(s, f"q{i}")
            elif op == "ev":
                s, _ = T.add_evidence(s, target=_pick(s.rqs + s.whs, i), role="computer", findings="f")
            elif op == "wh":
                s, _ = T.propose_wh(s, claim=f"c{i}", evidence=[_pick(s.evidence, i)])
            elif op == "wh_dep":
                s, _ = T.propose_wh(s, claim=f"c{i}", evidence=[_pick(s.evidence, i)],
                                    depends_on=[_pick(s.whs, i), _pick(s.whs, i + j)])
            elif op == "review":
                s, _ = T.record_review(s, _pick(s.whs, i), verdict)
            elif op == "critique_er":
                s, _ = T.file_critique(s, target_type="ER", target=_pick(s.ers, i), text="t")
            elif op == "rule":
                s = T.rule_on_critique(s, _pick(s.critiques, i), ["uphold", "dismiss", "needs_evidence"][j], "r",
                                       scope="a second route")
            elif op == "respond":
                s = T.respond_to_critique(s, _pick(s.critiques, i), ["accept", "decline", "dismiss"][j], "r")
            elif op == "critique_plan":
                s, _ = T.file_critique(s, target_type="strategy", text="t", severity=["HIGH", "MEDIUM", "LOW"][j])
            elif op == "abandon":
                s, _ = T.abandon_wh(s, _pick(s.whs, i), "r", by="planner")
            elif op == "obsolete":
                s = T.mark_obsolete(s, _pick(s.ers, i), "superseded")
            elif op == "iterate":
                s = T.expire_critiques(T.begin_iteration(s), after=j + 1)
            elif op == "breaker":
                s = T.break_circuit(s, [w.id for w in gates.unresolved_hypotheses(s)])
            elif op == "stalls":
                s = T.escalate_stalls(s, gates.stalled(s, limit=j + 1))
            elif op == "revise":
                s = T.revise_wh(s, _pick(s.whs, i), add_evidence=[_pick(s.evidence, j)])
            elif op == "dead_end":
                s, _ = T.add_dead_end(s, "d", related=[_pick(s.rqs, i)])
            elif op == "note":
                s, _ = T.add_note(s, "n")
            elif op == "human":
                kind = ["comment", "challenge", "redirect"][j]
                s, _ = T.receive_human(s, kind=kind, text="h", on=_pick(s.ers + s.whs, i), inbox_id=f"m{i}")
            elif op == "demote":
                s = T.demote_er(s, _pick(s.ers, i), "because")
        except T.TransitionError:
            assert s.model_dump() == before          # a refused transition changes nothing
        assert check(s) == [], (op, check(s))
        # ids are never reused: every id ever seen keeps denoting the same kind of object
        for coll in (s.rqs, s.evidence, s.whs, s.ers, s.critiques, s.reviews):
            for item in coll:
                issued.setdefault(item.id[:2], set()).add(item.id)
        for prefix, ids in issued.items():
            assert len(ids) <= s.counters.get(prefix, 0)
    for e in s.ers:
        assert any(r.id == e.review and r.verdict == "VERIFIED" for r in s.reviews)
