"""`scalar` - SCALAR (seed 003): Actor-Critic dialogue scored by an out-of-loop Judge.

Each turn: the Actor (persona = expertise x reasoning style) writes or revises a solution; the
Critic (feedback strategy) reviews it; the Judge scores it with the 100-point rubric, Eq(A, R)
coming from PhysLab's grader when the problem is gradable. The run stops when a turn passes
(Eq AND total >= 80 AND correctness >= 40), at the iteration cap, or when the score stagnates (the
last ``stagnation_patience`` Critic turns each moved it by at most ``stagnation_delta`` points).
The transcript goes to ``scalar_transcript.json`` for re-scoring by other Judges.

Params: expertise (expert|novice|default), style (meticulous|physical|skeptical|default),
feedback (adversarial|strict|pedagogical|lenient|default), max_iterations (4), stagnation_delta
(5), stagnation_patience (2), critic_reference (false; true needs the runner to supply
``ctx.critic_reference``), temperature (0.7, the paper's).
"""

from __future__ import annotations

import time
from typing import Any

from physlab.errors import UserError
from physlab.strategies.base import Attempt
from physlab.strategies.minions.common import requirements
from physlab.strategies.minions.strategy import extract_template_code
from physlab.strategies.minions.visual import image_content
from physlab.strategies.scalar import judge as judge_mod
from physlab.strategies.scalar.actor import Actor
from physlab.strategies.scalar.critic import Critic
from physlab.strategies.scalar.personas import EXPERTISE, FEEDBACK, STYLE, check_choice, persona_text
from physlab.strategies.scalar.rubric import JudgeVerdict
from physlab.strategies.scalar.transcript import TRANSCRIPT_FILE, ScalarTranscript, TurnRecord
from physlab.strategies.tpbench_common import (
    budget_reason, check_known_params, error_text, finish, is_budget_error, param_bool, param_float,
    param_int,
)

NAME = "scalar"
PARAMS = ("expertise", "style", "feedback", "max_iterations", "stagnation_delta", "stagnation_patience",
          "critic_reference")


def stagnated(scores: list[float | None], delta: float, patience: int) -> bool:
    """True when each of the last ``patience`` score changes is at most ``delta`` (unscored turns
    break the run of evidence: no stagnation is declared across them)."""
    if patience < 1 or len(scores) < patience + 1:
        return False
    tail = scores[-(patience + 1):]
    if any(s is None for s in tail):
        return False
    return all(abs(b - a) <= delta for a, b in zip(tail, tail[1:]))  # type: ignore[operator]


async def grade_turn(ctx: Any, text: str, code: str | None) -> dict[str, Any] | None:
    """The grader's verdict on a turn's final answer (None when the problem is not gradable)."""
    if ctx.grader is None:
        return None
    try:
        verdict = await ctx.grader.grade(code or text)
        return verdict.contract_json()
    except Exception as exc:  # noqa: BLE001 - a grader failure is an 'invalid' verdict, recorded
        return {"verdict": "invalid", "reason": f"grader failed: {error_text(exc)}"}


class Scalar:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        check_known_params(ctx, NAME, PARAMS)
        p = ctx.params or {}
        expertise = check_choice("expertise", p.get("expertise", "default"), EXPERTISE)
        style = check_choice("style", p.get("style", "default"), STYLE)
        feedback = check_choice("feedback", p.get("feedback", "default"), FEEDBACK)
        max_iter = param_int(ctx, NAME, "max_iterations", 4, minimum=1, maximum=100)
        delta = param_float(ctx, NAME, "stagnation_delta", 5.0, minimum=0.0, maximum=100.0) or 0.0
        patience = param_int(ctx, NAME, "stagnation_patience", 2, minimum=0, maximum=100)
        use_reference = param_bool(ctx, NAME, "critic_reference", False)
        temperature = param_float(ctx, NAME, "temperature", 0.7, minimum=0.0, maximum=2.0)
        settings = {"temperature": temperature} if temperature is not None else None
        reference = getattr(ctx, "critic_reference", None) if use_reference else None
        if use_reference and not reference:
            raise UserError("strategy scalar: --param critic_reference=true needs a reference solution, "
                            "and the run has none (the problem has no solution/reference, or the runner "
                            "did not supply it)")

        started = time.monotonic()
        problem = ctx.problem
        reqs = requirements(problem)
        images = [image_content(p) for p in problem.images if p.exists()]
        actor = Actor(ctx, persona_text(expertise, style), reqs, settings)
        critic = Critic(ctx, FEEDBACK[feedback], reference, settings)
        judge_model = ctx.models.for_role(judge_mod.ROLE)
        transcript = ScalarTranscript(
            problem_id=problem.id, problem_statement=problem.statement, has_template=problem.has_template,
            gradable=ctx.grader is not None, model=getattr(ctx.models, "name", ""),
            judge_model=getattr(ctx.models, "name", ""),
            config={"expertise": expertise, "style": style, "persona": f"{expertise}/{style}",
                    "feedback": feedback, "critic_reference": bool(reference), "max_iterations": max_iter,
                    "stagnation_delta": delta, "stagnation_patience": patience, "temperature": temperature})
        text: str | None = None
        code: str | None = None
        stop = "iteration_cap"

        def done(status: str, reason: str, exc: BaseException | None = None) -> Attempt:
            transcript.stop_reason = reason
            self._save(ctx, transcript)
            details = {"scores": transcript.scores, "passes": transcript.passes,
                       "converged": transcript.converged, "turns": len(transcript.turns),
                       "config": transcript.config, "transcript_file": TRANSCRIPT_FILE,
                       "judge_parse_failures": sum(not t.judge.parsed for t in transcript.turns)}
            if exc is not None:
                details["error"] = error_text(exc)
            return finish(ctx, NAME, status, reason, started=started, answer_text=text, answer_code=code,
                          details=details)

        try:
            previous_critique: str | None = None
            earlier: list[tuple[str, str | None]] = []
            for turn in range(max_iter):
                if turn == 0:
                    text = await actor.first(problem.statement, images)
                else:
                    text = await actor.revise(previous_critique or "")
                code = extract_template_code(text) if problem.has_template else None
                critique = await critic.review(problem.statement, earlier, text, turn)
                grader_verdict = await grade_turn(ctx, text, code)
                verdict: JudgeVerdict = await judge_mod.score(judge_model, problem.statement, text, turn,
                                                              previous_critique, critique, settings)
                verdict = judge_mod.apply_equivalence(verdict, grader_verdict)
                prev = transcript.scores[-1] if transcript.scores else None
                progress = (abs(verdict.total - prev) > delta
                            if prev is not None and verdict.parsed and verdict.total is not None else None)
                transcript.turns.append(TurnRecord(turn=turn, actor=text, answer_code=code,
                                                   feedback_before=previous_critique, critique=critique,
                                                   grader_verdict=grader_verdict, judge=verdict,
                                                   progress=progress))
                self._save(ctx, transcript)
                ctx.events("step", strategy=NAME, turn=turn, score=verdict.total, passed=verdict.passed)
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
            if is_budget_error(exc):
                return done("partially_complete" if text else "no_answer", budget_reason(exc), exc)
            return done("error", "model_error", exc)

    @staticmethod
    def _save(ctx: Any, transcript: ScalarTranscript) -> None:
        try:
            if ctx.workspace is not None:
                ctx.workspace.mkdir(parents=True, exist_ok=True)
                transcript.save(ctx.workspace)
        except OSError:
            pass


def strategy() -> Scalar:
    return Scalar()
