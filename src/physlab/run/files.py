"""A run's directory: the names of its files, a whole file replaced at once, and a JSON file read
back without following a link out of the directory.

A run directory holds (DESIGN.md's contract; names are only ever added): ``PROBLEM.md``,
``ANSWER.md``, ``answer.py`` (or ``DRAFT_ANSWER.md``/``draft_answer.py`` when the run ended
without an answer), ``calls.jsonl`` (one line per model request), ``judge_calls.jsonl`` (a judge
model's requests, ``--judge``: counted apart), ``metrics.json`` (the run's
record: :mod:`physlab.run.record`), ``run.json`` (the options and problem of the session that
started last), ``state.json`` for a strategy that keeps a resumable state (the lab), ``error.log``
(a strategy's traceback), ``resume.log`` (what a resume started from the dashboard printed),
``.physlab.lock`` (who runs it now: :mod:`physlab.run.lock`) and, for the lab, a git history.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic_core

from physlab.errors import UserError, naming_the_file

PROBLEM = "PROBLEM.md"
CALLS = "calls.jsonl"
JUDGE_CALLS = "judge_calls.jsonl"  # a judge model's requests (--judge): apart from the run's own
METRICS = "metrics.json"
OPTIONS = "run.json"
STATE = "state.json"
# Whose state.json is (DESIGN.md's workspace contract): names the strategy of a run made before
# runs recorded their options, when its state is all it left.
STATE_OF = "lab"
ERROR_LOG = "error.log"
RESUME_LOG = "resume.log"
# Any one of these makes a directory a run's (the dashboard lists it; --replace may delete it).
MARKERS = (STATE, METRICS, CALLS, OPTIONS)


def is_run_dir(path: Path) -> bool:
    """A directory a run made, not any directory a typo names."""
    return path.is_dir() and any((path / m).is_file() for m in (*MARKERS, PROBLEM))


def check_run_dir(path: Path, field: str = "--resume") -> None:
    """One line (a ``UserError``) when ``path`` is not a run's directory: a typo or a folder of
    something else is said first, before anything a resume would ask for (its model, its problem)."""
    if not path.exists():
        raise UserError("no such run directory", path=path, field=field)
    if not is_run_dir(path):
        what = "a file" if not path.is_dir() else f"it holds none of {', '.join((OPTIONS, METRICS, STATE, CALLS, PROBLEM))}"
        raise UserError(f"not a run directory ({what})", path=path, field=field)


def default_workspace(problem_id: str, strategy: str, root: Path | str = "runs") -> Path:
    """``runs/<UTC time>-<problem>-<strategy>``: a new run's directory when none is given."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{problem_id}-{strategy}")
    return Path(root) / f"{stamp}-{safe}"


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8) in one step: whoever reads it meanwhile (the
    dashboard, a resume) sees the old file or the new one, and a kill mid-write leaves the old one."""
    tmp = path.with_name(path.name + ".tmp")
    with naming_the_file(tmp):
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    os.replace(tmp, path)


def read_bytes(path: Path, limit: int = 50_000_000) -> bytes | None:
    """A run file's bytes (at most ``limit``), None when it is missing, not a regular file, or a
    link: a run writes its files itself, so a link in their place was put there by someone else
    and is not followed (the dashboard must never be shown a file from outside its runs)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = 50_000_000) -> str | None:
    raw = read_bytes(path, limit)
    return None if raw is None else raw.decode("utf-8", errors="replace")


def read_json(path: Path) -> dict[str, Any]:
    """A run's JSON object file read leniently (state.json, run.json for display): {} when it is
    missing, damaged or not an object. metrics.json has its own reader with a stricter policy
    (:func:`physlab.run.record.read_record`)."""
    raw = read_bytes(path)
    if raw is None:
        return {}
    try:
        data = pydantic_core.from_json(raw)  # damaged, or nested deeper than its parser goes: a ValueError
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
