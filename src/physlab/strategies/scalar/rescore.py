"""Re-score a stored SCALAR transcript with another Judge (``physlab runs rescore DIR --judge M``,
the command in ``physlab.cli.scalar``).

The Actor and the Critic are not re-run and the original stopping decisions stand; each stored
turn is scored again by the new Judge, which decides Eq(A, R) again itself (seed 003, Appendix D,
'Re-scoring protocol'): it reads the reference solution as the first Judge did, so a run whose
Judge had one needs the problem again (``--problem``; the transcript never holds the reference).
The grader's stored verdict goes beside each new verdict, as in the run. The result goes to
``scalar_rescore_<judge>.json`` beside the transcript, and the new Judge's requests to
``scalar_rescore_<judge>.calls.jsonl`` (the run's own calls.jsonl is left untouched).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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
