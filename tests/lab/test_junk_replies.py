"""Issue #47 point 9: a role's reply that carries none of what the role exists to give is a failed
reply, sent back and retried within the call's budget, not progress: a surveyor's
``{"type": "user-assistant", "name": "user_1"}`` is not an empty survey, an orchestrator's ``{}``
after no action is not a turn. What a small model writes under a server-held schema looks like that."""

from __future__ import annotations

import pytest
from pydantic_ai.exceptions import UnexpectedModelBehavior

from physlab.lab import context as C
from physlab.lab.roles import orchestrator, surveyor
from physlab.lab.roles._base import LabEnv
from physlab.lab.state.models import ResearchState
from physlab.llm.scripted import final_answer
from tests.lab.direct import make_ctx
from tests.lab.mini import calls, mini_problem


def env_with(tmp_path, role, fn) -> LabEnv:
    return LabEnv(make_ctx(tmp_path, {role: fn}, mini_problem()), tool_retries=2, code_timeout_s=30)


def test_a_junk_survey_is_sent_back_and_a_real_one_taken(tmp_path):
    import asyncio

    replies = iter([{"type": "user-assistant", "name": "user_1"}, {}, {"background": "a spin chain", "key_insights": ["k"]}])
    seen = []

    def fn(m, i):
        seen.append(str(m[-1]))
        return final_answer(i, next(replies))

    sv = asyncio.run(surveyor.run(env_with(tmp_path, "surveyor", fn)))
    assert sv.background == "a spin chain"
    assert len(seen) == 3 and "carries none of" in seen[1] and "carries none of" in seen[2]


def test_a_survey_that_is_only_junk_fails_the_call_within_its_retries(tmp_path):
    import asyncio

    n = []

    def fn(m, i):
        n.append(1)
        return final_answer(i, {"type": "user-assistant", "name": "user_1"})

    with pytest.raises(UnexpectedModelBehavior):
        asyncio.run(surveyor.run(env_with(tmp_path, "surveyor", fn)))
    assert len(n) == 3  # the first try and the call's two retries (tool_retries=2), no more


def test_a_survey_with_one_section_is_a_survey(tmp_path):
    import asyncio

    sv = asyncio.run(surveyor.run(env_with(tmp_path, "surveyor", lambda m, i: final_answer(
        i, {"known_pitfalls": ["sign of the exchange term"]}))))
    assert sv.known_pitfalls == ["sign of the exchange term"]


def test_an_empty_decision_is_no_turn_unless_the_orchestrator_acted(tmp_path):
    import asyncio

    ask = C.RolePrompt("test", head="", stable="", volatile="go")
    replies = iter([{}, {"summary": "waiting for the computer"}])
    seen = []

    def fn(m, i):
        seen.append(str(m[-1]))
        return final_answer(i, next(replies))

    desk = orchestrator.Desk(state=ResearchState(problem_id="mini"), max_dispatches=2)
    d = asyncio.run(orchestrator.run(env_with(tmp_path, "orchestrator", fn), desk, ask))
    assert d.summary == "waiting for the computer" and "carries none of" in seen[1]
    # an empty decision after tool calls that changed the state is a turn (its work was the calls)
    acted = iter([calls(("create_research_question", {"question": "What is 6*7?"})), {}])

    def fn2(m, i):
        step = next(acted)
        return step if not isinstance(step, dict) else final_answer(i, step)

    desk = orchestrator.Desk(state=ResearchState(problem_id="mini"), max_dispatches=2)
    d = asyncio.run(orchestrator.run(env_with(tmp_path, "orchestrator", fn2), desk, ask))
    assert desk.state.rqs and d.dispatches == []


async def test_a_surveyor_that_gives_only_junk_is_one_failed_call_and_the_lab_goes_on(tmp_path):
    """The real 270M model's surveyor wrote empty surveys until its retries ran out, and the run ended
    there, before any research: now it is one failed call, said with the role and output mode."""
    from tests.lab.direct import run_engine
    from tests.lab.test_checks_and_balances import fns

    junk = lambda m, i: final_answer(i, {"type": "user-assistant", "name": "user_1"})  # noqa: E731
    engine, out = await run_engine(tmp_path / "r", fns(surveyor=junk), mini_problem(), tool_retries=1)
    s = out.state
    failed = [e.text for e in s.events if e.kind == "role_failed"]
    assert failed and failed[0].startswith("surveyor:") and "goes on without a survey" in failed[0]
    assert s.survey is not None and s.iteration >= 1 and out.status == "complete"
