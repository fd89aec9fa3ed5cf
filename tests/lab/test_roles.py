"""Each role driven on its own with a FunctionModel: typed outputs, tools, corrections."""

from __future__ import annotations

from pydantic_ai.messages import ModelResponse, ToolCallPart

from physlab.lab import context as C
from physlab.lab.roles import (
    adjudicator,
    computer,
    critic,
    formatter,
    orchestrator,
    planner,
    researcher,
    reviewer,
    surveyor,
)
from physlab.lab.roles._base import LabEnv
from physlab.lab.scenarios import _parse as P
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState
from physlab.llm.scripted import final_answer
from tests.lab.direct import make_ctx
from tests.lab.mini import TEMPLATE, calls, mini_problem

W = C.Windows()


def env_with(tmp_path, role, fn) -> LabEnv:
    return LabEnv(make_ctx(tmp_path, {role: fn}, mini_problem()), tool_retries=2, code_timeout_s=30)


def ask(text: str) -> C.RolePrompt:
    """A role prompt that is only a request (the role modules' plumbing is under test, not the context)."""
    return C.RolePrompt("test", head="", stable="", volatile=text)


def seeded_state():
    s = ResearchState(problem_id="mini")
    s, rq = T.create_rq(s, "What is 6*7?")
    s, ev = T.add_evidence(s, target=rq, role="computer", findings="value = 42", code="print(6*7)", output="42")
    s, wh = T.propose_wh(s, claim="6*7 = 42", value="42", evidence=[ev])
    return s, rq, ev, wh


async def test_surveyor_and_planner(tmp_path):
    sv = await surveyor.run(env_with(tmp_path, "surveyor", lambda m, i: final_answer(i, {
        "background": "b", "key_insights": ["k"], "known_methods": ["m"], "known_pitfalls": ["p"]})))
    assert sv.known_pitfalls == ["p"]
    s, *_ = seeded_state()
    s, cr = T.file_critique(s, target_type="strategy", text="too slow")
    seen = []

    def plan(m, i):
        seen.append(P.prompt(m))
        return final_answer(i, {"strategy": "faster", "add_sanity_checks": ["positive"],
                                "critique_responses": [{"critique_id": cr, "verdict": "dismiss", "response": "no"}]})
    out, desk = await planner.run(env_with(tmp_path, "planner", plan), s, [s.critique(cr)], W)
    assert out.critique_responses[0].verdict == "dismiss" and "too slow" in seen[0] and desk.dropped == []


async def test_orchestrator_tools_apply_transitions_and_correct_unknown_ids(tmp_path):
    s, rq, ev, wh = seeded_state()
    replies = iter([
        calls(("propose_hypothesis", {"claim": "c", "evidence_ids": ["EV-77"]})),
        calls(("propose_hypothesis", {"claim": "c", "evidence_ids": [ev], "value": "42"}),
              ("add_research_note", {"text": "remember units"}), ("close_question", {"question_id": rq})),
    ])
    retries = []

    def fn(m, i):
        if "Refused" in str(m[-1]):
            retries.append(str(m[-1]))
        try:
            return next(replies)
        except StopIteration:
            return final_answer(i, {"complete": False, "summary": "ok"})
    desk = orchestrator.Desk(state=s, max_dispatches=2)
    d = await orchestrator.run(env_with(tmp_path, "orchestrator", fn), desk, ask("go"))
    assert d.complete is False and retries and "EV-77" in desk.refused[0]
    assert desk.state.wh("WH-2").value == "42" and desk.state.rq(rq).status == "answered"
    assert desk.state.notes[0].text == "remember units" and s.wh("WH-2") is None   # the input state is untouched


async def test_computer_documents_first_runs_real_code_and_submits(tmp_path):
    turns = iter([
        calls(("execute_python", {"code": "print(1)"})),                               # too early: refused
        calls(("document_approach", {"approach": "multiply"})),
        ModelResponse(parts=[ToolCallPart("submit_result", {"findings": "x", "method": "m", "confidence": "exact"})]),  # no run yet
        calls(("execute_python", {"code": "import sympy\nprint(sympy.Integer(6)*7)"})),
    ])

    def fn(m, i):
        try:
            return next(turns)
        except StopIteration:
            out = P.tool_returns(m, "execute_python")[-1]
            return final_answer(i, {"findings": "value = " + out.split("STDOUT:\n")[1].split()[0], "method": "sympy",
                                    "confidence": "exact"})
    env = env_with(tmp_path, "computer", fn)
    bench = computer.Bench(env)
    res = await computer.run(env, bench, ask("task"))
    assert res.findings == "value = 42"
    assert bench.refused == ["execute_python before document_approach"]
    assert len(bench.runs) == 1 and "exit code 0" in bench.runs[0][1]


async def test_researcher_reviewer_critic_adjudicator(tmp_path):
    r, derivation = await researcher.run(env_with(tmp_path, "researcher", lambda m, i: final_answer(i, {
        "findings": "f", "derivation_markdown": "d", "confidence": "partial"})), ask("task"))
    assert r.confidence == "partial" and derivation == "d"
    s, rq, ev, wh = seeded_state()
    prompt = C.for_reviewer(mini_problem(), s, W, wh)
    assert "<code>" in prompt.text and "print(6*7)" in prompt.text and "6*7 = 42" in prompt.text

    def rev(m, i):
        if not P.tool_returns(m):
            return calls(("execute_python", {"code": "print(6*7 == 42)"}))
        return final_answer(i, {"verdict": "VERIFIED" if "True" in P.tool_returns(m)[-1] else "REFUTED", "reasoning": "ran"})
    assert (await reviewer.run(env_with(tmp_path, "reviewer", rev), prompt)).verdict == "VERIFIED"
    s, _ = T.record_review(s, wh, "VERIFIED")
    audit = await critic.run(env_with(tmp_path, "critic", lambda m, i: final_answer(i, {"critiques": [
        {"target_type": "ER", "target": "ER-1", "kind": "coherence", "text": "t"}]})), critic.Desk(s, 4), ask("audit"))
    assert audit.critiques[0].target == "ER-1"
    ruling = await adjudicator.run(env_with(tmp_path, "adjudicator", lambda m, i: final_answer(i, {
        "decision": "dismiss", "reasoning": "fine"})), ask("rule"))
    assert ruling.decision == "dismiss"


async def test_formatter_refuses_unfilled_template_then_accepts(tmp_path):
    turns = iter([final_answer_args(True, TEMPLATE), final_answer_args(True, TEMPLATE.replace("...", "42"))])

    def fn(m, i):
        return next(turns)(i)
    s, rq, ev, wh = seeded_state()
    s, _ = T.record_review(s, wh, "VERIFIED")
    desk = formatter.Desk(s, TEMPLATE, forced=False)
    out = await formatter.run(env_with(tmp_path, "formatter", fn), desk, ask("format"))
    assert out.ready and "value = 42" in out.answer_code and out.sources[0].source == "ER-1"
    assert formatter.check_answer_code("def other():\n    return 1\n", TEMPLATE) is not None
    assert formatter.check_answer_code("def answer(:\n", TEMPLATE).startswith("answer_code is not valid Python")


def final_answer_args(ready, code):
    return lambda info: final_answer(info, {"ready": ready, "answer_code": code, "answer_markdown": "a",
                                            "sources": [{"part": "value", "source": "ER-1"}]})
