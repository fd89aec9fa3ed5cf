"""Research in parallel where the science allows (issue #26): independent hypotheses are reviewed
concurrently, one that builds on another waits for its verdict, the senior critic audits alongside
workers whose output it does not read, and the merge gives the same state whatever finishes first."""

from __future__ import annotations

import asyncio
import re

from physlab.lab import routing
from physlab.lab.scenarios import _parse as P
from physlab.lab.state import transitions as T
from physlab.lab.state.invariants import check
from physlab.lab.state.models import ResearchState
from physlab.llm.scripted import final_answer, tool_call

from tests.lab.direct import run_engine
from tests.lab.mini import calls, mini_problem
from tests.lab.test_parallel_and_robustness import fns

PATIENCE_S = 60          # a sequential engine would wait forever: fail instead


def three_questions_then_three_claims(messages, info):
    """Iteration 1: three questions, a researcher on each. Iteration 2: WH-1 and WH-2 independent,
    WH-3 building on WH-1. Then complete."""
    prompt, done, out = P.prompt(messages), P.tool_returns(messages), info.output_tools[0].name
    it = P.iteration(prompt)
    if it == 1:
        if not done:
            return calls(*[("create_research_question", {"question": f"part {i}"}) for i in range(3)])
        rqs = re.findall(r"Created (RQ-\d+)", " ".join(done))
        return tool_call(out, {"dispatches": [{"worker": "researcher", "target": r, "instructions": "do"} for r in rqs]})
    if it == 2 and not done:
        return calls(*[("close_question", {"question_id": f"RQ-{i}"}) for i in (1, 2, 3)],
                     ("propose_hypothesis", {"claim": "first", "value": "1", "evidence_ids": ["EV-1"]}),
                     ("propose_hypothesis", {"claim": "second", "value": "2", "evidence_ids": ["EV-2"]}),
                     ("propose_hypothesis", {"claim": "third", "value": "3", "evidence_ids": ["EV-3"],
                                             "depends_on": ["WH-1"]}))
    return tool_call(out, {"summary": "wait"})


def ordered_reviewers(log: list[str], *, first_waits_for: str):
    """Reviewers that finish in a forced order: the review of ``first_waits_for``'s partner waits
    until ``first_waits_for`` has finished (no sleeps: an event)."""
    finished = {w: asyncio.Event() for w in ("WH-1", "WH-2", "WH-3")}
    partner = {"WH-1": "WH-2", "WH-2": "WH-1"}

    async def fn(messages, info):
        prompt = P.prompt(messages)
        wid = re.search(r"<claim>\n(WH-\d+)", prompt).group(1)
        log.append(f"start {wid}: " + P.block(prompt, "builds-on"))
        if wid != first_waits_for and wid in partner:
            await asyncio.wait_for(finished[partner[wid]].wait(), PATIENCE_S)
        log.append(f"end {wid}")
        finished[wid].set()
        return final_answer(info, {"verdict": "VERIFIED", "reasoning": f"checked {wid}"})
    return fn


async def _run(tmp_path, name, first):
    log: list[str] = []
    engine, out = await run_engine(tmp_path / name, fns(orchestrator=three_questions_then_three_claims,
                                                        reviewer=ordered_reviewers(log, first_waits_for=first)),
                                   mini_problem(), max_iterations=2, critic_every=0)
    return log, out.state


async def test_independent_hypotheses_are_reviewed_together_and_a_dependent_one_after(tmp_path):
    log, s = await _run(tmp_path, "a", first="WH-2")
    starts = [x for x in log if x.startswith("start")]
    # WH-1 and WH-2 were in review at the same time (WH-1 waited for WH-2 to finish)
    assert log.index("end WH-2") < log.index("end WH-1") and log.index("start WH-1: (none)") < log.index("end WH-2")
    # WH-3 builds on WH-1: reviewed after it, and shown it as established
    assert starts[-1].startswith("start WH-3") and "WH-1 [established as ER-1]" in starts[-1]
    assert log.index("end WH-1") < log.index(starts[-1])
    # merged in pending order, whatever finished first
    assert [(r.id, r.wh) for r in s.reviews] == [("RV-1", "WH-1"), ("RV-2", "WH-2"), ("RV-3", "WH-3")]
    assert [(e.id, e.wh) for e in s.ers] == [("ER-1", "WH-1"), ("ER-2", "WH-2"), ("ER-3", "WH-3")]
    assert check(s) == []


async def test_the_merge_is_the_same_whatever_order_the_reviews_finish_in(tmp_path):
    _, a = await _run(tmp_path, "a", first="WH-2")
    _, b = await _run(tmp_path, "b", first="WH-1")

    def comparable(s: ResearchState):
        return s.model_dump(exclude={"events"}) | {"events": [(e.kind, e.text) for e in s.events]}
    assert comparable(a) == comparable(b)


def test_review_waves_follow_dependencies_transitively():
    s = ResearchState(problem_id="x")
    s, rq = T.create_rq(s, "q")
    s, ev = T.add_evidence(s, target=rq, role="researcher", findings="f")
    s, a = T.propose_wh(s, claim="a", evidence=[ev])
    s, b = T.propose_wh(s, claim="b", evidence=[ev], depends_on=[a])
    s, c = T.propose_wh(s, claim="c", evidence=[ev], depends_on=[b])
    s, d = T.propose_wh(s, claim="d", evidence=[ev])
    assert routing.review_waves(s, T.pending_reviews(s)) == [[a, d], [b], [c]]
    assert routing.review_waves(s, [c, d]) == [[c, d]]           # c's base is not pending: nothing to wait for


def one_round_orchestrator(messages, info):
    prompt, done, out = P.prompt(messages), P.tool_returns(messages), info.output_tools[0].name
    if P.iteration(prompt) == 1:
        if not done:
            return calls(*[("create_research_question", {"question": f"part {i}"}) for i in range(2)])
        rqs = re.findall(r"Created (RQ-\d+)", " ".join(done))
        return tool_call(out, {"dispatches": [{"worker": "researcher", "target": r, "instructions": "do"} for r in rqs]})
    return tool_call(out, {"summary": "wait"})


async def test_the_critic_audits_and_its_critique_is_answered_alongside_workers_on_questions(tmp_path):
    planner_called, seen = asyncio.Event(), {}
    base = fns()

    async def researcher(messages, info):
        # only finishes once the planner has been asked to answer the critic's critique
        await asyncio.wait_for(planner_called.wait(), PATIENCE_S)
        return final_answer(info, {"findings": "value = 42", "derivation_markdown": "d", "confidence": "exact"})

    async def critic(messages, info):
        seen["critic"] = P.prompt(messages)
        return final_answer(info, {"critiques": [{"target_type": "strategy", "kind": "staleness",
                                                  "text": "revisit the plan"}]})

    def planner(messages, info):
        if "CR-1" in P.block(P.prompt(messages), "critiques-to-answer"):
            planner_called.set()
        return base["planner"](messages, info)

    engine, out = await run_engine(tmp_path / "c", fns(orchestrator=one_round_orchestrator, researcher=researcher,
                                                       critic=critic, planner=planner),
                                   mini_problem(), max_iterations=1, critic_every=1)
    s = out.state
    assert [e.id for e in s.evidence] == ["EV-1", "EV-2"] and [d.evidence for d in s.dispatches] == ["EV-1", "EV-2"]
    assert [(c.id, c.status) for c in s.critiques] == [("CR-1", "accepted")] and s.strategy_version == 2
    # the critic was shown the state the workers started from, which their evidence does not change
    assert "RQ-1 [open]" in seen["critic"]
    assert check(s) == []
