"""The lab's judgement per sweep group: does review bite with this model? From each finished lab
cell's record (metrics.json's ``details.judgement``, written by every lab run:
``physlab.lab.judgement``; read through the run package's reader), pooled over the group's runs
as the seed pools its 70 problems (§5: 234 critiques, 15 % on established results, 60 % of
those upheld, 37 % of output tokens on review against 36 % on the work). A table the bench report can print beside its accuracy; groups are the report's own
(strategy, what it ran as, model, config)."""

from __future__ import annotations

import statistics
from pathlib import Path

from pydantic import BaseModel, ValidationError

from physlab.bench.store import ResultsStore, cell_config
from physlab.errors import UserError
from physlab.lab.judgement import Judgement
from physlab.run.record import read_record


class JudgementRow(BaseModel):
    strategy: str
    model: str
    config: str = "-"
    ran_as: str | None = None
    runs: int = 0
    critiques: int = 0
    critiques_median: float | None = None
    on_established: int = 0
    share_on_established: float | None = None
    ruled: int = 0
    upheld: int = 0
    share_upheld: float | None = None
    needs_evidence: int = 0
    review_output_share: float | None = None
    work_output_share: float | None = None


def _read(workspace: str | None) -> Judgement | None:
    """The run's judgement as it recorded it; None for a run without one (another strategy, a run
    that never ended) or whose record cannot be read (the report goes on without it)."""
    if not workspace:
        return None
    try:
        record = read_record(Path(workspace))
    except UserError:
        return None
    raw = record.details.get("judgement") if record is not None else None
    try:
        return Judgement.model_validate(raw) if isinstance(raw, dict) else None
    except ValidationError:
        return None


def judgement_rows(store: ResultsStore) -> list[JudgementRow]:
    """One row per group of finished cells whose runs recorded their judgement (the lab's)."""
    groups: dict[tuple, list[Judgement]] = {}
    for cell in store.cells(state="done"):
        j = _read(cell.get("workspace"))
        if j is None:
            continue
        key = (cell["strategy"], cell.get("ran_as") or "", cell["model"], cell_config(cell))
        groups.setdefault(key, []).append(j)
    rows = []
    for (strategy, ran_as, model, config), js in sorted(groups.items()):
        raised, on_er = sum(j.critiques_raised for j in js), sum(j.on_established for j in js)
        ruled, upheld = sum(j.ruled for j in js), sum(j.upheld for j in js)
        out = sum(j.output_tokens for j in js)
        rows.append(JudgementRow(
            strategy=strategy, model=model, config=config, ran_as=ran_as or None, runs=len(js), critiques=raised,
            critiques_median=statistics.median(j.critiques_raised for j in js),
            on_established=on_er, share_on_established=on_er / raised if raised else None,
            ruled=ruled, upheld=upheld, share_upheld=upheld / ruled if ruled else None,
            needs_evidence=sum(j.needs_evidence for j in js),
            review_output_share=sum(j.review_output_tokens for j in js) / out if out else None,
            work_output_share=sum(j.work_output_tokens for j in js) / out if out else None))
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def judgement_table(store: ResultsStore) -> tuple[str, list[str], list[list[str]]]:
    """(title, header, rows) in the shape of the report's other tables."""
    header = ["group", "runs", "critiques (median/run)", "on ERs", "upheld", "needs evidence",
              "output on review", "output on work"]
    body = []
    for r in judgement_rows(store):
        label = "|".join([f"{r.strategy} (ran as {r.ran_as})" if r.ran_as else r.strategy, r.model]
                         + ([r.config] if r.config != "-" else []))
        body.append([label, str(r.runs), f"{r.critiques} ({r.critiques_median:g})",
                     f"{r.on_established} ({_pct(r.share_on_established)})", f"{r.upheld} of {r.ruled} "
                     f"({_pct(r.share_upheld)})", str(r.needs_evidence), _pct(r.review_output_share),
                     _pct(r.work_output_share)])
    return ("The lab's judgement (seed: 15% of critiques on ERs, 60% of those upheld, 37% of output on review)",
            header, body)
