"""The sweeps page: the bench report (physlab.bench.report) over a filtered view of the results DB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from physlab.bench.report import build_report, group_label, summary_rows
from physlab.bench.store import ResultsStore
from physlab.web import svg
from physlab.web.render import page

FILTERS = ("strategy", "model", "suite")


class FilteredStore:
    """Adapter: the read methods build_report uses, restricted to the chosen cells."""

    def __init__(self, store: ResultsStore, filters: dict[str, str]):
        self.store, self.path = store, store.path
        self.filters = {k: v for k, v in filters.items() if k in FILTERS and v}

    def cells(self) -> list[dict[str, Any]]:
        where = " AND ".join(f"{k} = ?" for k in self.filters) or "1=1"   # keys from FILTERS only
        return self.store.cells(where, tuple(self.filters.values()))

    def roles(self) -> list[dict[str, Any]]:
        keys = {c["key"] for c in self.cells()}
        return [r for r in self.store.roles() if r["cell_key"] in keys]

    def checkpoints(self) -> list[dict[str, Any]]:
        keys = {c["key"] for c in self.cells()}
        return [r for r in self.store.checkpoints() if r["cell_key"] in keys]


def choices(store: ResultsStore) -> dict[str, list[str]]:
    return {k: [r[0] for r in store.conn.execute(f"SELECT DISTINCT {k} FROM cells ORDER BY {k}")] for k in FILTERS}


def report_data(db: Path, filters: dict[str, str]) -> dict[str, Any]:
    store = ResultsStore(db, create=False)
    try:
        rep = build_report(FilteredStore(store, filters))  # type: ignore[arg-type]
        return {"report": rep, "rows": summary_rows(rep), "choices": choices(store)}
    finally:
        store.close()


def sweeps_page(db: Path | None, filters: dict[str, str]) -> str:
    if db is None:
        return page("sweeps.html", "Sweeps", db=None)
    data = report_data(db, filters)
    rep = data["report"]
    rows = data["rows"]  # one per group; reference-conditioned groups are shown apart, never ranked with solvers
    solver = [not g.reference_conditioned for g in rep.groups]
    solver_labels = {group_label(g) for g in rep.solvers}
    return page("sweeps.html", "Sweeps", db=db, filters=filters, choices=data["choices"], rows=rows, report=rep,
                solver_rows=[r for r, ok in zip(rows, solver) if ok],
                reference_rows=[r for r, ok in zip(rows, solver) if not ok],
                accuracy=svg.accuracy_bars(rep.solvers),
                curves=svg.budget_curves({k: v for k, v in rep.token_curves().items() if k in solver_labels}))
