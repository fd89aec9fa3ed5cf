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


# ---------------------------------------------------------------- reviews begun during the orchestrator's call
def propose_then_finish(*, wait_for: asyncio.Event | None = None, revise: bool = False):
    """Iteration 1: two questions, a researcher on each. Iteration 2: WH-1 on EV-1 in the first reply;
    in the next one (``wait_for``: only once that event is set, i.e. WH-1's review has begun) either
    the decision, or (``revise``) WH-1 restated on EV-2 too, then the decision."""
    async def fn(messages, info):
        prompt, out, turn = P.prompt(messages), info.output_tools[0].name, P.turn(messages)
        if P.iteration(prompt) == 1:
            if turn == 0:
                return calls(*[("create_research_question", {"question": f"part {i}"}) for i in range(2)])
            rqs = re.findall(r"Created (RQ-\d+)", " ".join(P.tool_returns(messages)))
            return tool_call(out, {"dispatches": [{"worker": "researcher", "target": r, "instructions": "do"}
                                                  for r in rqs]})
        if P.iteration(prompt) == 2 and turn == 0:
            return calls(("close_question", {"question_id": "RQ-1"}), ("close_question", {"question_id": "RQ-2"}),
                         ("propose_hypothesis", {"claim": "first", "value": "42", "evidence_ids": ["EV-1"]}))
        if P.iteration(prompt) == 2 and turn == 1:
            if wait_for is not None:
                await asyncio.wait_for(wait_for.wait(), PATIENCE_S)
            if revise:
                return calls(("revise_hypothesis", {"hypothesis_id": "WH-1", "add_evidence_ids": ["EV-2"],
                                                    "claim": "first, restated"}))
        return tool_call(out, {"summary": "wait"})
    return fn


def claim_reviewer(log: list[str], began: asyncio.Event, *, hold_first: bool = False):
    """Verifies what it is shown; ``hold_first``: the review of the claim as first proposed does not
    answer (it can only be cancelled; a lab that never cancels it fails it after PATIENCE_S)."""
    async def fn(messages, info):
        claim = P.block(P.prompt(messages), "claim").splitlines()[0]
        log.append(f"start {claim}")
        began.set()
        if hold_first and "restated" not in claim:
            try:
                await asyncio.wait_for(asyncio.Event().wait(), PATIENCE_S)
            except asyncio.CancelledError:
                log.append(f"cancelled {claim}")
                raise
        return final_answer(info, {"verdict": "VERIFIED", "reasoning": f"checked {claim}"})
    return fn


async def test_a_hypothesis_is_reviewed_while_the_orchestrator_finishes_its_call(tmp_path):
    """The orchestrator's next request waits until WH-1's review has begun: a lab that reviews only
    after the orchestrator's whole call never gets there. The run ends in the state of a lab that
    runs one call at a time."""
    log: list[str] = []
    began = asyncio.Event()
    _, early = await run_engine(tmp_path / "early", fns(orchestrator=propose_then_finish(wait_for=began),
                                                        reviewer=claim_reviewer(log, began)),
                                mini_problem(), max_iterations=2, critic_every=0)
    _, one = await run_engine(tmp_path / "one", fns(orchestrator=propose_then_finish(),
                                                    reviewer=claim_reviewer([], asyncio.Event())),
                              mini_problem(), max_iterations=2, critic_every=0, parallel_workers=1)
    assert log == ["start WH-1: first"]
    assert not [e for e in early.state.events if e.kind == "role_failed"]
    assert [(r.id, r.wh, r.verdict) for r in early.state.reviews] == [("RV-1", "WH-1", "VERIFIED")]

    def comparable(s: ResearchState):
        return s.model_dump(exclude={"events"}) | {"events": [(e.kind, e.text) for e in s.events]}
    assert comparable(early.state) == comparable(one.state)
    assert check(early.state) == []


async def test_an_early_review_the_orchestrator_overtakes_is_cancelled_and_the_hypothesis_reviewed_again(tmp_path):
    """The orchestrator restates WH-1 while its first review is under way: that review is
    cancelled, and the verdict that counts comes from a reviewer shown the restated claim."""
    log: list[str] = []
    began = asyncio.Event()
    _, out = await run_engine(tmp_path / "r", fns(orchestrator=propose_then_finish(wait_for=began, revise=True),
                                                  reviewer=claim_reviewer(log, began, hold_first=True)),
                              mini_problem(), max_iterations=2, critic_every=0)
    assert log == ["start WH-1: first", "cancelled WH-1: first", "start WH-1: first, restated"]
    s = out.state
    assert [(r.wh, r.verdict, r.reasoning) for r in s.reviews] == [("WH-1", "VERIFIED", "checked WH-1: first, restated")]
    assert s.wh("WH-1").evidence == ["EV-1", "EV-2"] and check(s) == []
