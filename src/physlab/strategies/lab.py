"""`--strategy lab`: the research lab (physlab.lab) as a Strategy.

Parameters: the lab's own ``LabSettings`` and ``resume_iteration``. Resume: ``ctx.resume`` continues
the run in ``ctx.workspace`` from its last commit; ``resume_iteration`` (or a workspace given as
``DIR@N``) continues from the end of iteration N instead (later iterations stay in the run's git
history).
"""

from __future__ import annotations

import time

from physlab.errors import UserError
from physlab.lab.engine import LabEngine, LabSettings
from physlab.lab.workspace import split_resume_target
from physlab.run.environment import RunEnvironment
from physlab.run.progress import ProgressView
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.params import PHYSICS_INTERN, StrategyParams, param

_ENGINEERING = f"PhysLab: an engineering bound; {PHYSICS_INTERN} gives no number"


class LabParams(StrategyParams, LabSettings):
    resume_iteration: int | None = param(None, "Continue the run from the end of iteration N (--resume DIR@N).",
                                         "PhysLab: a run continues from its last commit", ge=0)

    sources = {
        "max_iterations": f"PhysLab: above the median of 8 iterations physics-intern needed on CritPt "
                          f"({PHYSICS_INTERN} §5)",
        "critic_every": f"PhysLab: the senior critic audits 'periodically' ({PHYSICS_INTERN} §3), no number given",
        "max_refutations": f"PhysLab: 'repeatedly refuted' claims are abandoned as dead ends; {PHYSICS_INTERN} "
                           "gives no number, twice is the least 'repeatedly' can mean",
        **{k: _ENGINEERING for k in ("parallel_workers", "max_dispatches", "max_critiques", "max_format_bounces",
                                     "code_timeout_s", "code_memory_mb", "tool_retries", "request_limit",
                                     "max_consecutive_failures", "windows")},
    }

    descriptions = {
        "max_iterations": "Iterations before the formatter writes the best supported answer.",
        "code_timeout_s": "Seconds one Computer script may run in the sandbox.",
        "code_memory_mb": "Memory one Computer script may use in the sandbox.",
        "tool_retries": "Corrections sent back to a role whose output or tool call is refused.",
        "max_consecutive_failures": "Failed role calls in a row that end the run.",
    }

    def settings(self) -> LabSettings:
        return LabSettings(**self.model_dump(include=set(LabSettings.model_fields)))


class LabStrategy(Strategy[LabParams]):
    """The research lab: nine roles, adversarial review, a persistent research state in git."""

    name = "lab"
    Params = LabParams
    resumable = True  # from its last commit (or an earlier iteration's)

    @classmethod
    def live_view(cls) -> ProgressView:
        from physlab.lab.console import LabView

        return LabView()

    async def run(self, ctx: RunEnvironment) -> Attempt:
        started = time.monotonic()
        from_iteration = self.params.resume_iteration
        root, at = split_resume_target(ctx.workspace)
        if at is not None:
            ctx.workspace, from_iteration = root, at
        settings = self.params.settings()
        if from_iteration is not None and not (root / ".git").exists():
            raise UserError("cannot resume from an iteration: not a lab run directory", path=root)
        engine = LabEngine(ctx, settings)
        out = await engine.run(resume=bool(ctx.resume) or from_iteration is not None,
                               from_iteration=from_iteration)
        statuses: dict[str, AttemptStatus] = {"complete": "complete", "partially_complete": "partially_complete",
                                              "paused": "paused"}
        status = statuses.get(out.status, "no_answer")
        if status == "partially_complete" and not (out.answer_code or out.answer_text):
            status = "no_answer"
        s = out.state
        return Attempt(
            strategy=self.name, model=ctx.models.name, problem_id=ctx.problem.id, status=status,
            stop_reason=out.stop_reason or ("orchestrator declared completion" if status == "complete" else out.status),
            answer_text=out.answer_text, answer_code=out.answer_code,
            usage_by_role=dict(ctx.usage.by_role()), wall_s=time.monotonic() - started,
            details={"iterations": s.iteration, "established_results": len(s.active_ers()),
                     "critiques": len(s.critiques), "demotions": sum(e.status == "demoted" for e in s.ers),
                     "lab_status": s.status, "timings": engine.timings},
        )

