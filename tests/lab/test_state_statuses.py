"""A status is one the ResearchState knows, or the transition is refused: a run's status, a research
question's, a human message's kind. A state with a status nothing reads (`finished`, say) would be
written to state.json and read back by no one the same way."""

from __future__ import annotations

import pytest

from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState


def test_a_run_status_the_state_does_not_know_is_refused_and_a_known_one_is_kept():
    s = ResearchState(problem_id="p")
    with pytest.raises(T.TransitionError, match="finished"):
        T.finish(s, "finished", answer_code=None, answer_text="x")
    with pytest.raises(T.TransitionError, match="halted"):
        T.set_status(s, "halted", "why")
    done = T.finish(s, "no_answer", answer_code=None, answer_text=None, reason="budget")
    assert done.status == "no_answer" and done.stop_reason == "budget"
    assert ResearchState.model_validate_json(done.model_dump_json()).status == "no_answer"


def test_a_question_closes_as_answered_or_dropped_only_and_a_message_has_a_known_kind():
    s, rq = T.create_rq(ResearchState(problem_id="p"), "What is F?")
    with pytest.raises(T.TransitionError, match="answered or dropped"):
        T.close_rq(s, rq, "solved")
    assert T.close_rq(s, rq, "dropped").rq(rq).status == "dropped"
    with pytest.raises(T.TransitionError, match="bad message kind"):
        T.receive_human(s, kind="shout", text="!", on=None, inbox_id="m1")
