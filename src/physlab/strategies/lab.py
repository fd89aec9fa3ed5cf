"""`--strategy lab`: the research lab (physlab.lab) behind the Strategy protocol.

Parameters (ctx.params): max_iterations, critic_every, parallel_workers, max_dispatches,
max_critiques, code_timeout_s, code_memory_mb, tool_retries, request_limit,
max_consecutive_failures, resume_iteration. Resume: ``ctx.resume`` continues the run in
``ctx.workspace`` from its last commit; ``resume_iteration`` (or a workspace given as ``DIR@N``)
continues from the end of iteration N instead (later iterations stay in the run's git history).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError

from physlab.errors import UserError
from physlab.lab.engine import LabEngine, LabSettings
from physlab.lab.workspace import split_resume_target
from physlab.strategies.base import Attempt

NAME = "lab"


def settings_from_params(params: dict[str, Any]) -> LabSettings:
    known = set(LabSettings.model_fields) | {"resume_iteration"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise UserError(f"unknown parameter(s) {', '.join(unknown)} for --strategy lab "
                        f"(known: {', '.join(sorted(known))})", field="params")
    try:
        return LabSettings(**{k: v for k, v in params.items() if k in LabSettings.model_fields and v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UserError(f"{err['msg']} (got {err.get('input')!r})", field=".".join(map(str, err["loc"]))) from None


def resume_iteration(value: Any) -> int | None:
    """``--param resume_iteration=N``: a whole number N >= 0 (not 1.5, 'abc' or true)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UserError(f"expected an iteration number >= 0 (got {value!r})", field="resume_iteration")
    return value


class LabStrategy:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        started = time.monotonic()
        params = {k: v for k, v in dict(ctx.params or {}).items() if v is not None}
        from_iteration = resume_iteration(params.pop("resume_iteration", None))
        root, at = split_resume_target(ctx.workspace)
        if at is not None:
            ctx.workspace, from_iteration = root, at
        settings = settings_from_params(params)
        if from_iteration is not None and not (root / ".git").exists():
            raise UserError("cannot resume from an iteration: not a lab run directory", path=root)
        engine = LabEngine(ctx, settings)
        out = await engine.run(resume=bool(ctx.resume) or from_iteration is not None,
                               from_iteration=from_iteration)
        status = {"complete": "complete", "partially_complete": "partially_complete"}.get(out.status, "no_answer")
        if status == "partially_complete" and not (out.answer_code or out.answer_text):
            status = "no_answer"
        s = out.state
        return Attempt(
            strategy=NAME, model=getattr(ctx.models, "name", ""), problem_id=ctx.problem.id, status=status,
            stop_reason=out.stop_reason or ("orchestrator declared completion" if status == "complete" else out.status),
            answer_text=out.answer_text, answer_code=out.answer_code,
            usage_by_role=dict(ctx.usage.by_role()), wall_s=time.monotonic() - started,
            details={"iterations": s.iteration, "established_results": len(s.active_ers()),
                     "critiques": len(s.critiques), "demotions": sum(e.status == "demoted" for e in s.ers),
                     "lab_status": s.status, "timings": engine.timings},
        )


def strategy() -> LabStrategy:
    return LabStrategy()
