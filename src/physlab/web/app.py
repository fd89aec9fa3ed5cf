"""The FastAPI app behind `physlab ui`: one :class:`~physlab.web.dashboard.Dashboard` (its runs
root, results database, token, timings) and the routes, each in the module named for what it serves.

Pages are rendered on the server (``render``, ``pages``); ``static/app.js`` only listens to
server-sent events (``live``) and swaps the re-rendered fragment in, and posts actions as JSON
(``actions``). Security: only run directories under the runs root are readable
(:mod:`physlab.run.discovery`, ``paths``); who may see or act is the ``guard``'s.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from physlab.web import actions, guard, live, pages
from physlab.web.actions import check_resume, default_resumer  # noqa: F401 - named here by callers and tests
from physlab.web.dashboard import Dashboard, Resumer

STATIC = Path(__file__).parent / "static"


def create_app(runs_dir: str | Path, *, db: str | Path | None = None, token: str | None = None,
               poll_s: float = 0.5, sse_max_s: float = 300.0, resumer: Resumer = default_resumer) -> FastAPI:
    board = Dashboard(root=Path(runs_dir).resolve(), db=Path(db) if db else None, token=token, resumer=resumer,
                      poll_s=poll_s, sse_max_s=sse_max_s)
    app = FastAPI(title="PhysLab", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.dashboard = board
    app.state.stopping = board.stopping  # BackgroundServer sets it to end the live streams
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    guard.install(app)
    app.include_router(actions.router)
    app.include_router(live.router)
    app.include_router(pages.router)
    return app
