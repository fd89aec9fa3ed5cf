"""physics-intern's protocol, point by point (issue 41), where the differential test's two scenarios
do not reach: each rule as a lab parameter, on with ``preset=paper`` and off by default.

1. the reviewer and the adjudicator get no tools and are told to assess, not compute;
2. the orchestrator's flow control: one exit a turn, at most 2 hypotheses in play and 1 open
   question, worked one at a time, at most 3 pieces of evidence a question, no worker on a question
   while a refuted or inconclusive hypothesis stands, nothing new while a HIGH critique is open, a
   state summary after each round;
3. the critic after every VERIFIED review and every critic_every iterations since the last;
4. an upheld critique abandons the result's hypothesis and what builds on it;
5. the whole-domain guideline; 6. refuted evidence replaced; 7. no standards, no computer algebra;
8. the forced answer always fills the template, BEST_GUESS.md, per-role output limits, the
   post-integration checks; 9. completion blocked by any hypothesis in play.
"""

from __future__ import annotations

import subprocess

from pydantic_ai.messages import ModelRequest, UserPromptPart

from physlab.lab import context as C, gates, integration_checks, routing
from physlab.lab.engine import PAPER
from physlab.lab.roles import adjudicator, orchestrator, reviewer
from physlab.lab.roles._base import LabEnv, instructions
from physlab.lab.scenarios import _parse as P
from physlab.lab.state import transitions as T
from physlab.lab.state.invariants import check
from physlab.lab.state.models import ResearchState
from physlab.lab.tools import LabTools
from physlab.llm.scripted import final_answer, tool_call
from physlab.strategies.lab import LabParams
from physlab.tools.cas.detect import SystemStatus
from physlab.tools.choice import ToolChoice
from tests.lab.direct import make_ctx, run_engine
from tests.lab.mini import TEMPLATE, calls, mini_problem
from tests.lab.test_checks_and_balances import fns

W = C.Windows()
FLOW = LabParams.parse("lab", {"preset": "paper"}).settings().flow


def paper(**extra):
    return {**PAPER, "max_iterations": extra.pop("max_iterations", 4), **extra}


def state_with_evidence(n: int = 1):
    s = ResearchState(problem_id="mini")
    s, _ = T.set_strategy(s, "compute it")
    s = T.begin_iteration(s)
    s, rq = T.create_rq(s, "What is 6*7?")
    evs = []
    for _ in range(n):
        s, ev = T.add_evidence(s, target=rq, role="computer", findings="value = 42", code="print(6*7)", output="42")
        evs.append(ev)
    return s, rq, evs


async def one_turn(tmp_path, state, fn, flow=FLOW):
    """One orchestrator call on ``state`` with the paper's flow; (decision, desk, requests seen)."""
    seen = []

    def record(messages, info):
        seen.append(list(messages))
        return fn(messages, info)
    env = LabEnv(make_ctx(tmp_path, {"orchestrator": record}, mini_problem()), tool_retries=2)
    desk = orchestrator.Desk(state=state, max_dispatches=1, flow=flow)
    prompt = C.for_orchestrator(mini_problem(), state, W, new_evidence=[], new_reviews=[], events=[], human=[],
                                gates=[], max_workers=1, controls=C.Controls(views="paper", max_open_questions=1))
    decision = await orchestrator.run(env, desk, prompt)
    return decision, desk, seen


# ------------------------------------------------------------------ 1. judges without tools
async def test_without_computing_the_judges_get_no_tools_and_are_told_to_assess(tmp_path):
    offered = {}

    def judge(role):
        def fn(messages, info):
            offered[role] = [t.name for t in info.function_tools]
            if role == "reviewer":
                return final_answer(info, {"verdict": "VERIFIED", "reasoning": "read the printed value"})
            return final_answer(info, {"decision": "dismiss", "reasoning": "the record answers it"})
        return fn
    for role, run in (("reviewer", reviewer.run), ("adjudicator", adjudicator.run)):
        env = LabEnv(make_ctx(tmp_path, {role: judge(role)}, mini_problem()), judges_compute=False)
        await run(env, C.RolePrompt("t", head="", stable="", volatile="judge it"))
        assert offered[role] == [], role
        text = instructions(role, computes=False)
        assert "You have no tools" in text and "Use `execute_python`" not in text, role
        assert "Use `execute_python`" in instructions(role), role                  # PhysLab's judges compute


async def test_the_paper_offers_no_computer_algebra_and_no_standards(tmp_path):
    env = LabEnv(make_ctx(tmp_path, {}, mini_problem()), judges_compute=False)
    async with LabTools(ToolChoice(cas=True), env, tmp_path / "cache") as tools:
        tools.statuses = [SystemStatus(language="maxima", name="Maxima", available=True, interpreter="maxima")]
        assert [t.name for t in tools.tools("computer")] == ["execute"]               # --tools cas, PhysLab
        assert tools.tools("reviewer") == [] and tools.tools("adjudicator") == []     # judges without tools
    engine, out = await run_engine(tmp_path / "r", fns(), mini_problem(), **paper(max_iterations=1))
    assert not engine.env.standards and not engine.cfg.computer_algebra
    assert "How this lab does physics" not in instructions("reviewer", standards=False)


# ------------------------------------------------------------------ 2. the orchestrator's flow
async def test_one_open_question_at_a_time_and_a_state_summary_after_a_round(tmp_path):
    s = ResearchState(problem_id="mini")

    def fn(messages, info):
        if P.turn(messages) == 0:
            return calls(("create_research_question", {"question": "What is 6?"}),
                         ("create_research_question", {"question": "What is 7?"}))
        return tool_call(info.output_tools[0].name, {"summary": "done"})
    decision, desk, seen = await one_turn(tmp_path, s, fn)
    assert [r.id for r in desk.state.rqs] == ["RQ-1"]
    assert any("at most 1 at a time" in r for r in desk.refused)
    summary = [p.content for m in seen[1] if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, UserPromptPart) and "State after your changes" in str(p.content)]
    assert summary and "Open questions: RQ-1 (0 evidence)" in summary[0] and "Pending:" in summary[0]


async def test_a_hypothesis_ends_the_turn_closes_its_question_and_gets_no_summary(tmp_path):
    s, rq, evs = state_with_evidence()

    def fn(messages, info):
        if P.turn(messages) == 0:
            return calls(("propose_hypothesis", {"claim": "6*7 = 42", "value": "42", "evidence_ids": evs}))
        return tool_call(info.output_tools[0].name, {"dispatches": [{"worker": "computer", "target": rq,
                                                                      "instructions": "again"}]})
    decision, desk, seen = await one_turn(tmp_path, s, fn)
    assert desk.state.rq(rq).status == "answered" and desk.exited == "proposal"
    assert decision.dispatches == []                          # one exit a turn: the proposal stands
    assert any("one exit a turn" in r for r in desk.refused)
    assert not any(isinstance(p, UserPromptPart) and "State after" in str(p.content)
                   for m in seen[-1] if isinstance(m, ModelRequest) for p in m.parts)


def test_dispatch_is_held_back_by_the_evidence_cap_an_unresolved_hypothesis_and_another_question():
    s, rq, evs = state_with_evidence(3)
    assert "reached 3 pieces of evidence" in orchestrator.dispatch_problem(s, rq, FLOW)
    s, rq, evs = state_with_evidence(1)
    s, wh = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=evs)
    s, _ = T.record_review(s, wh, "REFUTED", "it is 42")
    s, rq2 = T.create_rq(s, "What is 6*7, again?")
    assert f"{wh} (refuted) must be resolved first" in orchestrator.dispatch_problem(s, rq2, FLOW)
    assert orchestrator.dispatch_problem(s, wh, FLOW) == ""            # new evidence on it is the way out
    s, _ = T.abandon_wh(s, wh, "refuted", by="orchestrator")
    assert "one question at a time" in orchestrator.dispatch_problem(s, rq2, FLOW)
    assert orchestrator.dispatch_problem(s, rq2, orchestrator.Flow()) == ""     # PhysLab's: none of these


async def test_no_third_hypothesis_and_nothing_new_while_a_high_critique_is_open(tmp_path):
    s, rq, evs = state_with_evidence(2)
    s, _ = T.propose_wh(s, claim="6*7 = 42", value="42", evidence=evs[:1])
    s, _ = T.propose_wh(s, claim="6*7 = 42 again", value="42", evidence=evs[1:])

    def fn(messages, info):
        if P.turn(messages) == 0:
            return calls(("propose_hypothesis", {"claim": "third", "evidence_ids": evs}))
        return tool_call(info.output_tools[0].name, {"summary": "ok"})
    _, desk, _ = await one_turn(tmp_path, s, fn)
    assert len(desk.state.whs) == 2 and any("at most 2" in r for r in desk.refused)
    s2, _, _ = state_with_evidence()
    s2, _ = T.file_critique(s2, target_type="strategy", text="the plan misses a case", severity="HIGH")
    s2 = T.close_rq(s2, "RQ-1", "dropped")

    def ask(messages, info):
        if P.turn(messages) == 0:
            return calls(("create_research_question", {"question": "anything"}))
        return tool_call(info.output_tools[0].name, {"summary": "ok"})
    _, desk, _ = await one_turn(tmp_path / "b", s2, ask)
    assert any("(HIGH) open" in r for r in desk.refused) and [r.status for r in desk.state.rqs] == ["dropped"]


# ------------------------------------------------------------------ 3. the critic's cadence
def test_the_critic_runs_after_a_verified_review_and_after_its_gap():
    assert routing.critic_after_verified(3, 2, 4, verified=True)
    assert not routing.critic_after_verified(5, 2, 4, verified=False)
    assert routing.critic_after_verified(6, 2, 4, verified=False)
    assert routing.critic_after_verified(4, 0, 4, verified=False)       # never audited: after 4 iterations


# ------------------------------------------------------------------ 4. an upheld critique abandons
def test_an_upheld_critique_abandons_the_result_and_what_builds_on_it():
    s, rq, evs = state_with_evidence(2)
    s, base = T.propose_wh(s, claim="a = 6", value="6", evidence=evs[:1])
    s, _ = T.record_review(s, base, "VERIFIED")
    s, top = T.propose_wh(s, claim="6*7 = 42", value="42", evidence=evs[1:], depends_on=[base])
    s, _ = T.record_review(s, top, "VERIFIED")
    s, cr = T.file_critique(s, target_type="ER", target=s.wh(base).er, text="a is 7", severity="HIGH")
    kept = T.rule_on_critique(s, cr, "uphold", "right")
    assert (kept.wh(base).status, kept.wh(top).status) == ("demoted", "verified")      # PhysLab: they wait
    gone = T.rule_on_critique(s, cr, "uphold", "right", abandon=True)
    assert (gone.wh(base).status, gone.wh(top).status) == ("abandoned", "abandoned")
    assert not gone.active_ers() and check(gone) == []
    assert any(set(d.related) == {base, top} for d in gone.dead_ends)


# ------------------------------------------------------------------ 5. the whole-domain guideline
def test_the_problem_guidelines_ask_for_the_whole_declared_domain():
    text = C.problem_sections(mini_problem())["problem-guidelines"]
    assert "every point of each parameter's declared domain" in text and "limiting value" in text


# ------------------------------------------------------------------ 6. refuted evidence is replaced
def test_new_evidence_on_a_refuted_hypothesis_replaces_the_refuted():
    s, rq, evs = state_with_evidence()
    s, wh = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=evs)
    s, _ = T.record_review(s, wh, "REFUTED", "it is 42")
    kept, new = T.add_evidence(s, target=wh, role="computer", findings="value = 42")
    assert kept.wh(wh).evidence == [*evs, new]
    dropped, new = T.add_evidence(s, target=wh, role="computer", findings="value = 42", drop_refuted=True)
    assert dropped.wh(wh).evidence == [new] and dropped.evidence[0].id == evs[0]    # kept in the record


# ------------------------------------------------------------------ 8. the end of a budget
async def test_the_papers_forced_answer_fills_the_template_from_an_unreviewed_hypothesis(tmp_path):
    def propose_then_idle(messages, info):
        prompt = P.prompt(messages)
        if "RQ-" not in P.block(prompt, "research-questions").replace("At most", "") or not P.ids(prompt, "EV"):
            return Mini_orchestrator(messages, info)
        if not P.hypotheses(prompt) and P.turn(messages) == 0 and "WH-" not in prompt:
            ev = P.ids(prompt, "EV")[0]
            return calls(("propose_hypothesis", {"claim": "6*7 = 42", "value": "42", "evidence_ids": [ev]}))
        return tool_call(info.output_tools[0].name, {"summary": "thinking"})

    shown = []

    def formatter(messages, info):
        shown.append(P.block(P.prompt(messages), "best-hypotheses"))
        return final_answer(info, {"ready": True, "answer_code": TEMPLATE.replace("...", "42"),
                                   "answer_markdown": "value 42", "sources": [{"part": "value", "source": "WH-1"}]})

    def never(messages, info):
        raise RuntimeError("the reviewer is down")
    params = paper(max_iterations=2, max_consecutive_failures=9)
    _, out = await run_engine(tmp_path / "paper", fns(orchestrator=propose_then_idle, formatter=formatter,
                                                      reviewer=never), mini_problem(), **params)
    assert out.status == "partially_complete" and "42" in (out.answer_code or "")
    assert "WH-1 [proposed]" in shown[-1]                              # unreviewed, and used
    _, ours = await run_engine(tmp_path / "ours", fns(orchestrator=propose_then_idle, formatter=formatter,
                                                      reviewer=never), mini_problem(), max_iterations=2,
                               max_consecutive_failures=9)
    assert ours.status == "no_answer"                                  # PhysLab: nothing reviewed, no answer


def Mini_orchestrator(messages, info):
    from tests.lab.mini import Mini

    return Mini().orchestrator(messages, info, P.prompt(messages))


async def test_best_guess_snapshots_per_role_output_limits_and_post_integration_checks(tmp_path):
    limits = {}

    def watch(role, fn):
        def wrapped(messages, info):
            limits.setdefault(role, (info.model_settings or {}).get("max_tokens"))
            return fn(messages, info)
        return wrapped
    base = fns()
    played = {role: watch(role, fn) for role, fn in base.items()}
    ws = tmp_path / "r"
    await run_engine(ws, played, mini_problem(), **paper(max_iterations=2, best_guess_every=1))
    assert limits["orchestrator"] == 16384 and limits["reviewer"] == 65536 and limits["surveyor"] is None
    assert (ws / "BEST_GUESS.md").exists()
    subjects = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True).stdout
    assert "iteration 2: best-guess snapshot" in subjects        # (at 1 the formatter had nothing to write)
    s, rq, evs = state_with_evidence()
    s, wh = T.propose_wh(s, claim="6*7 = 42, as WH-9 VERIFIED shows", value="42", evidence=evs)
    fixed, found = integration_checks.check(s)
    assert "[unverified]" in fixed.wh(wh).claim and found and "WH-9" in found[0]


# ------------------------------------------------------------------ 9. completion
def test_the_papers_completion_is_blocked_by_any_hypothesis_in_play_a_refuted_one_too():
    s, rq, evs = state_with_evidence()
    s = T.close_rq(s, rq, "answered")
    assert gates.paper_completion_blockers(s) == []                    # nothing established is no blocker upstream
    s, wh = T.propose_wh(s, claim="6*7 = 41", value="41", evidence=evs)
    s, _ = T.record_review(s, wh, "REFUTED", "it is 42")
    assert wh not in " ".join(gates.completion_blockers(s))            # PhysLab lets a refuted one stand
    assert any(b.startswith(f"{wh} has no VERIFIED review (refuted)") for b in gates.paper_completion_blockers(s))
    s, other = T.propose_wh(s, claim="6*7 = 42", value="42", evidence=evs)
    s, _ = T.record_review(s, other, "VERIFIED")
    assert any("no critic pass" in b for b in gates.paper_completion_blockers(s))


def test_output_limits_name_roles_and_a_bad_one_is_one_line():
    import pytest

    from physlab.errors import UserError

    with pytest.raises(UserError, match=r"--param max_output_tokens: unknown role\(s\) oracle; the roles are surveyor"):
        LabParams.parse("lab", {"max_output_tokens": {"oracle": 100}})
    ours = LabParams.parse("lab", {"preset": "paper", "max_output_tokens": {"critic": 4000}}).settings()
    assert ours.max_output_tokens == {"critic": 4000}                  # a value given explicitly wins whole


def test_no_early_reviews_and_no_stall_escalation_under_the_paper(tmp_path):
    from physlab.lab.engine import LabEngine, LabSettings

    ctx = make_ctx(tmp_path, {}, mini_problem())
    assert LabEngine(ctx, LabSettings(parallel_workers=3))._early_reviews() is not None        # PhysLab
    assert LabEngine(ctx, LabSettings(parallel_workers=3, early_reviews=False))._early_reviews() is None
    engine = LabEngine(ctx, LabParams.parse("lab", {"preset": "paper", "parallel_workers": 3}).settings())
    assert engine._early_reviews() is None and not engine.cfg.escalate_stalls
