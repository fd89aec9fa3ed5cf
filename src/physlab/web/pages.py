"""The dashboard's pages and the fragments its script swaps in (rendered on the server:
:mod:`physlab.web.render`), and its JSON API: the runs table, a run, its calls and files, the
Sweeps report."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, PlainTextResponse

from physlab.errors import UserError
from physlab.web import render, runs
from physlab.web.dashboard import dashboard, filters_of
from physlab.web.paths import read_text
from physlab.web.sweeps import CELL_PREFIX, report_data, sweeps_page

FILES = ("PROBLEM.md", "ANSWER.md", "answer.py", "RESEARCH_STATE.md", "LOG.md", "state.json", "metrics.json",
         "error.log")

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def index(request: Request) -> Any:
    return render.runs_page(dashboard(request).summaries())


@router.get("/fragments/runs", response_class=HTMLResponse)
def runs_fragment(request: Request) -> Any:
    return render.runs_table(dashboard(request).summaries())


@router.get("/fragments/runs/{run_id:path}", response_class=HTMLResponse)
def run_fragment(run_id: str, request: Request) -> Any:
    run, base = dashboard(request).run_or_404(run_id)
    return render.run_fragment(runs.detail(run_id, run, base))


@router.get("/runs/{run_id:path}", response_class=HTMLResponse)
def run_page(run_id: str, request: Request) -> Any:
    run, base = dashboard(request).run_or_404(run_id)
    name = f"sweep cell {run.parent.name}/{run.name}" if run_id.startswith(CELL_PREFIX) else None
    return render.run_page(run_id, runs.detail(run_id, run, base), name)


@router.get("/sweeps", response_class=HTMLResponse)
def sweeps(request: Request) -> Any:
    board = dashboard(request)
    try:
        return sweeps_page(board.db, filters_of(request), board.root)
    except UserError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/api/runs")
def api_runs(request: Request) -> Any:
    return dashboard(request).summaries()


@router.get("/api/sweeps")
def api_sweeps(request: Request) -> Any:
    db = dashboard(request).db
    if db is None:
        raise HTTPException(404, "no results database (physlab ui --db FILE)")
    try:
        data = report_data(db, filters_of(request))
    except UserError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"report": data["report"].model_dump(mode="json"), "rows": data["rows"], "choices": data["choices"]}


@router.get("/api/runs/{run_id:path}/calls/{n}")
def api_call(run_id: str, n: int, request: Request) -> Any:
    calls = runs.load_calls(*dashboard(request).run_or_404(run_id))
    if not 0 <= n < len(calls):
        raise HTTPException(404, "no such call")
    return calls[n].model_dump(mode="json")


@router.get("/api/runs/{run_id:path}/files/{name}")
def api_file(run_id: str, name: str, request: Request) -> Any:
    run, base = dashboard(request).run_or_404(run_id)
    if name not in FILES:
        raise HTTPException(404, "not a run file")
    text = read_text(run, base, name)
    if text is None:
        raise HTTPException(404, "no such file")
    return PlainTextResponse(text)


# Last: its path takes any run id, so the routes under a run's path above are matched first.
@router.get("/api/runs/{run_id:path}")
def api_run(run_id: str, request: Request) -> Any:
    run, base = dashboard(request).run_or_404(run_id)
    d = runs.detail(run_id, run, base)
    return {"summary": d["summary"], "state": d["state"].model_dump(mode="json") if d["state"] else None,
            "metrics": d["metrics"], "history": d["history"],
            "usage_by_role": {k: v.model_dump() for k, v in d["usage"].items()},
            "inbox": d["inbox"], "calls": len(d["calls"])}
