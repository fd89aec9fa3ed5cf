"""The lab's judgement per sweep group: does review bite with this model? From each finished lab
cell's metrics.json (``details.judgement``, written by every lab run: ``physlab.lab.judgement``),
pooled over the group's runs as the seed pools its 70 problems (§5: 234 critiques, 15 % on
established results, 60 % of those upheld, 37 % of output tokens on review against 36 % on the
work). A table the bench report can print beside its accuracy; groups are the report's own
(strategy, what it ran as, model, config)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from physlab.bench.store import ResultsStore, cell_config


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


def _read(workspace: str | None) -> dict[str, Any] | None:
    if not workspace:
        return None
    try:
        data = json.loads((Path(workspace) / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    j = (data.get("details") or {}).get("judgement") if isinstance(data, dict) else None
    return j if isinstance(j, dict) else None


def judgement_rows(store: ResultsStore) -> list[JudgementRow]:
    """One row per group of finished cells whose runs recorded their judgement (the lab's)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for cell in store.cells("state = 'done'"):
        j = _read(cell.get("workspace"))
        if j is None:
            continue
        key = (cell["strategy"], cell.get("ran_as") or "", cell["model"], cell_config(cell))
        groups.setdefault(key, []).append(j)
    rows = []
    for (strategy, ran_as, model, config), js in sorted(groups.items()):
        def total(name: str) -> int:
            return sum(int(j.get(name) or 0) for j in js)

        raised, on_er, ruled, upheld = total("critiques_raised"), total("on_established"), total("ruled"), total("upheld")
        out = total("output_tokens")
        rows.append(JudgementRow(
            strategy=strategy, model=model, config=config, ran_as=ran_as or None, runs=len(js), critiques=raised,
            critiques_median=statistics.median(int(j.get("critiques_raised") or 0) for j in js),
            on_established=on_er, share_on_established=on_er / raised if raised else None,
            ruled=ruled, upheld=upheld, share_upheld=upheld / ruled if ruled else None,
            needs_evidence=total("needs_evidence"),
            review_output_share=total("review_output_tokens") / out if out else None,
            work_output_share=total("work_output_tokens") / out if out else None))
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
