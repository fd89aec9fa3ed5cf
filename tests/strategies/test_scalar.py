"""SCALAR loop with scripted models: early stop on pass, iteration cap, stagnation, judge parse
failures, grader equivalence, reference-conditioned Critic, transcripts and re-scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from physlab.errors import UserError
from physlab.grading.verdict import Verdict
from physlab.llm.usage import Budget
from physlab.problems.model import Problem
from physlab.runs.context import RunContext
from physlab.sandbox.core import Sandbox
from physlab.strategies.sampling import OUTPUT_RETRIES
from physlab.strategies.scalar import Scalar
from physlab.strategies.scalar.analysis import load_records
from physlab.strategies.scalar.personas import FEEDBACK, PERSONAS
from physlab.strategies.scalar.rescore import rescore_file_name, rescore_transcript
from physlab.strategies.scalar.strategy import stagnated
from physlab.strategies.scalar.transcript import load_transcript
from stub_ctx import NoUsage, Script, ScriptModels


def judge(c: int, rest: int = 8, eq: bool = True) -> str:
    keys = ["rigor", "logical_flow", "justification", "completeness", "physical_consistency"]
    return json.dumps({"final_answer": "x", "final_answer_equivalent": eq,
                       "scores": {"correctness": c, **{k: rest for k in keys}},
                       "error_categories": [], "flags": {}, "missing": [], "summary": "s"})


class _Grader:
    """A bound grader stand-in: correct iff the candidate contains the right boxed value."""

    def __init__(self, right: str) -> None:
        self.right, self.seen = right, []

    async def grade(self, candidate: str) -> Verdict:
        self.seen.append(candidate)
        ok = f"\\boxed{{{self.right}}}" in candidate
        return Verdict(verdict="correct" if ok else "incorrect", reason="stand-in")


PROBLEM = Problem(id="q1", statement="Compute the decay width of Phi -> phi phi.",
                  reference=r"\boxed{W}", reference_format="latex", solution="SECRET_REFERENCE_SOLUTION")


def make_ctx(tmp_path: Path, script: Script, *, grader=None, reference=None) -> RunContext:
    tmp_path.mkdir(parents=True, exist_ok=True)  # the runner makes the workspace
    return RunContext(problem=PROBLEM.public(), workspace=tmp_path, models=ScriptModels(script), usage=NoUsage(),
                      budget=Budget(), sandbox=Sandbox(), grader=grader, equivalence=None,
                      reference_solution=reference)


def test_twelve_personas_five_strategies():
    assert len(PERSONAS) == 12 and len(FEEDBACK) == 5


async def test_stops_when_a_turn_passes(tmp_path):
    s = Script({"actor": ["attempt 0", "attempt 1 \\boxed{W}"], "critic": ["fix the sign"],
                "judge": [judge(30, 6, eq=False), judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s))
    assert a.status == "complete" and a.stop_reason == "passed"
    assert a.details["scores"] == [60, 85] and a.details["passes"] == [False, True]
    assert s.roles() == ["actor", "critic", "judge", "actor", "critic", "judge"]
    assert a.answer_text == "attempt 1 \\boxed{W}"
    # the revision prompt carries the Critic's feedback; the Actor keeps its conversation
    revise = [c for c in s.calls if c.role == "actor"][1]
    assert "fix the sign" in revise.user and "attempt 0" not in revise.system


async def test_iteration_cap_default_four(tmp_path):
    s = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(20, 2), judge(30, 4), judge(40, 4), judge(45, 4)]})
    a = await Scalar().run(make_ctx(tmp_path, s))
    assert a.stop_reason == "iteration_cap" and a.details["turns"] == 4
    assert a.details["scores"] == [30, 50, 60, 65] and not a.details["converged"]


async def test_stagnation_stop(tmp_path):
    # 60 -> 63 -> 61: two Critic turns that moved the score by <= 5 points -> stop after turn 2
    s = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(30, 6), judge(33, 6), judge(31, 6), judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s))
    assert a.stop_reason == "stagnation" and a.details["scores"] == [60, 63, 61]
    assert [t.progress for t in load_transcript(tmp_path).turns] == [None, False, False]
    s2 = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(30, 6), judge(33, 6), judge(40, 6), judge(40, 6)]})
    a2 = await Scalar.configured({"stagnation_patience": 1}).run(make_ctx(tmp_path / "b", s2))
    assert a2.stop_reason == "stagnation" and a2.details["scores"] == [60, 63]


def test_stagnated_helper():
    assert not stagnated([60, 63], 5, 2)
    assert stagnated([60, 63, 61], 5, 2)
    assert not stagnated([60, 70, 71], 5, 2)
    assert not stagnated([60, None, 61], 5, 2)
    assert stagnated([60, 66, 66], 5, 1)
    assert not stagnated([60, 60], 5, 0)


async def test_judge_parse_failure_is_recorded_and_fails_the_turn(tmp_path):
    # prose instead of the evaluation tool, on the request and on every retry
    s = Script({"actor": ["a"], "critic": ["c"],
                "judge": ["I think it is right (85/100)"] * (1 + OUTPUT_RETRIES) + [judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s))
    assert a.details["scores"] == [None, 85] and a.details["passes"] == [False, True]
    assert a.details["judge_parse_failures"] == 1
    tr = load_transcript(tmp_path)
    assert tr.turns[0].judge.raw == "I think it is right (85/100)" and not tr.turns[0].judge.parsed


async def test_grader_decides_equivalence_when_gradable(tmp_path):
    grader = _Grader("W")
    # the Judge claims equivalence and high scores on turn 0, but the grader says incorrect
    s = Script({"actor": ["answer \\boxed{V}", "answer \\boxed{W}"], "critic": ["c"], "judge": [judge(45), judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s, grader=grader))
    assert a.details["passes"] == [False, True] and a.stop_reason == "passed"
    tr = load_transcript(tmp_path)
    assert tr.gradable and tr.turns[0].judge.equivalence_source == "grader"
    assert tr.turns[0].grader_verdict["verdict"] == "incorrect" and tr.turns[0].judge.judge_equivalent
    assert grader.seen == ["answer \\boxed{V}", "answer \\boxed{W}"]


async def test_reference_free_critic_by_default_and_nobody_sees_the_reference(tmp_path):
    s = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(45)]})
    await Scalar().run(make_ctx(tmp_path, s, reference="SECRET_REFERENCE_SOLUTION"))
    assert all("SECRET" not in c.system + c.user for c in s.calls)


async def test_reference_conditioned_critic_only_when_asked(tmp_path):
    s = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(20), judge(45)]})
    await Scalar.configured({"critic_reference": True}).run(
        make_ctx(tmp_path, s, reference="SECRET_REFERENCE_SOLUTION"))
    for c in s.calls:
        if c.role == "critic":
            assert "SECRET_REFERENCE_SOLUTION" in c.user and "Never" in c.system
        else:
            assert "SECRET" not in c.system + c.user
    assert load_transcript(tmp_path).config["critic_reference"] is True


async def test_critic_reference_without_reference_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="needs a reference solution"):
        await Scalar.configured({"critic_reference": True}).run(make_ctx(tmp_path, Script({})))


async def test_persona_and_feedback_reach_the_prompts(tmp_path):
    s = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(45)]})
    await Scalar.configured({"expertise": "novice", "style": "skeptical", "feedback": "pedagogical"}).run(
        make_ctx(tmp_path, s))
    actor_sys = next(c.system for c in s.calls if c.role == "actor")
    critic_sys = next(c.system for c in s.calls if c.role == "critic")
    assert "graduate student" in actor_sys and "Doubt every assumption" in actor_sys
    assert "Socratic" in critic_sys
    with pytest.raises(UserError, match="strategy scalar: --param feedback: input should be 'adversarial'"):
        Scalar.configured({"feedback": "harsh"})


async def test_budget_end_keeps_last_attempt(tmp_path):
    s = Script({"actor": ["first attempt"], "critic": ["c"], "judge": [judge(20)]}, max_calls=4)
    a = await Scalar().run(make_ctx(tmp_path, s))
    assert a.status == "partially_complete" and a.stop_reason == "budget:max_calls"
    assert a.answer_text == "first attempt"
    assert len(load_transcript(tmp_path).turns) == 1


async def test_rescore_with_another_judge(tmp_path):
    grader = _Grader("W")
    s = Script({"actor": ["\\boxed{V}", "\\boxed{W}"], "critic": ["c"], "judge": [judge(30, 6), judge(45)]})
    await Scalar().run(make_ctx(tmp_path, s, grader=grader))
    # the new Judge is harsher on turn 1 and cannot parse-fail silently on turn 0
    s2 = Script({"judge": ["garbage"] * (1 + OUTPUT_RETRIES) + [judge(38, 8)]})
    res = await rescore_transcript(tmp_path, s2.model("judge"), "scripted:harsh")
    assert res.scores == [None, 78] and res.passes == [False, False] and not res.converged
    assert (tmp_path / rescore_file_name("scripted:harsh")).is_file()
    assert all(c.role == "judge" for c in s2.calls) and len(s2.calls) == 2 + OUTPUT_RETRIES  # actor/critic not re-run
    # grader equivalence was reused: a lenient judge that says "not equivalent" still passes turn 1
    s3 = Script({"judge": [judge(45, eq=False)]})
    res3 = await rescore_transcript(tmp_path, s3.model("judge"), "scripted:lenient")
    assert res3.passes == [False, True]
    recs = load_records([tmp_path], judge="scripted:lenient")
    assert recs[0].scores == [85, 85] and recs[0].converged
    orig = load_records([tmp_path])
    assert orig[0].scores == [60, 85]


async def test_rescore_missing_transcript_is_user_error(tmp_path):
    with pytest.raises(UserError):
        await rescore_transcript(tmp_path, None, "x")
