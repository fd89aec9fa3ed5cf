"""`--strategy lab`: the research lab (physlab.lab) as a Strategy.

Parameters: the lab's own ``LabSettings`` and ``resume_iteration``. Resume: ``ctx.resume`` continues
the run in ``ctx.workspace`` from its last commit; ``resume_iteration`` (or a workspace given as
``DIR@N``) continues from the end of iteration N instead (later iterations stay in the run's git
history).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import model_validator

from physlab.errors import UserError
from physlab.lab.engine import PAPER, LabEngine, LabSettings
from physlab.lab.judgement import judgement
from physlab.lab.workspace import split_resume_target
from physlab.run.environment import RunEnvironment
from physlab.run.progress import ProgressView
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.params import PHYSICS_INTERN, StrategyParams, param

_CODE = f"{PHYSICS_INTERN}, its public code (config.default.yaml)"
_ENGINEERING = "PhysLab: an engineering bound; physics-intern has no such setting"


class LabParams(StrategyParams, LabSettings):
    preset: Literal["physlab", "paper"] = param(
        "physlab", "paper: the seed's setting for every parameter whose source says 'preset=paper' (one worker at a "
                   "time, its caps); a value given explicitly still wins.",
        "PhysLab: its own defaults, which run research in parallel (the seed's parallel agents are its future "
        "work, §7)")
    resume_iteration: int | None = param(None, "Continue the run from the end of iteration N (--resume DIR@N).",
                                         "PhysLab: a run continues from its last commit", ge=0)

    protocols = {"paper": {"preset": "paper"}}  # --protocol paper: the lab as physics-intern runs it

    # Each default says whose it is: "seed: ..." (physics-intern, the paper or its public code) or
    # "PhysLab: ..." (ours, and why; where the seed has a number, preset=paper restores it).
    sources = {
        "max_iterations": f"PhysLab: 12, above the median of 8 iterations physics-intern needed on CritPt "
                          f"({PHYSICS_INTERN} §5), to bound cost; the seed's cap is 40 (runs went 3-40, §5; "
                          f"{_CODE}) — preset=paper",
        "critic_every": f"PhysLab: 2, an audit every other iteration; the seed's critic runs 'periodically' (§3), "
                        f"every 4 iterations ({_CODE}) — preset=paper",
        "parallel_workers": f"PhysLab: 3 concurrent calls; the seed is sequential within a problem ({PHYSICS_INTERN} "
                            "§6; parallel agents are its future work, §7) — preset=paper gives 1",
        "max_dispatches": f"PhysLab: 4 tasks per orchestrator turn; the seed's orchestrator ends each turn with "
                          f"exactly one dispatch ({_CODE}, orchestrator prompt) — preset=paper gives 1",
        "max_critiques": f"PhysLab: 4 per audit; the seed's critic files at most 2 per call ({_CODE}, critic "
                         "prompt) — preset=paper",
        "max_refutations": f"seed: a hypothesis refuted twice must be abandoned (max_refuted_retries: 2, {_CODE})",
        "stall_limit": f"seed: verdicts short of VERIFIED in a row before 'STALLED' (stall_recompute_limit: 2, "
                       f"{_CODE})",
        "critique_expiry": f"seed: MEDIUM and LOW critiques expire after 3 iterations (auto_expire_iterations: 3, "
                           f"{_CODE})",
        "max_refused_completions": f"seed: the circuit breaker after 3 blocked terminations (max_termination_retries: "
                                   f"3, {_CODE})",
        "budget_warning": f"seed: the orchestrator is told to synthesise 3 iterations before the cap "
                          f"(budget_synthesis_margin: 3, {_CODE})",
        "max_scripts": "PhysLab: the evidence keeps every script up to 12 (the first and the newest beyond); "
                       "the seed's computer chooses the scripts it relies on",
        **{k: _ENGINEERING for k in ("max_format_bounces", "code_timeout_s", "code_memory_mb", "tool_retries",
                                     "request_limit", "max_consecutive_failures", "windows")},
    }

    descriptions = {
        "max_iterations": "Iterations before the formatter writes the best supported answer.",
        "code_timeout_s": "Seconds one Computer script may run in the sandbox.",
        "code_memory_mb": "Memory one Computer script may use in the sandbox.",
        "tool_retries": "Corrections sent back to a role whose output or tool call is refused.",
        "max_consecutive_failures": "Failed role calls in a row that end the run.",
    }

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        """preset=paper: the seed's values for what the user did not set."""
        if isinstance(data, dict) and data.get("preset") == "paper":
            return {**PAPER, **data}
        return data

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
                     "lab_status": s.status, "timings": engine.timings,
                     "judgement": judgement(s, {r: u.output_tokens
                                                for r, u in ctx.usage.by_role().items()}).model_dump()},
        )

