"""What decides in code whether a wrong answer survives (issue 33, findings 4, 6, 7, 9 and the
planner's and orchestrator's levers of 5): the adjudicator's third ruling and its sanity-check rule,
completion blocked by a competing hypothesis left undecided, the two bugs (a forced answer resting
on nothing, a resumed partial run's stale answer), and the loop controls (stall escalation,
expiry of old low-severity critiques, the circuit breaker, iterations remaining)."""

from __future__ import annotations

import subprocess

from physlab.lab import context as C, gates
from physlab.lab.engine import LabEngine, LabSettings
from physlab.lab.roles import adjudicator, orchestrator, planner
from physlab.lab.scenarios import _parse as P
from physlab.lab.state import transitions as T
from physlab.lab.state.invariants import check
from physlab.lab.state.models import ResearchState
from physlab.llm.scripted import final_answer, tool_call
from tests.lab.direct import make_ctx, run_engine
from tests.lab.mini import TEMPLATE, Mini, calls, mini_problem
from tests.lab.test_checks_and_balances import fns
from tests.lab.test_roles import ask, env_with

W = C.Windows()


def established(value: str = "42"):
    s = ResearchState(problem_id="mini")
    s, _ = T.set_strategy(s, "compute it", add_checks=["the answer is a positive integer"])
    s = T.begin_iteration(s)
    s, rq = T.create_rq(s, "What is 6*7?")
    s, ev = T.add_evidence(s, target=rq, role="computer", findings=f"value = {value}", code="print(6*7)", output="42")
    s, wh = T.propose_wh(s, claim=f"6*7 = {value}", value=value, evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED", "recomputed")
    return s, rq, ev, wh, s.wh(wh).er


# ------------------------------------------------------------------ 4. the adjudicator
def test_the_adjudicator_can_ask_for_evidence_and_the_state_carries_its_scope():
    s, rq, ev, wh, er = established()
    s, cr = T.file_critique(s, target_type="ER", target=er, text="6*7 was only computed once, by one script")
    s = T.rule_on_critique(s, cr, "needs_evidence", "The record cannot settle it.",
                           scope="Recompute 6*7 by repeated addition and compare")
    c = s.critique(cr)
    assert (c.status, c.scope) == ("needs_evidence", "Recompute 6*7 by repeated addition and compare")
    assert s.er(er).status == "demoted" and s.wh(wh).status == "demoted" and check(s) == []
    orch = C.for_orchestrator(mini_problem(), s, W, new_evidence=[], new_reviews=[], events=[], human=[], gates=[],
                              max_workers=3).text
    assert "repeated addition" in P.block(orch, "hypotheses")
    worker = C.for_worker("computer", mini_problem(), s, W, target=wh, instructions="x", method_hints="", relevant=[])
    assert "repeated addition" in P.block(worker.text, "earlier-attempts")


async def test_the_adjudicator_role_returns_a_needs_evidence_ruling_with_its_scope(tmp_path):
    ruling = await adjudicator.run(env_with(tmp_path, "adjudicator", lambda m, i: final_answer(i, {
        "decision": "needs_evidence", "reasoning": "undecidable from the record",
        "investigation_scope": "evaluate F at p = 3/4"})), ask("rule"))
    assert ruling.decision == "needs_evidence" and ruling.investigation_scope == "evaluate F at p = 3/4"


async def test_a_critique_citing_a_violated_sanity_check_is_not_dismissed_on_theory_alone(tmp_path):
    sent = []

    def dismiss_on_theory(messages, info):
        sent.append(P.corrections(messages))
        return final_answer(info, {"decision": "dismiss", "reasoning": "the formula is obviously fine"})

    ruling = await adjudicator.run(env_with(tmp_path, "adjudicator", dismiss_on_theory), ask("rule"),
                                   cites_checks=["SC-1"])
    assert any("SC-1" in c for c in sent[-1]), sent           # told why, while it had tries left
    assert ruling.decision == "needs_evidence" and "SC-1" in ruling.investigation_scope

    def dismiss_with_a_check(messages, info):
        if not P.tool_returns(messages, "execute_python"):
            return calls(("execute_python", {"code": "print('F(3/4) =', 0.25)"}))
        return final_answer(info, {"decision": "dismiss", "reasoning": "evaluated: F(3/4) = 0.25 <= 1"})

    ruling = await adjudicator.run(env_with(tmp_path, "adjudicator", dismiss_with_a_check), ask("rule"),
                                   cites_checks=["SC-1"])
    assert ruling.decision == "dismiss"


# ------------------------------------------------------------------ 5. the planner's and orchestrator's levers
def test_the_planner_can_decline_abandon_a_hypothesis_and_mark_a_result_obsolete():
    s, rq, ev, wh, er = established()
    s, other = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=[ev])
    s, _ = T.record_review(s, other, "INCONCLUSIVE", "one script")
    s, cr = T.file_critique(s, target_type="strategy", text="add a sanity check that 6*7 is even",
                            severity="LOW")
    s = T.respond_to_critique(s, cr, "decline", "true, but the integer check already covers what matters")
    s, de = T.abandon_wh(s, other, "superseded by ER-1", by="planner")
    s = T.mark_obsolete(s, er, "superseded")
    assert s.critique(cr).status == "declined" and s.wh(other).status == "abandoned"
    assert "planner" in next(d for d in s.dead_ends if d.id == de).description
    assert s.er(er).obsolete and s.is_established(wh) and check(s) == []
    assert "obsolete" in P.block(C.for_critic(mini_problem(), s, W, max_critiques=2).text, "established-results")


async def test_the_planners_plan_is_checked_against_the_state(tmp_path):
    s, rq, ev, wh, er = established()
    seen = []

    def plan(messages, info):
        seen.append(P.corrections(messages))
        return final_answer(info, {"strategy": "s", "entity_actions": [
            {"id": er, "action": "abandon", "reason": "x"}, {"id": "WH-9", "action": "abandon", "reason": "y"}]})
    out, desk = await planner.run(env_with(tmp_path, "planner", plan), s, [], W)
    assert any(er in c for c in seen[1]) and out.entity_actions == [] and desk.dropped


async def test_the_orchestrator_can_abandon_a_hypothesis_and_names_the_results_that_make_the_answer(tmp_path):
    s, rq, ev, wh, er = established()
    s, other = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=[ev])
    s, _ = T.record_review(s, other, "INCONCLUSIVE")
    replies = iter([calls(("abandon_hypothesis", {"hypothesis_id": other, "reason": "ER-1 decides it"}))])

    def fn(m, i):
        return next(replies, None) or final_answer(i, {"complete": True, "answer_results": [er]})
    desk = orchestrator.Desk(state=s, max_dispatches=2)
    d = await orchestrator.run(env_with(tmp_path, "orchestrator", fn), desk, ask("go"))
    assert desk.state.wh(other).status == "abandoned" and d.answer_results == [er]


def test_the_orchestrator_is_told_how_many_iterations_remain():
    s, *_ = established()
    turn = P.block(C.for_orchestrator(mini_problem(), s, W, new_evidence=[], new_reviews=[], events=[], human=[],
                                      gates=[], max_workers=3, controls=C.Controls(max_iterations=40)).text, "turn")
    assert "Iteration 1 of 40" in turn and "39 remain" in turn
    late = T.begin_iteration(T.begin_iteration(s))
    late_prompt = C.for_orchestrator(mini_problem(), late, W, new_evidence=[], new_reviews=[], events=[], human=[],
                                     gates=[], max_workers=3, controls=C.Controls(max_iterations=4))
    signals = P.block(late_prompt.text, "run-signals")
    assert "1 iteration remains" in signals and "synthesise" in signals.lower()


# ------------------------------------------------------------------ 6. completion
def test_completion_is_blocked_while_a_competing_hypothesis_with_another_value_sits_inconclusive():
    s, rq, ev, wh, er = established()
    s = T.close_rq(s, rq)
    s = T.record_audit(s)
    assert gates.completion_blockers(s) == []
    s, other = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=[ev])
    s, _ = T.record_review(s, other, "INCONCLUSIVE", "one script only")
    blockers = gates.completion_blockers(s)
    assert any(other in b and "41" in b for b in blockers), blockers
    s, _ = T.abandon_wh(s, other, "ER-1 settles it", by="orchestrator")
    assert gates.completion_blockers(s) == []


# ------------------------------------------------------------------ 7. two bugs
async def test_a_forced_answer_with_nothing_behind_it_is_no_answer(tmp_path):
    def idle(messages, info):
        return tool_call(info.output_tools[0].name, {"summary": "thinking"})

    def made_up(messages, info):
        return final_answer(info, {"ready": True, "answer_code": TEMPLATE.replace("...", "42"),
                                   "answer_markdown": "value 42", "sources": []})
    engine, out = await run_engine(tmp_path / "r", fns(orchestrator=idle, formatter=made_up), mini_problem(),
                                   max_iterations=1, tool_retries=1)
    assert out.status == "no_answer" and out.answer_code is None and out.answer_text is None
    assert not (tmp_path / "r" / "ANSWER.md").exists()


async def test_a_resumed_partial_run_rewrites_its_answer(tmp_path):
    ws = tmp_path / "r"
    engine, out = await run_engine(ws, fns(), mini_problem(), max_iterations=2)
    assert out.status == "partially_complete"
    assert (ws / "ANSWER.md").read_text().startswith("> **Standing: partial**")

    def waiting(messages, info):
        return tool_call(info.output_tools[0].name, {"summary": "one more look"})
    resumed = LabEngine(make_ctx(ws, fns(orchestrator=waiting), mini_problem()), LabSettings(max_iterations=3))
    again = await resumed.run(resume=True)
    log = subprocess.run(["git", "log", "--format=%H %s"], cwd=ws, capture_output=True, text=True).stdout
    sha = next(line.split()[0] for line in log.splitlines() if " iteration 3:" in line and "run ended" not in line)
    at_3 = subprocess.run(["git", "show", f"{sha}:ANSWER.md"], cwd=ws, capture_output=True, text=True).stdout
    assert at_3.startswith("# Provisional answer (iteration 3)"), at_3[:200]
    assert again.status == "partially_complete" and "(max_iterations)" in again.answer_text


async def test_a_run_rewound_to_its_forced_end_does_not_inherit_the_forced_answer(tmp_path):
    from physlab.lab.workspace import RunWorkspace

    ws = tmp_path / "r"
    _, out = await run_engine(ws, fns(), mini_problem(), max_iterations=2)
    assert out.status == "partially_complete" and out.state.final_answer_code is not None
    RunWorkspace(ws).rewind(2)                                  # the newest commit of iteration 2: the forced end

    def waiting(messages, info):
        return tool_call(info.output_tools[0].name, {"summary": "one more look"})
    again = await LabEngine(make_ctx(ws, fns(orchestrator=waiting), mini_problem()),
                            LabSettings(max_iterations=3)).run(resume=True)
    assert any("forced answer is set aside" in e.text for e in again.state.events)
    assert again.status == "partially_complete" and "(max_iterations)" in again.answer_text
    log = subprocess.run(["git", "log", "--format=%H %s"], cwd=ws, capture_output=True, text=True).stdout
    sha = next(line.split()[0] for line in log.splitlines() if " iteration 3:" in line and "run ended" not in line)
    at_3 = subprocess.run(["git", "show", f"{sha}:ANSWER.md"], cwd=ws, capture_output=True, text=True).stdout
    assert at_3.startswith("# Provisional answer (iteration 3)"), at_3[:200]      # ANSWER.md kept updating


# ------------------------------------------------------------------ 9. loop controls
def test_a_hypothesis_that_keeps_failing_review_is_escalated_once_to_the_planner():
    s, rq, ev, wh, er = established()
    s, other = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=[ev])
    for n in range(2):
        s, _ = T.record_review(s, other, "INCONCLUSIVE", f"not enough, round {n}")
        s, _ = T.add_evidence(s, target=other, role="computer", findings="still 41")
    assert gates.stalled(s, limit=2) == {other: 2}
    s = T.escalate_stalls(s, gates.stalled(s, limit=2))
    s = T.escalate_stalls(s, gates.stalled(s, limit=2))                # once per stall
    filed = [c for c in s.critiques if c.source == "lab"]
    assert len(filed) == 1 and filed[0].target == other and filed[0].kind == "stall"
    signals = P.block(C.for_orchestrator(mini_problem(), s, W, new_evidence=[], new_reviews=[], events=[], human=[],
                                         gates=[], max_workers=3).text, "run-signals")
    assert "STALLED" in signals and other in signals


def test_old_low_severity_critiques_expire_and_high_ones_never_do():
    s, rq, ev, wh, er = established()
    s, low = T.file_critique(s, target_type="coordination", text="notation drifts", severity="LOW")
    s, high = T.file_critique(s, target_type="strategy", text="the plan ignores two-fault events", severity="HIGH")
    for _ in range(2):
        s = T.expire_critiques(T.begin_iteration(s), after=3)
    assert s.critique(low).status == "open"
    s = T.expire_critiques(T.begin_iteration(s), after=3)
    assert s.critique(low).status == "expired" and s.critique(high).status == "open"


async def test_completion_blocked_again_and_again_trips_the_circuit_breaker(tmp_path):
    class TwoValues(Mini):
        seen: dict = {}

        def orchestrator(self, messages, info, prompt):
            out, done = info.output_tools[0].name, P.tool_returns(messages)
            evidence = P.new_evidence(prompt)
            if evidence and not P.hypotheses(prompt) and not done:
                ev = P.ids(evidence[-1], "EV")[0]
                return calls(("close_question", {"question_id": "RQ-1"}),
                             ("propose_hypothesis", {"claim": "6*7 = 42", "value": "42", "evidence_ids": [ev]}),
                             ("propose_hypothesis", {"claim": "6*7 = 41", "value": "41", "evidence_ids": [ev]}))
            if P.established(prompt) and not done:
                return tool_call(out, {"complete": True})                 # never abandons WH-2 itself
            return super().orchestrator(messages, info, prompt)

        def reviewer(self, messages, info, prompt):
            verdict = "INCONCLUSIVE" if "6*7 = 41" in P.block(prompt, "claim") else "VERIFIED"
            return final_answer(info, {"verdict": verdict, "reasoning": "checked"})

    play = TwoValues()
    roles = {r: (lambda r: lambda m, i: getattr(play, r)(m, i, P.prompt(m)))(r) for r in  # noqa: B023 - bound by the outer lambda
             ("surveyor", "planner", "orchestrator", "researcher", "computer", "reviewer", "critic", "adjudicator",
              "formatter")}
    engine, out = await run_engine(tmp_path / "r", roles, mini_problem(), max_iterations=10)
    s = out.state
    assert out.status == "complete" and s.wh("WH-2").status == "abandoned"
    assert any("circuit breaker" in d.description and "WH-2" in d.related for d in s.dead_ends)
    assert sum(e.kind == "completion_refused" for e in s.events) == 3


async def test_the_computers_evidence_keeps_every_script_it_ran(tmp_path):
    scripts = [f"print({n})" for n in range(1, 4)]

    def computer(messages, info):
        if P.turn(messages) == 0:
            return calls(("document_approach", {"approach": "three scripts"}))
        ran = P.tool_returns(messages, "execute_python")
        if len(ran) < len(scripts):
            return calls(("execute_python", {"code": scripts[len(ran)]}))
        return final_answer(info, {"findings": "value = 42", "method": "m", "confidence": "exact"})
    engine, out = await run_engine(tmp_path / "r", fns(computer=computer), mini_problem(), max_iterations=2)
    ev = out.state.evidence[0]
    assert [x.code.strip() for x in ev.scripts] == scripts and "3" in ev.scripts[-1].output
    review = C.for_reviewer(mini_problem(), out.state, W, "WH-1").text
    assert all(code in P.block(review, "supporting-evidence") for code in scripts)


# ------------------------------------------------------------------ 3. the critic may not stay silent
async def test_a_silent_critic_must_say_what_it_audited_and_each_critique_is_graded(tmp_path):
    from physlab.lab.roles import critic

    s, rq, ev, wh, er = established()
    sent = []

    def silent(messages, info):
        sent.append(P.corrections(messages))
        if len(sent) == 1:
            return final_answer(info, {"critiques": []})
        return final_answer(info, {"critiques": [], "assessment": f"{er}: 6*7 recomputed, SC-1 holds; the strategy "
                                                                  "follows the evidence; no loop."})
    audit = await critic.run(env_with(tmp_path, "critic", silent), critic.Desk(s, 2), ask("audit"))
    assert sent[1] and "silence" in sent[1][0].lower() and er in audit.assessment
    graded = critic.CritiqueDraft(target_type="strategy", text="t", severity="HIGH", test="run a second route")
    s2, cr = T.file_critique(s, target_type=graded.target_type, text=graded.text, severity=graded.severity,
                             test=graded.test)
    assert (s2.critique(cr).severity, s2.critique(cr).test) == ("HIGH", "run a second route")


# ------------------------------------------------------------------ 5. the formatter's code
def test_the_formatters_code_may_not_return_sentinels_or_use_undeclared_symbols():
    from physlab.lab.roles.formatter import check_answer_code

    tpl = "import sympy as sp\n\np = sp.symbols('p')\n\ndef answer(p):\n    F = ...\n    return F\n"
    assert check_answer_code(tpl.replace("...", "(1 - p**2)/(1 + p)"), tpl) is None
    assert check_answer_code(tpl.replace("...", "sp.Rational(1, 2) * sp.exp(-p)"), tpl) is None
    assert "sentinel" in check_answer_code(tpl.replace("...", "sp.nan if p > 1 else 1 - p**2"), tpl)
    assert "sentinel" in check_answer_code(tpl.replace("    F = ...", "    if p > 1:\n        raise ValueError('no')\n"
                                                                     "    F = 1 - p"), tpl)
    assert "sentinel" in check_answer_code(tpl.replace("...", "sp.Piecewise((1 - p, p < 1), (sp.oo, True))"), tpl)
    assert "`q`" in check_answer_code(tpl.replace("...", "1 - q*p"), tpl)                 # an undefined name
    assert "`x`" in check_answer_code(tpl.replace("...", "1 - sp.Symbol('x')*p"), tpl)    # a symbol not declared
    assert "sp.Function" in check_answer_code(tpl.replace("...", "sp.Function('f')(p)"), tpl)


# ------------------------------------------------------------------ the forced answer within the budget
async def test_the_forced_formatter_never_asks_for_grace(tmp_path, monkeypatch):
    from physlab.llm.meter import RunMeter
    from physlab.llm.usage import Budget
    from tests.lab.helpers import calls as records, solve
    from tests.lab.mini import register

    def no_grace(self, calls: int = 1):
        raise AssertionError("the lab asked to go past the budget")
    monkeypatch.setattr(RunMeter, "grace", no_grace)
    a = await solve(tmp_path / "r", register("lab-mini-no-grace"), problem=mini_problem(), budget=Budget(max_calls=13),
                    parallel_workers=1)
    assert a.stop_reason == "budget:max_calls" and len(records(tmp_path / "r")) <= 13
    assert a.status == "partially_complete" and "42" in a.answer_text
