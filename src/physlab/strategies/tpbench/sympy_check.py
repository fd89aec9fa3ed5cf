"""`tpbench-sympy`: TPBench sampling-based search with the SymPy-augmented step-wise verifier
(§3.5, prompt and JSON of Appendix A.4).

Stages 1 and 3 are those of ``tpbench-weak``. In stage 2 each distinct candidate gets k_verif (10)
independent checks by a grading agent (role ``verifier``) that splits the derivation into numbered
steps and, for every calculation step, writes a SymPy script and runs it with its
``run_sympy_script`` tool -- in ``ctx.sandbox``, never in this process. The agent submits the report
of Appendix A.4 through its output tool (:class:`SympyReport`). As in the paper a check passes when
the agent's ``overall_score`` is 1; the candidate's score is the fraction of passing checks.
Default delta = 0.05.

``--param cas=form`` (or cadabra2, maxima, wolfram) also gives the agent ``run_cas_script``, which
runs a program in that computer algebra system in the same sandbox, for the steps SymPy cannot
check (Dirac traces, tensor index symmetries, as the paper found for general relativity); its
instructions get the system's tested example. A step's script may then be in that language. The
paper's verifier has SymPy only: ``cas=none``, the default.

Each reported step is matched with the scripts the tool really ran (whitespace aside) and the
sandbox's output is recorded beside the agent's claim. ``check_pass=steps_ran`` (PhysLab's switch)
also requires every reported step to have run through the tool without failing, and at least one
step: a step whose script never ran (or crashed) verified nothing, so it fails the check.
"""

from __future__ import annotations

import random
import time
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import Agent, Tool
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.usage import UsageLimits

from physlab.errors import UserError
from physlab.llm.output import structured_output
from physlab.run.environment import RunEnvironment
from physlab.sandbox import SandboxLimits
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import TPBENCH, param
from physlab.strategies.sampling import (
    OUTPUT_RETRIES,
    answer_requirements,
    load_prompt,
    model_settings,
    render,
)
from physlab.strategies.tpbench.candidates import build_pool
from physlab.strategies.tpbench.select import Job, VerifierParams, verify_and_select
from physlab.tools import cas as algebra

_CLIP = 20_000


class SympyParams(VerifierParams):
    check_pass: Literal["overall_score", "steps_ran"] = param(
        "overall_score", "When one verification passes: 'overall_score' is 1 (the paper); 'steps_ran' also needs "
        "every reported step's script to have run through the tool without failing, and at least one step.",
        f"{TPBENCH} §3.5 and Appendix A.4: the agent's overall score is the check's binary score V_ij; "
        "'steps_ran' is PhysLab's stricter switch")
    script_timeout_s: float = param(60.0, "Seconds one verification script may run in the sandbox.",
                                    "PhysLab: the paper gives no limit", ge=1.0)
    max_requests_per_check: int = param(40, "Model requests one verification may make (its tool loop).",
                                        "PhysLab: the paper gives no limit", ge=2)
    cas: Literal["none", "form", "cadabra2", "maxima", "wolfram"] = param(
        "none", "A computer algebra system the verifier may also run steps in (run_cas_script), for what SymPy "
                "cannot check.",
        "paper: SymPy only (§3.5), which could not check general-relativity tensor steps; PhysLab: a switch")

    def cas_status(self) -> algebra.SystemStatus | None:
        """The chosen system as installed here; None for cas=none. Missing: one line saying how to install it."""
        if self.cas == "none":
            return None
        status = algebra.system_status(self.cas)
        if not status.available:
            raise UserError(status.reason, field="cas")
        return status


class SympyStep(BaseModel):
    step_number: int
    calculation_description: str
    sympy_script_content: str
    script_stdout: str = ""
    script_stderr: str = ""
    is_correct: bool
    error_explanation: str = ""


class SympyReport(BaseModel):
    """The grading agent's report (Appendix A.4)."""

    sympy_verification: list[SympyStep]
    overall_score: Literal[0, 1]
    general_feedback: str = ""


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else text[:_CLIP] + "\n...[truncated]"


CAS_INSTRUCTIONS = """

## A computer algebra system

Besides run_sympy_script you have run_cas_script, which runs a whole program in {name} in the same \
sandbox. Use it for a step SymPy cannot check well; put that program in the step's \
sympy_script_content, exactly as you ran it.

{description}"""


async def run_check(ctx: RunEnvironment, task: str, settings: dict[str, Any] | None, *, timeout_s: float,
                    max_requests: int, check_pass: str = "overall_score",
                    cas: algebra.SystemStatus | None = None) -> dict[str, Any]:
    """One verification run: the agent's report, completed with the real script outputs."""
    executed: list[dict[str, Any]] = []

    async def run_sympy_script(script: str) -> str:
        """Run a self-contained Python/SymPy script in the sandbox; returns STDOUT and STDERR."""
        res = await ctx.sandbox.run(script, limits=SandboxLimits(timeout_s=timeout_s))
        executed.append({"script": script, "stdout": res.stdout, "stderr": res.stderr,
                         "exit_code": res.exit_code, "timed_out": res.timed_out})
        note = " (timed out)" if res.timed_out else ""
        return _clip(f"EXIT CODE: {res.exit_code}{note}\nSTDOUT:\n{res.stdout}\n"
                     f"STDERR:\n{res.stderr}")

    async def run_cas_script(script: str) -> str:
        """Run a whole program in the computer algebra system named in your instructions, in the sandbox;
        returns STDOUT and STDERR."""
        assert cas is not None
        res = await algebra.execute(script, cas.language, ctx.sandbox, SandboxLimits(timeout_s=timeout_s))
        executed.append({"script": script, "stdout": res.stdout, "stderr": res.stderr, "language": cas.language,
                         "exit_code": res.exit_code, "timed_out": res.timed_out})
        note = " (timed out)" if res.timed_out else ""
        return _clip(f"EXIT CODE: {res.exit_code}{note}\n" + (f"NOTICE: {res.notice}\n" if res.notice else "")
                     + f"STDOUT:\n{res.stdout}\nSTDERR:\n{res.stderr}")

    tools = [Tool(run_sympy_script, name="run_sympy_script")]
    instructions = load_prompt("sympy_verifier")
    if cas is not None:
        tools.append(Tool(run_cas_script, name="run_cas_script"))
        instructions += CAS_INSTRUCTIONS.format(name=cas.name, description=algebra.describe([cas]))
    model = ctx.models.for_role("verifier")
    agent = Agent(model, instructions=instructions, tools=tools,
                  output_type=structured_output(model, SympyReport, name="submit_report"), retries=OUTPUT_RETRIES)
    record: dict[str, Any] = {"scripts_run": 0}
    try:
        result = await agent.run(task, model_settings=settings,  # type: ignore[arg-type]
                                 usage_limits=UsageLimits(request_limit=max_requests))
    except UsageLimitExceeded as exc:  # the agent never reported: the check does not pass
        record.update(scripts_run=len(executed), passed=False, problem=f"unfinished: {exc}")
        return record
    except UnexpectedModelBehavior as exc:  # no valid report after the retries
        record.update(scripts_run=len(executed), passed=False, problem=f"no valid report: {exc}")
        return record
    report = result.output
    record["scripts_run"] = len(executed)
    strict = check_pass == "steps_ran"
    steps = [checked_step(step.model_dump(), executed, strict=strict) for step in report.sympy_verification]
    wrong = [s["step_number"] for s in steps if not s["is_correct"]]
    record.update(report={**report.model_dump(), "sympy_verification": steps},
                  overall_score=report.overall_score, wrong_steps=wrong)
    if not strict:
        record["passed"] = report.overall_score == 1
    elif not steps:
        record.update(passed=False, problem="no step was reported, so none was verified")
    else:
        record["passed"] = report.overall_score == 1 and not wrong
    return record


def _same_script(a: str, b: str) -> bool:
    """One script, re-typed: the agent's JSON may space or escape it otherwise than what it ran."""
    return "".join(a.split()) == "".join(b.split())


def checked_step(step: dict[str, Any], executed: list[dict[str, Any]], *, strict: bool = True) -> dict[str, Any]:
    """A reported step against the scripts the tool ran: its recorded output is the sandbox's, and
    (``strict``) a step whose script never ran, or ran and failed, cannot pass."""
    script = step["sympy_script_content"]
    ran = next((e for e in reversed(executed) if script.strip() and _same_script(e["script"], script)), None)
    step["script_ran"] = ran is not None
    if ran is None:
        step.update(script_stdout="", script_stderr="")
        if strict:
            step.update(is_correct=False,
                        error_explanation="not verified: this script never ran through run_sympy_script")
        return step
    step.update(script_stdout=ran["stdout"], script_stderr=ran["stderr"], language=ran.get("language", "python"))
    if strict and (ran["exit_code"] != 0 or ran["timed_out"]):
        step.update(is_correct=False, error_explanation="not verified: the script failed "
                    + ("(timed out)" if ran["timed_out"] else f"(exit code {ran['exit_code']})"))
    return step


class TPBenchSympy(Strategy[SympyParams]):
    """TPBench sampling-based search with the SymPy-augmented step-wise verifier."""

    name = "tpbench-sympy"
    Params = SympyParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        p = self.params
        started = time.monotonic()
        system = p.cas_status()     # before any sample: a missing system is one line, not a failed run
        pool = await build_pool(ctx, self.name, p)
        settings = model_settings(p)
        problem = ctx.problem.statement.strip()
        requirements = answer_requirements(ctx.problem)

        def make_jobs(g: int, k: int, rng: random.Random) -> list[Job]:
            task = render("sympy_verifier_task", problem=problem, requirements=requirements,
                          solution=pool.representative(g).text or "")

            def job() -> Job:
                async def run() -> dict[str, Any]:
                    return await run_check(ctx, task, settings, timeout_s=p.script_timeout_s,
                                           max_requests=p.max_requests_per_check, check_pass=p.check_pass,
                                           cas=system)
                return run
            return [job() for _ in range(k)]

        def score_of(outcomes: list) -> tuple[float | None, list]:
            done = [o.value for o in outcomes if o.ok]
            records = done + [{"error": str(o.error)[:200]} for o in outcomes if not o.ok]
            if not done:
                return None, records
            return sum(1 for r in done if r["passed"]) / len(done), records

        return await verify_and_select(ctx, self.name, p, pool, make_jobs, score_of, started)
