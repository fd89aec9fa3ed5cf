"""`minions` - PhysicsMinions (seed 001): Visual, Logic and Review studios, CV consecutive passes.

Flow: figures (when the problem has images) -> Visual Studio JSON; Solver -> Introspector
self-improvement; then up to ``max_iterations`` review rounds: Physics-Verifier, then (only if it
passed) General-Verifier. A pass increments the consecutive-pass count and re-verifies the same
solution; a failure resets the count and the Introspector refines the solution from the bug report.
The solution is accepted after ``cv`` consecutive passes; when the cap is hit the last solution is
returned with ``accepted: false`` and stop reason ``iteration_cap``.

Parameters: :class:`MinionsParams` (``physlab strategies show minions``).
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from typing import Any, Self, cast

from pydantic import model_validator

from physlab.grading.extract import extract_code
from physlab.llm.errors import budget_error
from physlab.run.checkpoints import record_best
from physlab.run.environment import RunEnvironment
from physlab.run.events import Step
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.minions.common import render, requirements
from physlab.strategies.minions.logic import LogicStudio
from physlab.strategies.minions.review import ReviewStudio
from physlab.strategies.minions.visual import FigureResult, describe_figure, figures_block, image_content
from physlab.strategies.params import MINIONS, ModelParams, param
from physlab.strategies.sampling import ask, ended_by, error_text, finish, model_settings

TRACE_FILE = "minions_trace.json"


class MinionsParams(ModelParams):
    temperature: float | None = param(0.6, "Sampling temperature of every request.",
                                      f"{MINIONS}, Method Summary: 'temperature=0.6'", ge=0.0, le=2.0)
    cv: int = param(2, "Consecutive Review Studio passes that accept a solution (CV).",
                    f"{MINIONS} §4.5: 'CV=2 as an empirically efficient setting'", ge=1, le=50)
    max_iterations: int = param(5, "Review rounds before the last solution is returned unaccepted.",
                                f"{MINIONS}, Method Summary: 'maximum 5 iterations per problem'", ge=1, le=100)
    visual: bool = param(True, "Describe the problem's figures with the Visual Studio first.",
                         f"{MINIONS} §3.2: the Visual Studio's structured JSON", )
    visual_cv: int | None = param(None, "Consecutive passes that accept a figure description (unset: cv).",
                                  f"{MINIONS} §3.2: the same CV loop as the Review Studio", ge=1, le=50)
    visual_max_iterations: int | None = param(
        None, "Checks of one figure description before it is kept unverified (unset: max_iterations).",
        f"{MINIONS} §3.2: the same iteration cap as the Review Studio", ge=1, le=100)
    self_improve: bool = param(True, "The Introspector improves the Solver's first solution before review.",
                               f"{MINIONS}, Method Summary: the Logic Studio generates and refines")
    send_images: bool = param(
        False, "Ablation: the raw figures also go to the Logic and Review studios, next to the Visual "
               "Studio's JSON (with visual=false they always go: the studios see the figures or nothing).",
        f"{MINIONS} §3.2 and Mechanism 1: the main configuration passes the validated JSON, not the pixels, "
        "to the Logic Studio; 'raw images vs Visual Studio JSON' is the paper's ablation")

    @model_validator(mode="after")
    def _visual_defaults(self) -> Self:
        self.visual_cv = self.visual_cv or self.cv
        self.visual_max_iterations = self.visual_max_iterations or self.max_iterations
        return self


class Minions(Strategy[MinionsParams]):
    """PhysicsMinions: Visual, Logic and Review studios; accepted after CV consecutive passes."""

    name = "minions"
    Params = MinionsParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        p = self.params
        cv, max_iter, use_visual, self_improve = p.cv, p.max_iterations, p.visual, p.self_improve
        # set by _visual_defaults when unset: never None here
        visual_cv, visual_max = cast(int, p.visual_cv), cast(int, p.visual_max_iterations)
        settings = model_settings(p)
        started = time.monotonic()
        problem = ctx.problem
        trace: dict[str, Any] = {"params": p.model_dump(exclude={"temperature"}),
                                 "figures": [], "iterations": [], "solutions": []}
        solution: str | None = None
        accepted = False
        stop = "iteration_cap"

        def done(status: AttemptStatus, reason: str, exc: BaseException | None = None) -> Attempt:
            trace.update(accepted=accepted, stop_reason=reason)
            if exc is not None:
                trace["error"] = error_text(exc)
            with suppress(OSError):  # the trace is for the reader: a full disk must not end the run
                (ctx.workspace / TRACE_FILE).write_text(json.dumps(trace, indent=1, ensure_ascii=False, default=str))
            code = extract_code(solution) if problem.has_template else None
            details = {"accepted": accepted, "iterations": len(trace["iterations"]),
                       "review": trace["iterations"], "figures_verified": [f["verified"] for f in trace["figures"]],
                       "trace_file": TRACE_FILE}
            if exc is not None:
                details["error"] = error_text(exc)
            return finish(ctx, self.name, status, reason, started=started, answer_text=solution,
                          answer_code=code, details=details)

        try:
            figures: list[FigureResult] = []
            images = [img for img in problem.images if img.exists()] if problem.images else []
            images_ok = True
            if use_visual and images:
                for img in images:
                    try:
                        fig = await describe_figure(ctx, img, cv=visual_cv, max_rounds=visual_max,
                                                    self_improve=self_improve, settings=settings,
                                                    context=problem.statement[-3000:])
                    except Exception as exc:  # e.g. a text-only model refusing images
                        if budget_error(exc) is not None:
                            raise
                        images_ok = False
                        trace["figures"].append({"image": img.name, "verified": False, "error": error_text(exc)})
                        ctx.events(Step(strategy=self.name, step="visual_failed", image=img.name))
                        break
                    figures.append(fig)
                    trace["figures"].append(fig.model_dump())
            # The studios see the figures as the Visual Studio's JSON (the paper's main configuration);
            # the pixels go too in the ablation, or when there is no JSON to give. A model that failed on
            # the figures gets text only from here on.
            raw_images = [image_content(img) for img in images] \
                if (p.send_images or not use_visual) and images_ok else []
            reqs = requirements(problem)
            fig_text = figures_block(figures)
            logic = LogicStudio(ctx, problem.statement, fig_text, reqs, raw_images, settings)
            review = ReviewStudio(ctx, problem.statement, fig_text, raw_images, settings)

            def best_so_far(step: str) -> None:
                trace["solutions"].append({"step": step, "text": solution})
                record_best(ctx, step, answer_code=extract_code(solution) if problem.has_template else None,
                            answer_text=solution)

            solution = await logic.solve()
            best_so_far("solver")
            ctx.events(Step(strategy=self.name, step="solve"))
            if self_improve:
                solution = await logic.improve(solution)
                best_so_far("self_improve")
            passes = 0
            for it in range(1, max_iter + 1):
                outcome = await review.review(solution)
                passes = passes + 1 if outcome.passed else 0
                trace["iterations"].append({"iteration": it, "passed": outcome.passed, "stage": outcome.stage,
                                            "parsed": outcome.parsed, "issues": outcome.issues,
                                            "consecutive_passes": passes})
                ctx.events(Step(strategy=self.name, step="review", iteration=it, passed=outcome.passed,
                                stage=outcome.stage, consecutive=passes))
                if passes >= cv:
                    accepted, stop = True, "accepted"
                    break
                if not outcome.passed and it < max_iter:
                    solution = await logic.refine(solution, outcome.bug_report())
                    best_so_far(f"refine_{it}")
            if problem.has_template and not extract_code(solution):
                filled, _ = await ask(ctx, "formatter", render("formatter", requirements=reqs, solution=solution),
                                      settings=settings, images=False)
                solution = solution + "\n\n" + filled
            return done("complete", stop)
        except Exception as exc:  # noqa: BLE001 - every failure ends the run cleanly with what we have
            return done(*ended_by(exc, answered=bool(solution)), exc)
