"""The sweeps page: the bench report (physlab.bench.report) over a filtered view of the results DB,
and every cell of it, each opening as a run page: under the runs root by its own id, elsewhere (the
default ``<db stem>_runs/`` beside the database) as ``~cell/N``, N its row in the database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from physlab.bench.report import FILTERS, apart_title, build_report, group_label, matrix_tables, summary_rows
from physlab.bench.report_render import (
    apart_note,
    comparison_table,
    comparisons_note,
    group_table,
    interval_note,
)
from physlab.bench.store import ResultsStore
from physlab.run.discovery import NotFound, resolve_run
from physlab.run.files import is_run_dir
from physlab.web import svg
from physlab.web.render import page

CELL_PREFIX = "~cell/"  # (PhysLab names no run directory "~cell", so no run under the root is hidden)


def choices(store: ResultsStore) -> dict[str, list[str]]:
    return store.distinct(FILTERS)


def report_data(db: Path, filters: dict[str, str]) -> dict[str, Any]:
    """The report of the cells the filters keep: `bench report`'s own computation (build_report on
    the database), so the page and the command show one set of numbers."""
    store = ResultsStore(db, create=False)
    try:
        rep = build_report(store, filters=filters)
        return {"report": rep, "rows": summary_rows(rep), "choices": choices(store)}
    finally:
        store.close()


def _workspace(db: Path, recorded: str | None) -> Path | None:
    """A cell's workspace as the database recorded it (absolute, or relative to where the sweep
    ran: tried from here, then beside the database), when it is a run directory."""
    if not recorded:
        return None
    path = Path(recorded)
    for candidate in ([path] if path.is_absolute() else [path, db.resolve().parent / path]):
        if is_run_dir(candidate):
            return candidate.resolve()
    return None


def cell_workspace(db: Path, n: str) -> Path | None:
    """The workspace of cell ``n`` (its row number in the results database), or None."""
    if not n.isdigit():
        return None
    store = ResultsStore(db, create=False)
    try:
        recorded = store.cell_workspace(int(n))
    finally:
        store.close()
    return _workspace(db, recorded)


def cell_rows(store: ResultsStore, filters: dict[str, str], root: Path) -> list[dict[str, Any]]:
    """Every cell the filters keep, with the run id its page has (None: no workspace yet)."""
    out = []
    for row in store.cell_listing({k: v for k, v in filters.items() if k in FILTERS and v}):
        ws = _workspace(store.path, row.pop("workspace"))
        row["run_id"] = None if ws is None else _run_id(ws, root) or f"{CELL_PREFIX}{row['n']}"
        out.append(row)
    return out


def _run_id(ws: Path, root: Path) -> str | None:
    """The cell's id under the runs root, when the dashboard lists it there."""
    try:
        rid = ws.relative_to(root.resolve()).as_posix()
        return rid if resolve_run(root, rid) == ws else None
    except (ValueError, NotFound):
        return None


def sweeps_page(db: Path | None, filters: dict[str, str], root: Path) -> str:
    if db is None:
        return page("sweeps.html", "Sweeps", db=None)
    data = report_data(db, filters)
    rep = data["report"]
    rows = data["rows"]  # one per group, every CSV column: folded away under the main table
    solver = [g.solver for g in rep.groups]  # oracles (tpbench-bon) and reference-conditioned runs apart
    solver_labels = {group_label(g) for g in rep.solvers}
    store = ResultsStore(db, create=False)
    try:
        cells = cell_rows(store, filters, root)
    finally:
        store.close()
    apart = rep.reference_conditioned
    return page("sweeps.html", "Sweeps", db=db, filters=filters, choices=data["choices"], report=rep,
                main=group_table(rep, rep.solvers) if rep.solvers else None, interval_note=interval_note(rep),
                apart=group_table(rep, apart, judge=any(g.judge_checks for g in apart)) if apart else None,
                columns=list(rows[0]) if rows else [],
                solver_rows=[r for r, ok in zip(rows, solver) if ok],
                reference_rows=[r for r, ok in zip(rows, solver) if not ok],
                accuracy=svg.accuracy_bars(rep.solvers),
                curves=svg.budget_curves({k: v for k, v in rep.token_curves().items() if k in solver_labels}),
                comparisons=comparison_table(rep) if rep.comparisons else None,
                comparisons_note=comparisons_note(rep), matrices=matrix_tables(rep), cells=cells,
                apart_title=apart_title(), apart_note=apart_note(),
                lost=rep.lost, on_ray=any(c["node"] for c in cells))
