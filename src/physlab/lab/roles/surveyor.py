"""Surveyor: runs once before the loop; maps background, key insights, methods and pitfalls."""

from __future__ import annotations

from physlab.lab import context as C
from physlab.lab.roles._base import LabEnv, run_role
from physlab.lab.state.models import Survey

ROLE = "surveyor"


async def run(env: LabEnv) -> Survey:
    return await run_role(env, ROLE, C.for_surveyor(env.ctx.problem), Survey, output_name="submit_survey")
