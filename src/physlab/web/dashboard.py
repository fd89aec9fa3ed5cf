"""What every route of the dashboard shares: its runs root, results database, token and timings
(:class:`Dashboard`, one per app, kept in ``app.state``), and the lookups the routes make with them
(a run id to its directory, the runs table, the Sweeps filters of a request)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import HTTPException, Request

from physlab.run.discovery import NotFound, discover, resolve_run
from physlab.run.lock import RunLock
from physlab.web import runs
from physlab.web.sweeps import CELL_PREFIX, FILTERS, cell_workspace

# Starts the detached `physlab solve --resume` of a run: (run, its summary, problem spec, lock) -> what it says.
Resumer = Callable[[Path, dict[str, Any], str, RunLock], str]


@dataclass
class Dashboard:
    """One dashboard's settings (``physlab ui``'s flags)."""

    root: Path
    db: Path | None
    token: str | None
    resumer: Resumer
    poll_s: float = 0.5
    sse_max_s: float = 300.0
    stopping: threading.Event = field(default_factory=threading.Event)  # set: the live streams end

    def run_or_404(self, run_id: str) -> tuple[Path, Path]:
        """(the run directory, the directory its files must stay in): a run under the runs root,
        or a sweep cell's workspace (``~cell/N``, N its row in the results database), confined to
        itself."""
        try:
            if run_id.startswith(CELL_PREFIX) and self.db is not None:
                cell = cell_workspace(self.db, run_id[len(CELL_PREFIX):])
                if cell is None:
                    raise NotFound(run_id)
                return cell, cell
            return resolve_run(self.root, run_id), self.root
        except NotFound:
            raise HTTPException(404, "no such run") from None

    def summaries(self) -> list[dict[str, Any]]:
        """The runs table: one summary per run under the root."""
        out = []
        for rid in discover(self.root):
            try:
                out.append(runs.summary(rid, resolve_run(self.root, rid), self.root))
            except NotFound:
                continue
        return out


def dashboard(request: Request) -> Dashboard:
    """The dashboard a request came to."""
    found: Dashboard = request.app.state.dashboard
    return found


def filters_of(request: Request) -> dict[str, str]:
    """The Sweeps page's filters a request names (only the known ones)."""
    return {k: request.query_params.get(k, "") for k in FILTERS if request.query_params.get(k)}
