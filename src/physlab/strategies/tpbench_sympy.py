"""`tpbench-sympy`: TPBench sampling-based search with the SymPy-augmented step-wise verifier
(§3.5, prompt and JSON of Appendix A.4).

Stages 1 and 3 are those of ``tpbench-weak``. In stage 2 each distinct candidate gets k_verif (10)
independent checks by a grading agent (role ``verifier``) that splits the derivation into numbered
steps and, for every calculation step, writes a SymPy script and runs it with its
``run_sympy_script`` tool -- in ``ctx.sandbox``, never in this process. The agent returns the JSON
object of Appendix A.4. A check passes when that JSON parses, ``overall_score`` is 1 and no step is
marked incorrect; the candidate's score is the fraction of passing checks. Default delta = 0.05.

Each reported step is matched with the scripts the tool really ran: a step whose script was never
run is executed now and its real output recorded (``rerun``), so the stored JSON never holds
invented script output.
"""

from __future__ import annotations

import random
import time
from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.usage import UsageLimits

from physlab.sandbox import SandboxLimits
from physlab.strategies.base import Attempt
from physlab.strategies.tpbench.pool import build_pool, tpbench_sizes
from physlab.strategies.tpbench_common import (
    answer_requirements, load_prompt, model_settings, param_float, param_int, parse_json_object,
    render,
)
from physlab.strategies.tpbench_weak import verifier_params, verify_and_select

NAME = "tpbench-sympy"
_CLIP = 20_000


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else text[:_CLIP] + "\n...[truncated]"


async def run_check(ctx: Any, task: str, settings: Any, *, timeout_s: float,
                    max_requests: int) -> dict[str, Any]:
    """One verification run: the agent's JSON report, completed with the real script outputs."""
    executed: list[dict[str, Any]] = []

    async def run_sympy_script(script: str) -> str:
        """Run a self-contained Python/SymPy script in the sandbox; returns STDOUT and STDERR."""
        res = await ctx.sandbox.run(script, limits=SandboxLimits(timeout_s=timeout_s))
        executed.append({"script": script, "stdout": res.stdout, "stderr": res.stderr,
                         "exit_code": res.exit_code, "timed_out": res.timed_out})
        note = " (timed out)" if res.timed_out else ""
        return _clip(f"EXIT CODE: {res.exit_code}{note}\nSTDOUT:\n{res.stdout}\n"
                     f"STDERR:\n{res.stderr}")

    agent: Agent[None, str] = Agent(ctx.models.for_role("verifier"),
                                    instructions=load_prompt("sympy_verifier"),
                                    tools=[Tool(run_sympy_script, name="run_sympy_script")])
    record: dict[str, Any] = {"scripts_run": 0}
    try:
        result = await agent.run(task, model_settings=settings,
                                 usage_limits=UsageLimits(request_limit=max_requests))
    except UsageLimitExceeded as exc:  # the agent never reported: the check does not pass
        record.update(scripts_run=len(executed), passed=False, problem=f"unfinished: {exc}")
        return record
    report = parse_json_object(result.output)
    record["scripts_run"] = len(executed)
    if report is None or not isinstance(report.get("sympy_verification", []), list):
        record.update(passed=False, problem="no JSON report")
        return record
    steps = [s for s in report.get("sympy_verification") or [] if isinstance(s, dict)]
    for step in steps:
        script = str(step.get("sympy_script_content") or "")
        ran = next((e for e in reversed(executed) if e["script"].strip() == script.strip()), None)
        if ran is None and script.strip():
            res = await ctx.sandbox.run(script, limits=SandboxLimits(timeout_s=timeout_s))
            ran = {"stdout": res.stdout, "stderr": res.stderr, "exit_code": res.exit_code}
            step["rerun"] = True
        if ran is not None:
            step["script_stdout"] = ran["stdout"]
            step["script_stderr"] = ran["stderr"]
    try:
        score = int(str(report.get("overall_score", 0)).strip())
    except ValueError:
        score = 0
    wrong = [s.get("step_number") for s in steps if _false(s.get("is_correct"))]
    record.update(report=report, overall_score=score, wrong_steps=wrong,
                  passed=score == 1 and not wrong)
    return record


def _false(value: Any) -> bool:
    if isinstance(value, bool):
        return not value
    return str(value).strip().lower() in {"false", "no", "0"}


class TPBenchSympy:
    name = NAME

    async def run(self, ctx: Any) -> Attempt:
        k_verif, delta, k_tie = verifier_params(ctx, NAME, ("script_timeout_s",
                                                            "max_requests_per_check"))
        timeout_s = param_float(ctx, NAME, "script_timeout_s", 60.0, minimum=1.0) or 60.0
        max_requests = param_int(ctx, NAME, "max_requests_per_check", 40, minimum=2)
        n, m = tpbench_sizes(ctx, NAME)
        started = time.monotonic()
        pool = await build_pool(ctx, NAME, n, m)
        settings = model_settings(ctx, NAME)
        problem = ctx.problem.statement.strip()
        requirements = answer_requirements(ctx.problem)

        def make_jobs(g: int, k: int, rng: random.Random) -> list:
            task = render("sympy_verifier_task", problem=problem, requirements=requirements,
                          solution=pool.representative(g).text or "")

            def job():
                async def run() -> dict[str, Any]:
                    return await run_check(ctx, task, settings, timeout_s=timeout_s,
                                           max_requests=max_requests)
                return run
            return [job() for _ in range(k)]

        def score_of(outcomes: list) -> tuple[float | None, list]:
            done = [o.value for o in outcomes if o.ok]
            records = done + [{"error": str(o.error)[:200]} for o in outcomes if not o.ok]
            if not done:
                return None, records
            return sum(1 for r in done if r["passed"]) / len(done), records

        return await verify_and_select(ctx, NAME, pool, m, k_verif, delta, k_tie, make_jobs,
                                       score_of, started)


def strategy() -> TPBenchSympy:
    return TPBenchSympy()
