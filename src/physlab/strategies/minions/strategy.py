"""`minions` - PhysicsMinions (seed 001): Visual, Logic and Review studios, CV consecutive passes.

Flow: figures (when the problem has images) -> Visual Studio JSON; Solver -> Introspector
self-improvement; then up to ``max_iterations`` review rounds: Physics-Verifier, then (only if it
passed) General-Verifier. A pass increments the consecutive-pass count and re-verifies the same
solution; a failure resets the count and the Introspector refines the solution from the bug report.
The solution is accepted after ``cv`` consecutive passes; when the cap is hit the last solution is
returned with ``accepted: false`` and stop reason ``iteration_cap``.

Params (``--param k=v``): cv (2), max_iterations (5), visual (true), visual_cv (2),
visual_max_iterations (5), self_improve (true), send_images (true: raw figures also go to the
studios as images, next to the JSON), temperature (0.6, the paper's).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from physlab.strategies.base import Attempt
from physlab.strategies.minions.common import ask, render, requirements
from physlab.strategies.minions.logic import LogicStudio
from physlab.strategies.minions.review import ReviewStudio
from physlab.strategies.minions.visual import FigureResult, describe_figure, figures_block, image_content
from physlab.strategies.tpbench_common import (
    budget_reason, check_known_params, error_text, finish, is_budget_error, param_bool,
    param_float, param_int,
)

NAME = "minions"
PARAMS = ("cv", "max_iterations", "visual", "visual_cv", "visual_max_iterations", "self_improve",
          "send_images")
TRACE_FILE = "minions_trace.json"


def extract_template_code(text: str | None) -> str | None:
    """The filled template in a reply (the grader's extractor; last fenced python block if the
    grading package is not importable)."""
    if not text:
        return None
    try:
        from physlab.grading.extract import extract_code
    except ImportError:
        blocks = re.findall(r"```python\s*\n(.*?)```", text, re.DOTALL)
        return blocks[-1].strip() + "\n" if blocks else None
    return extract_code(text)


class Minions:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        check_known_params(ctx, NAME, PARAMS)
        cv = param_int(ctx, NAME, "cv", 2, minimum=1, maximum=50)
        max_iter = param_int(ctx, NAME, "max_iterations", 5, minimum=1, maximum=100)
        use_visual = param_bool(ctx, NAME, "visual", True)
        visual_cv = param_int(ctx, NAME, "visual_cv", cv, minimum=1, maximum=50)
        visual_max = param_int(ctx, NAME, "visual_max_iterations", max_iter, minimum=1, maximum=100)
        self_improve = param_bool(ctx, NAME, "self_improve", True)
        send_images = param_bool(ctx, NAME, "send_images", True)
        temperature = param_float(ctx, NAME, "temperature", 0.6, minimum=0.0, maximum=2.0)
        settings = {"temperature": temperature} if temperature is not None else None

        started = time.monotonic()
        problem = ctx.problem
        trace: dict[str, Any] = {"params": {"cv": cv, "max_iterations": max_iter, "visual": use_visual,
                                            "visual_cv": visual_cv, "visual_max_iterations": visual_max,
                                            "self_improve": self_improve, "send_images": send_images},
                                 "figures": [], "iterations": [], "solutions": []}
        solution: str | None = None
        accepted = False
        stop = "iteration_cap"

        def done(status: str, reason: str, exc: BaseException | None = None) -> Attempt:
            trace.update(accepted=accepted, stop_reason=reason)
            if exc is not None:
                trace["error"] = error_text(exc)
            self._write_trace(ctx, trace)
            code = extract_template_code(solution) if problem.has_template else None
            details = {"accepted": accepted, "iterations": len(trace["iterations"]),
                       "review": trace["iterations"], "figures_verified": [f["verified"] for f in trace["figures"]],
                       "trace_file": TRACE_FILE}
            if exc is not None:
                details["error"] = error_text(exc)
            return finish(ctx, NAME, status, reason, started=started, answer_text=solution,
                          answer_code=code, details=details)

        try:
            figures: list[FigureResult] = []
            images = [p for p in problem.images if p.exists()] if problem.images else []
            images_ok = True
            if use_visual and images:
                for img in images:
                    try:
                        fig = await describe_figure(ctx, img, cv=visual_cv, max_rounds=visual_max,
                                                    self_improve=self_improve, settings=settings,
                                                    context=problem.statement[-3000:])
                    except Exception as exc:  # noqa: BLE001 - e.g. a text-only model refusing images
                        if is_budget_error(exc):
                            raise
                        images_ok = False
                        trace["figures"].append({"image": img.name, "verified": False, "error": error_text(exc)})
                        ctx.events("step", strategy=NAME, step="visual_failed", image=img.name)
                        break
                    figures.append(fig)
                    trace["figures"].append(fig.model_dump())
            # a model that failed on the figures gets text only from here on
            raw_images = [image_content(p) for p in images] if send_images and images_ok else []
            reqs = requirements(problem)
            fig_text = figures_block(figures)
            logic = LogicStudio(ctx, problem.statement, fig_text, reqs, raw_images, settings)
            review = ReviewStudio(ctx, problem.statement, fig_text, raw_images, settings)

            solution = await logic.solve()
            trace["solutions"].append({"step": "solver", "text": solution})
            ctx.events("step", strategy=NAME, step="solve")
            if self_improve:
                solution = await logic.improve(solution)
                trace["solutions"].append({"step": "self_improve", "text": solution})
            passes = 0
            for it in range(1, max_iter + 1):
                outcome = await review.review(solution)
                passes = passes + 1 if outcome.passed else 0
                trace["iterations"].append({"iteration": it, "passed": outcome.passed, "stage": outcome.stage,
                                            "parsed": outcome.parsed, "issues": outcome.issues,
                                            "consecutive_passes": passes})
                ctx.events("step", strategy=NAME, step="review", iteration=it, passed=outcome.passed,
                           stage=outcome.stage, consecutive=passes)
                if passes >= cv:
                    accepted, stop = True, "accepted"
                    break
                if not outcome.passed and it < max_iter:
                    solution = await logic.refine(solution, outcome.bug_report())
                    trace["solutions"].append({"step": f"refine_{it}", "text": solution})
            if problem.has_template and not extract_template_code(solution):
                filled, _ = await ask(ctx, "formatter", render("formatter", requirements=reqs, solution=solution),
                                      settings=settings)
                solution = solution + "\n\n" + filled
            return done("complete", stop)
        except Exception as exc:  # noqa: BLE001 - every failure ends the run cleanly with what we have
            if is_budget_error(exc):
                return done("partially_complete" if solution else "no_answer", budget_reason(exc), exc)
            return done("error", "model_error", exc)

    @staticmethod
    def _write_trace(ctx: Any, trace: dict[str, Any]) -> None:
        try:
            ws = ctx.workspace
            if ws is not None:
                ws.mkdir(parents=True, exist_ok=True)
                (ws / TRACE_FILE).write_text(json.dumps(trace, indent=1, ensure_ascii=False, default=str))
        except OSError:
            pass


def strategy() -> Minions:
    return Minions()
