"""`scalar` - SCALAR (seed 003): Actor-Critic dialogue scored by an out-of-loop Judge.

Each turn: the Actor (persona = expertise x reasoning style) writes or revises a solution; the
Critic (feedback strategy) reviews it; the Judge scores it with the 100-point rubric against the
reference solution and decides Eq(A, R) itself (Appendix C). PhysLab's grader's verdict on the same
answer is stored beside the Judge's and their agreement counted, but the pass rule is the paper's.
The run stops when a turn passes (Eq AND total >= 80 AND correctness >= 40), at the iteration cap,
or when the score stagnates (the last ``stagnation_patience`` Critic turns each moved it by at most
``stagnation_delta`` points). The transcript goes to ``scalar_transcript.json`` (never the
reference) for re-scoring by other Judges.

Parameters: :class:`ScalarParams` (``physlab strategies show scalar``). ``setting`` says who sees the
reference solution: ``paper`` (default) the Critic and the Judge, ``blind`` only the Judge. The
runner hands it over only because these parameters ask for it (``sees_reference``), and either
way the run is reference-conditioned -- the Judge that stops it read the answer key -- so it is
reported apart from solvers. On an open question (no reference) the Judge grades without one.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import Any, Literal

from physlab.errors import UserError
from physlab.grading.extract import extract_code
from physlab.run.checkpoints import record_best
from physlab.run.environment import RunEnvironment
from physlab.run.events import Step
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.minions.common import requirements
from physlab.strategies.minions.visual import image_content
from physlab.strategies.params import SCALAR, ModelParams, param
from physlab.strategies.sampling import ended_by, error_text, finish, model_settings
from physlab.strategies.scalar import judge as judge_mod
from physlab.strategies.scalar.actor import Actor
from physlab.strategies.scalar.critic import Critic
from physlab.strategies.scalar.personas import EXPERTISE, FEEDBACK, STYLE, persona_text
from physlab.strategies.scalar.rubric import JudgeVerdict
from physlab.strategies.scalar.transcript import TRANSCRIPT_FILE, ScalarTranscript, TurnRecord

_NO_PROMPT = "'default' adds no pre-prompt (the paper's baseline)"


class ScalarParams(ModelParams):
    temperature: float | None = param(0.7, "Sampling temperature of every request.",
                                      f"{SCALAR} §2.3: 'T=0.7'", ge=0.0, le=2.0)
    expertise: Literal[tuple(EXPERTISE)] = param(  # type: ignore[valid-type]
        "default", "Actor persona: expertise level.", f"{SCALAR} Appendix A, 'Expertise level'; {_NO_PROMPT}")
    style: Literal[tuple(STYLE)] = param(  # type: ignore[valid-type]
        "default", "Actor persona: reasoning style.", f"{SCALAR} Appendix A, 'Reasoning style'; {_NO_PROMPT}")
    feedback: Literal[tuple(FEEDBACK)] = param(  # type: ignore[valid-type]
        "default", "Critic feedback strategy.", f"{SCALAR} Appendix A, 'Feedback strategies'; {_NO_PROMPT}")
    max_iterations: int = param(4, "Actor turns at most (T_max).",
                                f"{SCALAR} Appendix D, 'Iteration range': T_max = 4 (DeepSeek-family runs)",
                                ge=1, le=100)
    stagnation_delta: float = param(5.0, "A score change of at most this many points counts as no progress.",
                                    f"{SCALAR} Appendix C, 'Progress signal': delta 'typically set to 5 points'",
                                    ge=0.0, le=100.0)
    stagnation_patience: int = param(2, "Consecutive turns without progress that stop the run (0: never).",
                                     "PhysLab: the paper names a score-stagnation trigger without its window",
                                     ge=0, le=100)
    setting: Literal["paper", "blind"] = param(
        "paper", "Who sees the reference solution: 'paper', the Critic and the Judge; 'blind', only the Judge "
                 "(the Actor-Critic dialogue is reference-free). Either way the run is reference-conditioned.",
        f"{SCALAR} §2.1: 'The Critic, who has access to a reference solution'; Appendix C, 'Inputs': the "
        "Judge receives the reference solution R and decides Eq(A, R)")

    @property
    def sees_reference(self) -> bool:
        return True  # the Judge grades against it in both settings


def stagnated(scores: list[float | None], delta: float, patience: int) -> bool:
    """True when each of the last ``patience`` score changes is at most ``delta`` (unscored turns
    break the run of evidence: no stagnation is declared across them)."""
    if patience < 1 or len(scores) < patience + 1:
        return False
    tail = scores[-(patience + 1):]
    if any(s is None for s in tail):
        return False
    return all(abs(b - a) <= delta for a, b in zip(tail, tail[1:]))  # type: ignore[operator]


async def grade_turn(ctx: RunEnvironment, text: str, code: str | None) -> dict[str, Any] | None:
    """The grader's verdict on a turn's final answer (None when the problem is not gradable)."""
    if ctx.grader is None:
        return None
    try:
        verdict = await ctx.grader.grade(code or text)
        return verdict.contract_json()
    except Exception as exc:  # noqa: BLE001 - a grader failure is an 'invalid' verdict, recorded
        return {"verdict": "invalid", "reason": f"grader failed: {error_text(exc)}"}


class Scalar(Strategy[ScalarParams]):
    """SCALAR: an Actor-Critic dialogue scored turn by turn by an out-of-loop Judge."""

    name = "scalar"
    Params = ScalarParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        p = self.params
        expertise, style, feedback = p.expertise, p.style, p.feedback
        max_iter, delta, patience = p.max_iterations, p.stagnation_delta, p.stagnation_patience
        settings = model_settings(p)
        reference = ctx.reference_solution
        if reference is None and "setting" in p.model_fields_set:
            raise UserError(f"strategy scalar: --param setting={p.setting}: the Judge grades against the reference "
                            f"solution, and problem '{ctx.problem.id}' has none (leave setting unset on an open "
                            "question: the Judge then grades without one)")
        critic_reference = reference if p.setting == "paper" else None

        started = time.monotonic()
        problem = ctx.problem
        reqs = requirements(problem)
        images = [image_content(img) for img in problem.images if img.exists()]
        actor = Actor(ctx, persona_text(expertise, style), reqs, settings)
        critic = Critic(ctx, FEEDBACK[feedback], critic_reference, settings)
        judge_model = ctx.models.for_role(judge_mod.ROLE)
        transcript = ScalarTranscript(
            problem_id=problem.id, problem_statement=problem.statement, has_template=problem.has_template,
            gradable=ctx.grader is not None, model=ctx.models.name,
            judge_model=getattr(judge_model, "spec", None) or ctx.models.name,  # --role-model judge=... names it
            config={"expertise": expertise, "style": style, "persona": f"{expertise}/{style}",
                    "feedback": feedback, "setting": p.setting if reference else "no reference",
                    "critic_reference": bool(critic_reference), "judge_reference": bool(reference),
                    "max_iterations": max_iter,
                    "stagnation_delta": delta, "stagnation_patience": patience, "temperature": p.temperature})
        text: str | None = None
        code: str | None = None
        stop = "iteration_cap"

        def done(status: AttemptStatus, reason: str, exc: BaseException | None = None) -> Attempt:
            transcript.stop_reason = reason
            _save(ctx, transcript)
            decided = [t.judge.agrees_with_grader for t in transcript.turns if t.judge.agrees_with_grader is not None]
            details = {"scores": transcript.scores, "passes": transcript.passes,
                       "converged": transcript.converged, "turns": len(transcript.turns),
                       "config": transcript.config, "transcript_file": TRANSCRIPT_FILE,
                       "judge_parse_failures": sum(not t.judge.parsed for t in transcript.turns),
                       "judge_agreement": {"checked": len(decided), "agreed": sum(decided)}}
            if exc is not None:
                details["error"] = error_text(exc)
            return finish(ctx, self.name, status, reason, started=started, answer_text=text, answer_code=code,
                          details=details)

        try:
            previous_critique: str | None = None
            earlier: list[tuple[str, str | None]] = []
            for turn in range(max_iter):
                if turn == 0:
                    text = await actor.first(problem.statement, images)
                else:
                    text = await actor.revise(previous_critique or "")
                code = extract_code(text) if problem.has_template else None
                critique = await critic.review(problem.statement, earlier, text, turn)
                grader_verdict = await grade_turn(ctx, text, code)
                verdict: JudgeVerdict = await judge_mod.score(judge_model, problem.statement, text, turn,
                                                              previous_critique, critique, settings,
                                                              reference=reference)
                verdict = judge_mod.with_grader(verdict, grader_verdict)
                record_best(ctx, f"turn {turn}", answer_code=code, answer_text=text)
                prev = transcript.scores[-1] if transcript.scores else None
                progress = (abs(verdict.total - prev) > delta
                            if prev is not None and verdict.parsed and verdict.total is not None else None)
                transcript.turns.append(TurnRecord(turn=turn, actor=text, answer_code=code,
                                                   feedback_before=previous_critique, critique=critique,
                                                   grader_verdict=grader_verdict, judge=verdict,
                                                   progress=progress))
                _save(ctx, transcript)
                ctx.events(Step(strategy=self.name, turn=turn, score=verdict.total, passed=verdict.passed))
                earlier.append((text, critique))
                previous_critique = critique
                if verdict.passed:
                    stop = "passed"
                    break
                if turn + 1 >= max_iter:
                    stop = "iteration_cap"
                    break
                if stagnated(transcript.scores, delta, patience):
                    stop = "stagnation"
                    break
            return done("complete", stop)
        except Exception as exc:  # noqa: BLE001 - end cleanly with the last attempt
            return done(*ended_by(exc, answered=bool(text)), exc)


def _save(ctx: RunEnvironment, transcript: ScalarTranscript) -> None:
    with suppress(OSError):  # the transcript is for re-scoring: a full disk must not end the run
        transcript.save(ctx.workspace)
