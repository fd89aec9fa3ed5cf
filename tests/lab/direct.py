"""Run the lab engine directly (no runner) with per-role pydantic-ai FunctionModels — for tests
that need async role players (concurrency) or hand-made misbehaviour."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai.models.function import FunctionModel

from physlab.lab.engine import LabEngine, LabSettings
from physlab.llm.meter import RunMeter
from physlab.llm.usage import Budget
from physlab.run.environment import RunEnvironment
from physlab.sandbox import default_sandbox


class FunctionSource:
    name = "function:test"

    def __init__(self, fns: dict[str, Callable]) -> None:
        self.fns = fns

    def for_role(self, role: str) -> FunctionModel:
        return FunctionModel(self.fns[role], model_name=f"test-{role}")


def make_ctx(ws: Path, fns: dict[str, Callable], problem, *, budget: Budget | None = None, events=None) -> RunEnvironment:
    meter = RunMeter(budget or Budget(), ws / "calls.jsonl")
    return RunEnvironment(problem=problem.public(), workspace=ws, models=FunctionSource(fns), usage=meter,
                      budget=budget or Budget(), sandbox=default_sandbox(), grader=None, equivalence=None,
                      events=events or (lambda *a, **k: None))


async def run_engine(ws: Path, fns: dict[str, Callable], problem, **settings: Any):
    ctx = make_ctx(ws, fns, problem)
    engine = LabEngine(ctx, LabSettings(**settings))
    return engine, await engine.run()
