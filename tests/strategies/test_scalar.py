"""SCALAR loop with scripted models: early stop on pass, iteration cap, stagnation, judge parse
failures, the Judge's inputs and its own Eq beside the grader's verdict, the paper and blind
settings, transcripts and re-scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stub_ctx import NoUsage, Script, ScriptModels

from physlab.errors import UserError
from physlab.grading.verdict import Verdict
from physlab.llm.usage import Budget
from physlab.problems.model import Problem
from physlab.run.environment import RunEnvironment
from physlab.sandbox.core import Sandbox
from physlab.strategies.sampling import OUTPUT_RETRIES
from physlab.strategies.scalar import Scalar
from physlab.strategies.scalar.analysis import load_records
from physlab.strategies.scalar.personas import FEEDBACK, PERSONAS
from physlab.strategies.scalar.rescore import rescore_file_name, rescore_transcript
from physlab.strategies.scalar.strategy import stagnated
from physlab.strategies.scalar.transcript import load_transcript


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


def make_ctx(tmp_path: Path, script: Script, *, grader=None, reference=None) -> RunEnvironment:
    tmp_path.mkdir(parents=True, exist_ok=True)  # the runner makes the workspace
    return RunEnvironment(problem=PROBLEM.public(), workspace=tmp_path, models=ScriptModels(script), usage=NoUsage(),
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


async def test_the_judge_decides_equivalence_and_the_graders_verdict_is_stored_beside(tmp_path):
    grader = _Grader("W")
    # the Judge calls turn 0's \boxed{V} equivalent to the reference; the grader says incorrect
    s = Script({"actor": ["answer \\boxed{V}", "answer \\boxed{W}"], "critic": ["c"],
                "judge": [judge(45), judge(45, eq=False), judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s, grader=grader, reference="SECRET_REFERENCE_SOLUTION"))
    assert a.details["passes"] == [True] and a.stop_reason == "passed"  # the paper's pass rule: the Judge's Eq
    tr = load_transcript(tmp_path)
    turn = tr.turns[0]
    assert turn.judge.judge_equivalent and turn.grader_verdict["verdict"] == "incorrect"
    assert turn.judge.agrees_with_grader is False
    assert a.details["judge_agreement"] == {"checked": 1, "agreed": 0}
    assert grader.seen == ["answer \\boxed{V}"]


def _roles_holding(s: Script, secret: str) -> set[str]:
    return {c.role for c in s.calls if secret in c.system + c.user}


async def test_judge_inputs_in_each_setting(tmp_path):
    """Appendix C, 'Inputs': the Judge reads the problem, the Actor's solution, the Critic's feedback
    and the reference solution. In `paper` the Critic has the reference too; in `blind` only the Judge."""
    s = Script({"actor": ["attempt 0", "attempt 1"], "critic": ["CRITIQUE-A"], "judge": [judge(20), judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s, reference="SECRET_REFERENCE_SOLUTION"))
    assert _roles_holding(s, "SECRET_REFERENCE_SOLUTION") == {"critic", "judge"}  # never the Actor
    last_judge = [c for c in s.calls if c.role == "judge"][-1]
    for part in ("Compute the decay width", "attempt 1", "CRITIQUE-A", "SECRET_REFERENCE_SOLUTION"):
        assert part in last_judge.user, part
    assert "Never\nreveal it" in next(c.system for c in s.calls if c.role == "critic")
    assert a.details["config"]["setting"] == "paper" and a.details["config"]["critic_reference"] is True

    s = Script({"actor": ["attempt 0"], "critic": ["c"], "judge": [judge(45)]})
    a = await Scalar.configured({"setting": "blind"}).run(make_ctx(tmp_path / "blind", s,
                                                                   reference="SECRET_REFERENCE_SOLUTION"))
    assert _roles_holding(s, "SECRET_REFERENCE_SOLUTION") == {"judge"}
    assert a.details["config"]["setting"] == "blind" and a.details["config"]["judge_reference"] is True


async def test_without_a_reference_the_judge_grades_alone_unless_a_setting_was_asked_for(tmp_path):
    s = Script({"actor": ["a"], "critic": ["c"], "judge": [judge(45)]})
    a = await Scalar().run(make_ctx(tmp_path, s))  # an open question: nothing to condition on
    assert a.status == "complete" and a.details["config"]["setting"] == "no reference"
    assert "(none: judge the final result on its own merits)" in next(c.user for c in s.calls if c.role == "judge")
    with pytest.raises(UserError, match="setting=blind: the Judge grades against the reference solution"):
        await Scalar.configured({"setting": "blind"}).run(make_ctx(tmp_path / "b", Script({})))


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
    await Scalar().run(make_ctx(tmp_path, s, grader=grader, reference="SECRET_REFERENCE_SOLUTION"))
    assert "SECRET" not in (tmp_path / "scalar_transcript.json").read_text()  # never stored with the run
    # the first Judge had the reference: so must the new one
    with pytest.raises(UserError, match="give that problem with --problem"):
        await rescore_transcript(tmp_path, Script({"judge": [judge(45)]}).model("judge"), "scripted:x")
    # the new Judge is harsher on turn 1 and cannot parse-fail silently on turn 0
    s2 = Script({"judge": ["garbage"] * (1 + OUTPUT_RETRIES) + [judge(38, 8)]})
    res = await rescore_transcript(tmp_path, s2.model("judge"), "scripted:harsh", reference="SECRET_REFERENCE_SOLUTION")
    assert res.scores == [None, 78] and res.passes == [False, False] and not res.converged
    assert (tmp_path / rescore_file_name("scripted:harsh")).is_file()
    assert all(c.role == "judge" for c in s2.calls) and len(s2.calls) == 2 + OUTPUT_RETRIES  # actor/critic not re-run
    assert all("SECRET_REFERENCE_SOLUTION" in c.user for c in s2.calls[-1:])
    # re-scoring recomputes Eq: a Judge that finds turn 1 not equivalent does not pass it, whatever
    # the first Judge or the grader said; the grader's stored verdict stays beside its verdict
    s3 = Script({"judge": [judge(45, eq=False)]})
    res3 = await rescore_transcript(tmp_path, s3.model("judge"), "scripted:other", reference="SECRET_REFERENCE_SOLUTION")
    assert res3.passes == [False, False]
    assert res3.verdicts[1].grader_verdict["verdict"] == "correct" and res3.verdicts[1].agrees_with_grader is False
    recs = load_records([tmp_path], judge="scripted:other")
    assert recs[0].scores == [85, 85] and not recs[0].converged
    orig = load_records([tmp_path])
    assert orig[0].scores == [60, 85]


async def test_rescore_missing_transcript_is_user_error(tmp_path):
    with pytest.raises(UserError):
        await rescore_transcript(tmp_path, None, "x")
