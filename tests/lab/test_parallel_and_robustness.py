"""Parallel dispatch (bounded, deterministic merge) and untrusted model output."""

from __future__ import annotations

import asyncio
import re

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from physlab.lab.scenarios import _parse as P
from physlab.lab.state.invariants import check
from physlab.llm.scripted import final_answer, tool_call
from tests.lab.direct import run_engine
from tests.lab.mini import Mini, calls, mini_problem

SIMPLE = Mini()


def sync_role(role):
    def fn(messages, info):
        return getattr(SIMPLE, role)(messages, info, P.prompt(messages))
    return fn


def fns(**override):
    base = {r: sync_role(r) for r in ("surveyor", "planner", "orchestrator", "researcher", "computer",
                                      "reviewer", "critic", "adjudicator", "formatter")}
    base.update(override)
    return base


def fanout_orchestrator(messages, info):
    prompt = P.prompt(messages)
    done = P.tool_returns(messages)
    if "RQ-" in P.block(prompt, "research-questions"):
        return tool_call(info.output_tools[0].name, {"complete": False, "summary": "wait"})
    if not done:
        return calls(*[("create_research_question", {"question": f"part {i}"}) for i in range(3)])
    rqs = sorted(re.findall(r"Created (RQ-\d+)", " ".join(done)))
    return tool_call(info.output_tools[0].name, {"dispatches": [
        {"worker": "researcher", "target": r, "instructions": f"do {r}"} for r in rqs]})


def slow_researchers(tracker):
    async def fn(messages, info):
        target = re.search(r"<target>\n(RQ-\d+)", P.prompt(messages)).group(1)
        tracker["now"] += 1
        tracker["max"] = max(tracker["max"], tracker["now"])
        # later dispatches finish first, so completion order is the reverse of dispatch order
        await asyncio.sleep({"RQ-1": 0.6, "RQ-2": 0.4, "RQ-3": 0.2}[target])
        tracker["now"] -= 1
        tracker["finished"].append(target)
        return final_answer(info, {"findings": f"value = {target}", "derivation_markdown": "d", "confidence": "exact"})
    return fn


async def _fanout(tmp_path, workers):
    tracker = {"now": 0, "max": 0, "finished": []}
    engine, out = await run_engine(tmp_path / f"w{workers}", fns(orchestrator=fanout_orchestrator,
                                                                 researcher=slow_researchers(tracker)),
                                   mini_problem(), max_iterations=1, parallel_workers=workers)
    return tracker, out.state


async def test_parallel_dispatch_is_concurrent_bounded_and_merged_in_order(tmp_path):
    tracker, s = await _fanout(tmp_path, 3)
    assert tracker["max"] == 3 and tracker["finished"] == ["RQ-3", "RQ-2", "RQ-1"]
    assert [(e.id, e.target) for e in s.evidence] == [("EV-1", "RQ-1"), ("EV-2", "RQ-2"), ("EV-3", "RQ-3")]
    assert [d.evidence for d in s.dispatches] == ["EV-1", "EV-2", "EV-3"]
    tracker, s = await _fanout(tmp_path, 2)
    assert tracker["max"] == 2
    assert [(e.id, e.target) for e in s.evidence] == [("EV-1", "RQ-1"), ("EV-2", "RQ-2"), ("EV-3", "RQ-3")]


async def test_sequential_dispatch(tmp_path):
    tracker, s = await _fanout(tmp_path, 1)
    assert tracker["max"] == 1 and tracker["finished"] == ["RQ-1", "RQ-2", "RQ-3"]
    assert check(s) == []


def unruly_orchestrator():
    """Misbehaves first (wrong role's tool, unknown ids, malformed args, bad dispatch target),
    then plays the simple scenario."""
    bad = iter([
        ModelResponse(parts=[ToolCallPart("execute_python", {"code": "print(1)"})]),          # not its tool
        ModelResponse(parts=[ToolCallPart("propose_hypothesis", {"claim": "x", "evidence_ids": ["EV-99"]})]),
        ModelResponse(parts=[ToolCallPart("create_research_question", "{not json")]),         # malformed
        ModelResponse(parts=[ToolCallPart("submit_decision", {"dispatches": [
            {"worker": "computer", "target": "RQ-42", "instructions": "x"}]})]),              # unknown target
    ])

    def fn(messages, info):
        if P.turn(messages) < 4 and P.iteration(P.prompt(messages)) == 1:
            try:
                return next(bad)
            except StopIteration:
                pass
        return SIMPLE.orchestrator(messages, info, P.prompt(messages))
    return fn


def double_promoting_reviewer():
    state = {"n": 0}

    def fn(messages, info):
        state["n"] += 1
        if state["n"] == 1:                                      # an invalid verdict first: corrected
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"verdict": "PROBABLY", "reasoning": "?"})])
        return final_answer(info, {"verdict": "VERIFIED", "reasoning": "ok"})
    return fn


async def test_untrusted_output_gets_corrections_and_the_run_goes_on(tmp_path):
    engine, out = await run_engine(tmp_path / "r", fns(orchestrator=unruly_orchestrator(),
                                                       reviewer=double_promoting_reviewer()), mini_problem())
    s = out.state
    assert out.status == "complete" and check(s) == []
    refused = [e.text for e in s.events if e.kind == "refused"]
    assert any("EV-99" in r for r in refused)
    assert len(s.ers) == 1 and len(s.reviews) == 1             # the invalid verdict was corrected, not recorded


async def test_a_role_that_never_behaves_is_recorded_and_bounded(tmp_path):
    def garbage(messages, info):
        return ModelResponse(parts=[TextPart("I refuse to use tools.")])
    engine, out = await run_engine(tmp_path / "r", fns(orchestrator=garbage), mini_problem(),
                                   max_consecutive_failures=2, tool_retries=1)
    s = out.state
    assert out.stop_reason == "model_failures" and out.status == "no_answer"
    assert sum(e.kind == "role_failed" and "orchestrator" in e.text for e in s.events) == 2
    assert check(s) == []


def premature_orchestrator():
    state = {"first": True}

    def fn(messages, info):
        if state["first"]:
            state["first"] = False
            return final_answer(info, {"complete": True, "summary": "too early"})
        return SIMPLE.orchestrator(messages, info, P.prompt(messages))
    return fn


async def test_premature_completion_is_refused_by_the_gates(tmp_path):
    engine, out = await run_engine(tmp_path / "r", fns(orchestrator=premature_orchestrator()), mini_problem())
    s = out.state
    refused = [e for e in s.events if e.kind == "completion_refused"]
    assert len(refused) == 1 and refused[0].iteration == 1 and "nothing is established yet" in refused[0].text
    assert not any(e.kind == "formatter_bounce" for e in s.events)       # the formatter was never asked
    assert out.status == "complete" and s.iteration > 1 and check(s) == []


def reluctant_formatter(times):
    state = {"n": 0}

    def fn(messages, info):
        if P.turn(messages) == 0:
            state["n"] += 1
        if state["n"] <= times:
            return final_answer(info, {"ready": False, "missing": "the value is not in the required form"})
        return SIMPLE.formatter(messages, info, P.prompt(messages))
    return fn


async def test_formatter_bounces_back_when_the_ers_cannot_fill_the_template(tmp_path):
    engine, out = await run_engine(tmp_path / "r", fns(formatter=reluctant_formatter(1)), mini_problem())
    s = out.state
    bounces = [e for e in s.events if e.kind == "formatter_bounce"]
    assert len(bounces) == 1 and "not in the required form" in bounces[0].text
    assert out.status == "complete" and check(s) == []


async def test_formatter_bounces_are_bounded_and_the_best_answer_is_kept(tmp_path):
    engine, out = await run_engine(tmp_path / "r", fns(formatter=reluctant_formatter(99)), mini_problem(),
                                   max_format_bounces=2)
    s = out.state
    assert sum(e.kind == "formatter_bounce" for e in s.events) == 2
    assert out.stop_reason == "formatter_bounces" and out.status == "partially_complete"
    assert "42" in out.answer_text and "ER-1" in out.answer_text        # the best current answer, with its standing
    assert (tmp_path / "r" / "ANSWER.md").read_text().startswith("> **Standing: partial**")


async def test_an_orchestrator_call_sent_again_shorter_does_not_apply_its_transitions_twice(tmp_path):
    """The server refuses the orchestrator's second request as too long for its context window,
    after the tools of its first reply have run: the call starts again with a shorter prompt, from
    the state it began with, so the question it creates again exists once."""
    from physlab.llm.errors import ContextTooLong

    tries = []

    def orchestrator(messages, info):
        prompt, out, turn = P.prompt(messages), info.output_tools[0].name, P.turn(messages)
        if P.iteration(prompt) != 1:
            return tool_call(out, {"summary": "wait"})
        if turn == 0:
            tries.append(prompt)
            return calls(("create_research_question", {"question": "part 0"}))
        if len(tries) == 1:
            raise ContextTooLong("orchestrator", window=3000, prompt_tokens=3500)
        return tool_call(out, {"summary": "wait"})

    _, out = await run_engine(tmp_path / "r", fns(orchestrator=orchestrator), mini_problem(), max_iterations=1,
                              critic_every=0)
    assert len(tries) == 2
    assert [(q.id, q.question) for q in out.state.rqs] == [("RQ-1", "part 0")]
    assert [e.text for e in out.state.events if e.kind == "role_failed"] == []
