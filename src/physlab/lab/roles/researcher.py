"""Researcher: analytical reasoning and derivations that produce evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from physlab.lab.roles._base import LabEnv, run_role

ROLE = "researcher"


class Derivation(BaseModel):
    findings: str = Field(description="The result: concrete statements and values, no hedging filler.")
    derivation: str = Field(description="The derivation, step by step, with the checks you made.")
    confidence: Literal["exact", "approximate", "partial"]


async def run(env: LabEnv, user_prompt: str) -> Derivation:
    return await run_role(env, ROLE, user_prompt, Derivation, output_name="submit_derivation")
