"""A run's status, from its files: the one function every reader asks (`solve`'s record, `runs list`,
`runs show`, the dashboard, a resume), so that a run has one status wherever it is shown.

What the files say, in order:
- a process holds the run's lock: it is ``running`` (``resuming`` while a resume of a paused or
  stopped run has not yet moved its state on);
- the session that started last (run.json) wrote its record (metrics.json's ``started_at`` is
  run.json's) and the strategy's state is the one it ended with (a rewind changes it): the
  record's status (``complete``, ``partially_complete``, ``no_answer``, ``paused``, ``error``);
- otherwise that session never ended (killed, or its machine went down): ``paused`` or
  ``stopped`` when the strategy's own state says so, else ``interrupted``.
A run made before run.json existed is read the way it always was: its state says ``running`` or it
has no record: interrupted; else the record's status. A record that cannot be read: ``damaged``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic_core

from physlab.run.files import STATE, read_bytes
from physlab.run.lock import lock_holder
from physlab.run.record import DamagedRun, RunRecord, RunStart, digest, read_record, read_start

RunStatus = Literal["running", "resuming", "complete", "partially_complete", "no_answer", "paused", "error",
                    "stopped", "interrupted", "damaged"]
ENDED_STATUSES = ("complete", "partially_complete", "no_answer", "error")


@dataclass
class RunFiles:
    """What a run's files say, read once: its record (None: none yet), the start of its last
    session, the keys of a strategy's state.json that the run reads (status, problem_id,
    iteration), the pid holding its lock, and the line saying why a file is damaged."""

    path: Path
    record: RunRecord | None = None
    start: RunStart | None = None
    state: dict[str, Any] | None = None
    holder: int | None = None
    damaged: str | None = None

    state_digest: str | None = None

    @property
    def finished(self) -> bool:
        """The session that started last ended and wrote the record, and the strategy's state is
        still the one it ended with (not rewound, not moved on by a later session)."""
        if self.record is None:
            return False
        if self.start is None or self.record.state_digest is None and self.state is not None:
            return (self.state or {}).get("status") != "running"  # a run from before run.json
        return self.record.started_at == self.start.started_at and self.record.state_digest == self.state_digest

    @property
    def state_status(self) -> str | None:
        status = (self.state or {}).get("status")
        return status if isinstance(status, str) else None


def read_run(ws: str | Path, *, strict: bool = False, answer: bool = False) -> RunFiles:
    """A run's files. ``strict``: a damaged record or run.json raises DamagedRun (one line, exit 2)
    instead of being noted in ``damaged`` (a listing shows the run and goes on)."""
    path = Path(ws)
    files = RunFiles(path)
    try:
        files.record = read_record(path, answer=answer)
        files.start = read_start(path)
    except DamagedRun as exc:
        if strict:
            raise
        files.damaged = str(exc)
    raw_state = read_bytes(path / STATE)
    files.state, files.state_digest = read_state(raw_state), digest(raw_state)
    files.holder = lock_holder(path)
    return files


def read_state(raw: bytes | None) -> dict[str, Any] | None:
    """state.json's object, leniently (None: none; {} when it does not read: a state being written
    is never torn -- it is replaced whole -- so this is a damaged one, and the strategy says so)."""
    if raw is None:
        return None
    try:
        data = pydantic_core.from_json(raw)  # a depth limit of its own: a hostile file is a ValueError
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def status_of(files: RunFiles) -> RunStatus:
    """The run's status from what its files say (see the module's docstring)."""
    state = files.state_status
    if files.holder:
        return "resuming" if state in ("paused", "stopped") else "running"
    if files.damaged:
        return "damaged"
    if files.finished:
        assert files.record is not None
        return files.record.status
    if state == "paused":
        return "paused"
    if state == "stopped":
        return "stopped"
    return "interrupted"


def run_status(ws: str | Path) -> RunStatus:
    """The status of the run in ``ws`` (``damaged`` when its record cannot be read)."""
    return status_of(read_run(ws))
