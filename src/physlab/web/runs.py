"""Run summaries and details for the dashboard, read the one way every reader reads a run
(:mod:`physlab.run.summary`, :mod:`physlab.run.record`, :mod:`physlab.run.status`), with the lab's
own models on top (ResearchState, the inbox reader, the run's git history)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from physlab.lab import inbox
from physlab.lab.state.models import ResearchState
from physlab.llm.usage import CallRecord
from physlab.run.discovery import inside
from physlab.run.files import CALLS, METRICS, OPTIONS, RESUME_LOG, STATE
from physlab.run.git import RunRepo
from physlab.run.lock import LOCK
from physlab.run.status import RunFiles, read_run
from physlab.run.summary import RunSummary, listed, read_calls, summarize, usage_by_role
from physlab.web.paths import read_text, run_file

WATCHED = (STATE, CALLS, METRICS, OPTIONS, "inbox.jsonl", "ANSWER.md", "answer.py", RESUME_LOG)
_ITER = re.compile(r"^iteration (\d+)\b")

__all__ = ["detail", "failure", "history", "load_calls", "load_state", "signature", "summary",
           "usage_by_role"]


def load_state(run: Path, root: Path) -> ResearchState | None:
    raw = read_text(run, root, STATE)
    if raw is None:
        return None
    try:
        return ResearchState.model_validate_json(raw)
    except Exception:  # noqa: BLE001 - a half-written or damaged state shows as "unreadable"
        return None


def load_calls(run: Path, root: Path) -> list[CallRecord]:
    """The run's calls (a damaged calls.jsonl: none; the run's summary says why)."""
    if run_file(run, root, CALLS) is None:
        return []
    try:
        return read_calls(run, bodies=True)
    except Exception:  # noqa: BLE001 - the page still shows the rest of the run
        return []


def signature(run: Path) -> tuple:
    """Changes whenever the run writes something the page shows (mtimes and sizes)."""
    sig = []
    for name in (*WATCHED, LOCK, ".git/HEAD", ".git/refs/heads/main"):  # (the lock: who runs it)
        try:
            st = (run / name).stat()
            sig.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            sig.append((name, 0, 0))
    return tuple(sig)


def row(run_id: str, s: RunSummary, state: ResearchState | None, lab_status: str | None) -> dict[str, Any]:
    """One line of the runs table (and of `physlab runs list`)."""
    return listed(run_id, s, lab_status, s.keeps_state or state is not None)


def summary(run_id: str, run: Path, root: Path, files: RunFiles | None = None) -> dict[str, Any]:
    """One line of the runs table (and of `physlab runs list`): :func:`physlab.run.summary.summarize`."""
    files = files or read_run(run)
    return listed(run_id, summarize(run, files), files.state_status)


def history(run: Path, root: Path) -> list[dict[str, Any]]:
    """The run's commits, oldest first: iteration, unix time, subject."""
    if not (run / ".git").exists() or not inside(run / ".git", root):
        return []
    out = RunRepo(run).git("log", "--reverse", "--format=%H%x09%ct%x09%s", check=False)
    rows = []
    for line in out.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3:
            continue
        m = _ITER.match(parts[2])
        rows.append({"sha": parts[0][:10], "time": int(parts[1]), "subject": parts[2],
                     "iteration": int(m.group(1)) if m else None})
    return rows


def failure(files: RunFiles, status: str, state: ResearchState | None, calls: list[CallRecord],
            error_log: str | None) -> dict[str, Any] | None:
    """Why a run ended without an answer, as its files tell it: its status and stop reason, the
    error, the role whose model call failed (or that was at work when the strategy raised), the
    last line of the traceback in error.log, and the lab's role failures. None for a run that is
    going or produced an answer."""
    record = files.record
    # (an error.log a later session recovered from stays quiet)
    if status not in ("error", "no_answer") or record is None:
        return None
    failed = [c for c in calls if c.error]
    role = failed[-1].role if failed else (calls[-1].role if calls else None)
    last_line = next((line for line in reversed((error_log or "").splitlines()) if line.strip()), None)
    role_failures = [e.text for e in state.events if e.kind == "role_failed"][-5:] if state else []
    return {"status": status, "stop_reason": record.stop_reason, "error": record.error, "role": role,
            "role_call_failed": bool(failed), "exception": last_line, "error_log": error_log,
            "role_failures": role_failures}


def detail(run_id: str, run: Path, root: Path) -> dict[str, Any]:
    files = read_run(run)
    calls = load_calls(run, root)
    state = load_state(run, root)
    s = summarize(run, files)
    error_log = read_text(run, root, "error.log", 200_000)
    record = files.record
    return {
        "summary": row(run_id, s, state, state.status if state else files.state_status),
        "state": state,
        "metrics": record.model_dump(mode="json") if record is not None else {},
        "record": record,
        "failure": failure(files, s.status, state, calls, error_log),
        "calls": calls,
        "usage": usage_by_role(calls),
        "history": history(run, root),
        "answer_md": read_text(run, root, "ANSWER.md", 200_000),
        "answer_py": read_text(run, root, "answer.py", 200_000),
        "problem_md": read_text(run, root, "PROBLEM.md", 200_000),
        "resume_log": read_text(run, root, RESUME_LOG, 200_000),
        "inbox": inbox.read(run) if run_file(run, root, inbox.INBOX) else [],
    }
