"""What each role is shown decides whether a tempting wrong answer survives review (issue 33,
findings 1, 2 and 5): the reviewer sees what the lab already knows (the survey's pitfalls, the
other established results, the question the claim answers), a re-review carries the objection it
must answer, the adjudicator and the formatter see what they need, a worker sent back to a target
is told how earlier attempts on it failed, and the surveyor's conventions, checks and expected
structure of the answer reach the lab."""

from __future__ import annotations

from physlab.lab import context as C
from physlab.lab.roles._base import system_prompt
from physlab.lab.scenarios import _parse as P
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState, Survey, SurveyCheck
from physlab.problems.model import Problem
from tests.lab.helpers import qec_problem
from tests.lab.mini import mini_problem

W = C.Windows()
PITFALL = "Concluding F = 1 because every single fault is detected: two-fault events slip through."


def qec_state():
    """The seed's trap: the lab holds a verified base result and someone proposes F = 1."""
    s = ResearchState(problem_id="qec")
    s = T.set_survey(s, Survey(
        background="A [[4,2,2]] code prepared with a flag ancilla; post-selected fidelity F(p).",
        known_pitfalls=[PITFALL], conventions=["p is the two-qubit depolarizing probability per CNOT"],
        sanity_checks=[SurveyCheck(predicate="dF/dp at p = 0 vanishes",
                                   rationale="a fault-tolerant preparation has no O(p) infidelity")],
        expected_answer_structure="A ratio of two polynomials in p, not a constant."))
    s, _ = T.set_strategy(s, "verify the circuit, then enumerate faults", add_checks=["0 <= F(p) <= 1"])
    s = T.begin_iteration(s)
    s, rq0 = T.create_rq(s, "Does the noiseless circuit prepare |00>_AB?")
    s, ev0 = T.add_evidence(s, target=rq0, role="researcher", findings="it prepares |00>_AB")
    s, base = T.propose_wh(s, claim="The noiseless circuit prepares |00>_AB with the ancilla in |0>.", evidence=[ev0])
    s, _ = T.record_review(s, base, "VERIFIED", "stabilizers checked")
    s, rq = T.create_rq(s, "What is the post-selected logical fidelity F(p)?")
    s, ev = T.add_evidence(s, target=rq, role="researcher", findings="every single fault is detected, so F = 1")
    s, wh = T.propose_wh(s, claim="F_logical(p) = 1 for all p", value="1", evidence=[ev], depends_on=[base])
    return s, base, rq, wh


def test_a_reviewer_asked_to_verify_F_equals_1_sees_the_pitfall_that_forbids_it():
    s, base, rq, wh = qec_state()
    prompt = C.for_reviewer(qec_problem(), s, W, wh).text
    assert PITFALL in P.block(prompt, "known-pitfalls")
    assert "dF/dp at p = 0 vanishes" in P.block(prompt, "sanity-checks")         # the surveyor's check
    assert s.wh(base).er in P.block(prompt, "established-results")              # what the lab already holds
    assert "post-selected logical fidelity" in P.block(prompt, "question")      # what the claim answers


def test_the_adjudicator_sees_the_other_results_and_the_formatter_the_checks_and_the_answer_structure():
    s, base, rq, wh = qec_state()
    s, _ = T.record_review(s, wh, "VERIFIED")
    er_base, er_top = s.wh(base).er, s.wh(wh).er
    s, cr = T.file_critique(s, target_type="ER", target=er_top, text="F = 1 contradicts the fault-tolerance check")
    adj = C.for_adjudicator(qec_problem(), s, W, s.critique(cr)).text
    assert er_base in P.block(adj, "established-results") and PITFALL in P.block(adj, "known-pitfalls")
    assert "stabilizers checked" not in P.block(adj, "established-results")     # claims, not how they were reached
    s = T.request_completion(s, answer_results=[er_top])
    fmt = C.for_formatter(qec_problem(), s, W, forced=False).text
    assert "0 <= F(p) <= 1" in P.block(fmt, "sanity-checks")
    assert P.ids(P.block(fmt, "answer-structure"), "ER") == [er_top]


def test_a_re_review_holds_the_upheld_critique_and_its_ruling():
    s, base, rq, wh = qec_state()
    er = s.wh(base).er
    s, cr = T.file_critique(s, target_type="ER", target=er, kind="missing_validation",
                            text="The ancilla parity was never checked by an independent computation.")
    s = T.rule_on_critique(s, cr, "uphold", "A hand derivation only; the parity needs a computation.")
    s, rq2 = T.create_rq(s, "unused")
    s, ev = T.add_evidence(s, target=base, role="computer", findings="state-vector check passes",
                           code="print('PASS')", output="PASS")
    history = P.block(C.for_reviewer(qec_problem(), s, W, base).text, "review-history")
    assert "demoted" in history and er in history and cr in history
    assert "never checked by an independent computation" in history              # the objection
    assert "A hand derivation only" in history                                   # the ruling
    assert "stabilizers checked" in history                                      # the earlier verdict's reasons


def test_a_worker_sent_back_to_a_target_is_told_of_the_earlier_failures_on_it():
    s, base, rq, wh = qec_state()
    s, _ = T.record_review(s, wh, "REFUTED", "two-fault events XX on CNOT_12 and CNOT_34 are accepted and harmful")
    s, did = T.record_dispatch(s, "computer", wh, "enumerate the faults")
    s = T.dispatch_failed(s, did, "ModelFailure: the script timed out")
    prompt = C.for_worker("computer", qec_problem(), s, W, target=wh, instructions="recompute F(p)",
                          method_hints="", relevant=[])
    earlier = P.block(prompt.text, "earlier-attempts")
    assert "REFUTED" in earlier and "two-fault events" in earlier and "timed out" in earlier
    fresh = C.for_worker("computer", qec_problem(), s, W, target=rq, instructions="x", method_hints="", relevant=[])
    assert P.block(fresh.text, "earlier-attempts") == "(none)"


def test_the_surveyors_conventions_and_checks_seed_the_lab_and_its_expected_structure_reaches_the_critic():
    s, *_ = qec_state()
    assert "p is the two-qubit depolarizing probability per CNOT" in s.conventions
    check = next(c for c in s.sanity_checks if "dF/dp" in c.predicate)
    assert check.source == "surveyor" and "fault-tolerant" in check.rationale
    critic = C.for_critic(qec_problem(), s, W, max_critiques=2).text
    assert "not a constant" in P.block(critic, "background-survey")


def test_only_an_open_markdown_question_may_be_called_ill_posed():
    def researcher_sees(problem: Problem) -> str:
        prompt = C.for_worker("researcher", problem, ResearchState(), W, target="RQ-1", instructions="x",
                              method_hints="", relevant=[])
        return system_prompt("researcher", prompt.head) + prompt.text

    bench = researcher_sees(mini_problem())
    assert "ill-posed" not in bench and "well-posed" in bench
    open_q = Problem(id="q", statement="Is the vacuum of this model unique?", extra={"format": "markdown"})
    assert "ill-posed" in researcher_sees(open_q)
