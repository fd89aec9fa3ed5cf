"""The sweeps page: the bench report (physlab.bench.report) over a filtered view of the results DB."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from physlab.bench.report import build_report, summary_rows
from physlab.bench.store import ResultsStore
from physlab.web import svg
from physlab.web.render import page

FILTERS = ("strategy", "model", "suite")


class FilteredStore:
    """Adapter: the two read methods build_report uses, restricted to the chosen cells."""

    def __init__(self, store: ResultsStore, filters: dict[str, str]):
        self.store, self.path = store, store.path
        self.filters = {k: v for k, v in filters.items() if k in FILTERS and v}

    def cells(self) -> list[dict[str, Any]]:
        where = " AND ".join(f"{k} = ?" for k in self.filters) or "1=1"   # keys from FILTERS only
        return self.store.cells(where, tuple(self.filters.values()))

    def roles(self) -> list[dict[str, Any]]:
        keys = {c["key"] for c in self.cells()}
        return [r for r in self.store.roles() if r["cell_key"] in keys]


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
        return page("Sweeps", "<h1>Sweeps</h1><p class='muted'>No results database: start with "
                    "<code>physlab ui --db results.sqlite</code>.</p>")
    data = report_data(db, filters)
    selects = []
    for k in FILTERS:
        opts = ['<option value="">all</option>'] + [
            f'<option value="{escape(v)}"{" selected" if filters.get(k) == v else ""}>{escape(v or "(none)")}</option>'
            for v in data["choices"][k]]
        selects.append(f'<label>{k} <select name="{k}" id="filter-{k}">{"".join(opts)}</select></label>')
    form = f'<form id="filters" method="get" action="/sweeps">{" ".join(selects)} <button>filter</button></form>'
    rows = data["rows"]
    if rows:
        cols = list(rows[0])
        table = ('<table id="summary-table"><thead><tr>' + "".join(f"<th>{escape(c)}</th>" for c in cols)
                 + "</tr></thead><tbody>"
                 + "".join("<tr>" + "".join(f"<td>{escape(r.get(c, ''))}</td>" for c in cols) + "</tr>" for r in rows)
                 + "</tbody></table>")
    else:
        table = '<p class="muted" id="summary-table">no cells match</p>'
    rep = data["report"]
    eq = (f"<p>Equal-budget view: every cell capped at {rep.equal_budget_tokens:,.0f} tokens per problem.</p>"
          if rep.equal_budget_tokens else "")
    body = (f"<h1>Sweeps</h1><p class='muted'>{escape(db.name)} · {rep.cells_total} cells</p>{form}"
            f"<h2>Summary</h2>{table}<h2>Accuracy (Wilson 95%)</h2>{svg.accuracy_bars(rep.groups)}"
            f"<h2>Accuracy at a common token budget</h2>{eq}{svg.budget_curves(rep.budget_curves)}")
    return page("Sweeps", body)
