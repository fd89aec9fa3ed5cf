"""Re-score a stored SCALAR transcript with another Judge (``physlab runs rescore DIR --judge M``).

The Actor and the Critic are not re-run and the original stopping decisions stand; each stored
turn is scored again by the new Judge, which decides Eq(A, R) again itself (seed 003, Appendix D,
'Re-scoring protocol'): it reads the reference solution as the first Judge did, so a run whose
Judge had one needs the problem again (``--problem``; the transcript never holds the reference).
The grader's stored verdict goes beside each new verdict, as in the run. The result goes to
``scalar_rescore_<judge>.json`` beside the transcript, and the new Judge's requests to
``scalar_rescore_<judge>.calls.jsonl`` (the run's own calls.jsonl is left untouched).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel, Field
from pydantic_ai.models import Model

from physlab.errors import UserError
from physlab.strategies.scalar import judge as judge_mod
from physlab.strategies.scalar.rubric import JudgeVerdict
from physlab.strategies.scalar.transcript import load_transcript


class Rescore(BaseModel):
    run_dir: str
    problem_id: str
    judge_model: str
    original_judge_model: str
    verdicts: list[JudgeVerdict] = Field(default_factory=list)

    @property
    def scores(self) -> list[float | None]:
        return [v.total if v.parsed else None for v in self.verdicts]

    @property
    def passes(self) -> list[bool]:
        return [v.passed for v in self.verdicts]

    @property
    def converged(self) -> bool:
        return any(self.passes)

    def summary(self) -> dict[str, Any]:
        return {"judge_model": self.judge_model, "scores": self.scores, "passes": self.passes,
                "converged": self.converged,
                "parse_failures": sum(not v.parsed for v in self.verdicts)}


def rescore_file_name(judge_model: str) -> str:
    return "scalar_rescore_" + re.sub(r"[^A-Za-z0-9._-]+", "_", judge_model) + ".json"


async def rescore_transcript(run_dir: Path | str, model: Model, judge_name: str,
                             settings: dict[str, Any] | None = None, *, reference: str | None = None) -> Rescore:
    """Score every stored turn with ``model`` (a pydantic-ai Model), against ``reference`` when the
    run's Judge had one, and write the result file."""
    run_dir = Path(run_dir)
    tr = load_transcript(run_dir)
    if tr.config.get("judge_reference") and not reference:
        raise UserError(f"the Judge of this run graded against the reference solution of problem '{tr.problem_id}'; "
                        "give that problem with --problem so the new Judge can too", path=run_dir)
    out = Rescore(run_dir=str(run_dir), problem_id=tr.problem_id, judge_model=judge_name,
                  original_judge_model=tr.judge_model)
    for t in tr.turns:
        v = await judge_mod.score(model, tr.problem_statement, t.actor, t.turn, t.feedback_before, t.critique,
                                  settings, reference=reference)
        out.verdicts.append(judge_mod.with_grader(v, t.grader_verdict))
    (run_dir / rescore_file_name(judge_name)).write_text(out.model_dump_json(indent=1), encoding="utf-8")
    return out


async def rescore_run(run_dir: Path | str, judge_model: str, *, problem: str | Path | None = None,
                      api_base: str | None = None, api_key_env: str | None = None,
                      temperature: float | None = None) -> Rescore:
    """Re-score a SCALAR run directory with the Judge ``judge_model`` (a PhysLab model name:
    provider:model, scripted:NAME, ...); ``problem`` (what `physlab solve` accepts) gives the new
    Judge the reference solution. Bad input raises UserError."""
    from physlab.llm.meter import RunMeter
    from physlab.llm.models import RunModels

    run_dir = Path(run_dir)
    tr = load_transcript(run_dir)  # fail early with a one-line error
    reference = None
    if problem is not None:
        from physlab.problems import resolve_problem

        full = resolve_problem(problem)
        if full.id != tr.problem_id:
            raise UserError(f"--problem is '{full.id}', and this run is on '{tr.problem_id}'", path=run_dir,
                            field="--problem")
        reference = full.solution or full.reference
    calls = run_dir / rescore_file_name(judge_model).replace(".json", ".calls.jsonl")
    meter = RunMeter(None, calls)
    models = RunModels(judge_model, meter=meter, api_base=api_base, api_key_env=api_key_env)
    try:
        settings = {"temperature": temperature} if temperature is not None else None
        return await rescore_transcript(run_dir, models.for_role(judge_mod.ROLE), judge_model, settings,
                                        reference=reference)
    finally:
        meter.close()
        await models.aclose()


def register_rescore(runs_app: typer.Typer) -> None:
    """Add ``rescore DIR --judge M`` to the ``physlab runs`` typer app (physlab.cli.runs)."""
    import asyncio

    @runs_app.command("rescore")
    def rescore_cmd(
        run_dirs: list[Path] = typer.Argument(..., help="SCALAR run directories (holding scalar_transcript.json)."),
        judge: str = typer.Option(..., "--judge", help="Judge model, provider:model (or scripted:NAME)."),
        problem: str | None = typer.Option(None, "--problem", help="The runs' problem (a file, FILE#ID or SUITE/ID): "
                                           "the new Judge grades against its reference solution, as the first did."),
        api_base: str | None = typer.Option(None, "--api-base", help="OpenAI-compatible base URL for openai: models."),
        api_key_env: str | None = typer.Option(None, "--api-key-env", help="Environment variable holding the key."),
        temperature: float | None = typer.Option(None, "--temperature", help="Judge sampling temperature."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON summary per run."),
    ) -> None:
        """Re-score stored SCALAR transcripts with another Judge (Actor and Critic are not re-run)."""
        for d in run_dirs:
            res = asyncio.run(rescore_run(d, judge, problem=problem, api_base=api_base, api_key_env=api_key_env,
                                          temperature=temperature))
            summary = {"run_dir": str(d), **res.summary()}
            if as_json:
                typer.echo(json.dumps(summary))
            else:
                scores = ", ".join("-" if s is None else f"{s:g}" for s in res.scores)
                typer.echo(f"{d}: judge {judge}: scores [{scores}] converged={res.converged} "
                           f"-> {rescore_file_name(judge)}")


def register_report(runs_app: typer.Typer) -> None:
    """Add ``scalar-report PATH... [--judge M] [--by feedback] [--out DIR]`` to ``physlab runs``."""
    from physlab.errors import UserError
    from physlab.strategies.scalar import analysis

    @runs_app.command("scalar-report")
    def report_cmd(
        paths: list[Path] = typer.Argument(..., help="SCALAR run directories, or directories holding them."),
        judge: str | None = typer.Option(None, "--judge", help="Use this re-scoring Judge's scores."),
        by: str = typer.Option("feedback", "--by", help="Group by feedback|persona|expertise|style|model|problem_id."),
        out: Path | None = typer.Option(None, "--out", help="Write report.json and score_update_field.png here."),
        bins: int = typer.Option(10, "--bins", min=2),
        n_boot: int = typer.Option(1000, "--n-boot", min=0),
    ) -> None:
        """Mean score, gain, convergence, Kruskal-Wallis / Mann-Whitney / Wilcoxon and the
        score-update field over many SCALAR runs."""
        if by not in ("feedback", "persona", "expertise", "style", "model", "problem_id", "judge_model"):
            raise UserError(f"expected feedback|persona|expertise|style|model|problem_id, got {by!r}", field="--by")
        dirs = analysis.find_run_dirs(paths)
        if not dirs:
            raise UserError("no scalar_transcript.json found", path=paths[0] if paths else None)
        records = analysis.load_records(dirs, judge=judge)
        rep = analysis.report(records, by=by, out_dir=out, bins=bins, n_boot=n_boot)
        typer.echo(f"{rep['n_runs']} runs, grouped by {by}")
        for g, row in rep["summary"].items():
            typer.echo(f"  {g}: n={row['n']} s_bar={row['mean_score']:.1f} gain={row['gain']:.1f} "
                       f"R={row['convergence_rate']:.0f}%")
        kw = rep["tests"].get("kruskal_mean_score", {})
        if "p_value" in kw:
            typer.echo(f"Kruskal-Wallis on s_bar: H={kw['statistic']:.3g} p={kw['p_value']:.3g}")
        for name, f in rep["update_fields"].items():
            typer.echo(f"  v(s) zero crossings [{name}]: {[round(z, 1) for z in f['zero_crossings']]}")
        if out is not None:
            typer.echo(f"-> {out / 'report.json'}")


def register_scalar_runs(runs_app: typer.Typer) -> None:
    """Both SCALAR commands of ``physlab runs``: rescore and scalar-report."""
    register_rescore(runs_app)
    register_report(runs_app)
