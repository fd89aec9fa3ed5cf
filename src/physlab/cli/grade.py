"""`physlab grade PROBLEM CANDIDATE [--json] [--judge MODEL]`: exit 0 correct, 1 incorrect/invalid,
2 bad input, 3 ungraded (a prose reference and no judge, or no verdict from the judge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from physlab.errors import UserError
from physlab.sandbox.bounds import MAX_TIMEOUT_S

if TYPE_CHECKING:
    from physlab.sandbox import Sandbox


def _resolve(spec: str):
    try:
        from physlab.problems import resolve_problem
    except ImportError as exc:  # the problem loaders are not installed/built
        raise UserError(f"cannot load problems ({exc})") from None
    return resolve_problem(spec)


def command_sandbox() -> Sandbox:
    """One grade is two runs: a worker for the candidate and one for the comparison, each importing
    what the grader's stages use rather than the whole stack the lab's code may
    (``physlab.sandbox.preload``); isolated and limited as every sandbox run."""
    from physlab.sandbox import Sandbox, preload

    return Sandbox(workers=1, preload=preload.GRADING)


def grade_command(
    problem: str = typer.Argument(..., help="Problem file, FILE#ID or SUITE/ID."),
    candidate: Path = typer.Argument(..., help="Python file defining the template's function, or a "
                                              "Markdown/text file whose last fenced python block does, or "
                                              "whose final answer is written in LaTeX (\\boxed{...}, a "
                                              "'Final answer:' line)."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.1, max=MAX_TIMEOUT_S,
                                  help="Seconds the candidate code may run."),
    judge: str | None = typer.Option(
        None, "--judge", help="provider:model that grades an answer whose reference is prose (no rule reads it; "
        "without a judge such an answer is ungraded, exit 3). It sees the problem, the reference and the final "
        "answer only."),
    api_base: str | None = typer.Option(None, "--api-base", help="The judge's server (OpenAI-compatible)."),
    api_key_env: str | None = typer.Option(None, "--api-key-env",
                                              help="Environment variable holding the judge's API key."),
) -> None:
    """Grade CANDIDATE against PROBLEM's reference answer."""
    from physlab.grading.grader import Grader

    prob = _resolve(problem)
    if prob.reference is None:
        where = prob.path or problem
        raise UserError(f"problem '{prob.id}' has no reference answer: nothing to grade against", path=where)
    try:
        text = candidate.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read the candidate ({exc.strerror or exc})", path=candidate) from None
    sandbox = command_sandbox()
    sandbox.warm(1, trusted=True)  # a worker for the candidate and one for the comparison, side by side
    verdict = Grader(sandbox, timeout_s=timeout).grade_sync(prob, text)
    if verdict.verdict == "ungraded" and judge:
        import asyncio

        from physlab.llm.judge import judge_with

        verdict = asyncio.run(judge_with(prob, text, judge, api_base=api_base, api_key_env=api_key_env))
    if as_json:
        typer.echo(json.dumps({**verdict.contract_json(), "problem": prob.id}))
    else:
        typer.echo(f"{verdict.verdict}: {verdict.reason}")
        d = verdict.details
        if d.get("path") == "prose":
            typer.echo(f"  final answer: {d.get('candidate_normalized', '')}")
        elif d.get("candidate_normalized") or d.get("reference_normalized"):
            typer.echo(f"  compared ({d.get('path', '')}, {d.get('method', '')}): {d.get('candidate_normalized', '')}"
                       f"  with reference  {d.get('reference_normalized', '')}")
        j = d.get("judge")
        if isinstance(j, dict):
            typer.echo(f"  judge {j.get('model')}: {j.get('calls', 0)} call(s), "
                       f"{j.get('input_tokens', 0) + j.get('output_tokens', 0)} tokens, ${j.get('cost_usd', 0):.4f}")
    raise typer.Exit(0 if verdict.correct else 3 if verdict.verdict == "ungraded" else 1)


def register(app: typer.Typer) -> None:
    app.command("grade")(grade_command)
