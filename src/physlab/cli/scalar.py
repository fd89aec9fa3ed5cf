"""`physlab runs rescore` and `physlab runs scalar-report`: SCALAR's stored transcripts (seed 003)
scored again by another Judge, and the analysis over many runs. ``physlab.cli.runs`` registers them;
SCALAR's machinery (pydantic-ai, SciPy) loads with the command, not with the command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from physlab.errors import UserError

GROUPS = ("feedback", "persona", "expertise", "style", "model", "problem_id", "judge_model")


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
    import asyncio

    from physlab.strategies.scalar.rescore import rescore_file_name, rescore_run

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
    if by not in GROUPS:
        raise UserError(f"expected feedback|persona|expertise|style|model|problem_id, got {by!r}", field="--by")
    from physlab.strategies.scalar import analysis

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


def register(runs_app: typer.Typer) -> None:
    """Both SCALAR commands on the ``physlab runs`` app."""
    runs_app.command("rescore")(rescore_cmd)
    runs_app.command("scalar-report")(report_cmd)
