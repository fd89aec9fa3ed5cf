"""Run summaries and details for the dashboard, read through the lab's and the LLM seam's own
models (ResearchState, CallRecord, Usage, the inbox reader, the run workspace's git)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from physlab.lab import inbox
from physlab.lab.state.models import ResearchState
from physlab.run.git import RunRepo
from physlab.run.lock import LOCK, lock_holder
from physlab.llm.usage import CallRecord, Usage
from physlab.web.paths import _inside, read_text, run_file

WATCHED = ("state.json", "calls.jsonl", "metrics.json", "inbox.jsonl", "ANSWER.md", "answer.py")
_ITER = re.compile(r"^iteration (\d+)\b")


def load_state(run: Path, root: Path) -> ResearchState | None:
    raw = read_text(run, root, "state.json")
    if raw is None:
        return None
    try:
        return ResearchState.model_validate_json(raw)
    except Exception:  # noqa: BLE001 - a half-written or damaged state shows as "unreadable"
        return None


def load_metrics(run: Path, root: Path) -> dict[str, Any]:
    raw = read_text(run, root, "metrics.json")
    try:
        data = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def load_calls(run: Path, root: Path) -> list[CallRecord]:
    raw = read_text(run, root, "calls.jsonl", limit=50_000_000) or ""
    out = []
    for line in raw.splitlines():
        try:
            out.append(CallRecord.model_validate_json(line))
        except Exception:  # noqa: BLE001 - a torn last line while the run writes
            continue
    return out


def usage_by_role(calls: list[CallRecord]) -> dict[str, Usage]:
    per: dict[str, Usage] = {}
    for c in calls:
        per[c.role] = per.get(c.role, Usage()).add(c.usage())
    return per


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


def summary(run_id: str, run: Path, root: Path) -> dict[str, Any]:
    """One line of the runs table (and of `physlab runs list`). A finished run's totals come from
    its metrics.json; calls.jsonl is read only while a run has none."""
    state = load_state(run, root)
    metrics = load_metrics(run, root)
    totals = metrics.get("totals") if isinstance(metrics.get("totals"), dict) else None
    calls = load_calls(run, root) if totals is None else []
    total = Usage()
    for u in usage_by_role(calls).values():
        total = total.add(u)
    lab = state.status if state is not None else None
    if lock_holder(run):  # a process runs it now (metrics.json, if any, is an earlier session's)
        # (a resume that has not committed its first iteration yet still shows the state it left)
        status = "resuming" if lab in ("paused", "stopped") else "running"
    elif lab == "running" or not metrics and lab is None:
        status = "interrupted"  # nobody runs it and it never finished: killed, or its machine went down
    elif lab in ("paused", "stopped") and not metrics:
        status = lab
    else:
        status = metrics.get("status") or lab
    verdict = (metrics.get("verdict") or {}).get("verdict") if isinstance(metrics.get("verdict"), dict) else None
    if totals is not None:
        tokens, cost = totals.get("total_tokens", 0), totals.get("cost_usd", 0.0)
        n_calls = totals.get("calls", 0) + metrics.get("failed_requests", 0)
    else:
        tokens = (metrics.get("input_tokens", 0) + metrics.get("output_tokens", 0) if "input_tokens" in metrics
                  else total.total_tokens)
        cost, n_calls = metrics.get("cost_usd", total.cost_usd), len(calls)
    return {
        "id": run_id,
        "status": status,
        "lab_status": state.status if state else None,
        "problem": metrics.get("problem_id") or (state.problem_id if state else "") or "",
        "strategy": metrics.get("strategy") or ("lab" if state is not None else ""),
        "model": metrics.get("model") or (calls[0].model if calls else ""),
        "iteration": state.iteration if state else None,
        "verdict": verdict,
        "tokens": tokens,
        "cost_usd": cost,
        "calls": n_calls,
        "finished": bool(metrics),
        "ran_as": metrics.get("ran_as"),  # what a cap turned the strategy into
        "reference_conditioned": bool(metrics.get("reference_conditioned")),  # a role saw the answer key
        "api_base": metrics.get("api_base"),
        "talk": talk_state(state, status),
    }


def talk_state(state: ResearchState | None, status: str) -> str | None:
    """What the physicist can do with a run: ``running`` (messages are taken in at the next
    iteration boundary; pause, stop), ``paused`` (paused or interrupted: messages wait for a resume;
    stop, resume), ``ended`` (messages reopen it at a resume; resume); None: not a lab run, it
    takes no messages."""
    if state is None:
        return None
    if status in ("running", "resuming"):
        return "running"
    return "paused" if status in ("paused", "interrupted") else "ended"


def history(run: Path, root: Path) -> list[dict[str, Any]]:
    """The run's commits, oldest first: iteration, unix time, subject."""
    if not (run / ".git").exists() or not _inside(run / ".git", root):
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


def failure(metrics: dict[str, Any], state: ResearchState | None, calls: list[CallRecord],
            error_log: str | None) -> dict[str, Any] | None:
    """Why a run ended without an answer, as its files tell it: its status and stop reason, the
    error, the role whose model call failed (or that was at work when the strategy raised), the
    last line of the traceback in error.log, and the lab's role failures. None for a run that is
    going or produced an answer."""
    details = metrics.get("details") if isinstance(metrics.get("details"), dict) else {}
    status = metrics.get("status")
    if status not in ("error", "no_answer"):  # (an error.log a later session recovered from stays quiet)
        return None
    failed = [c for c in calls if c.error]
    role = failed[-1].role if failed else (calls[-1].role if calls else None)
    last_line = next((line for line in reversed((error_log or "").splitlines()) if line.strip()), None)
    role_failures = [e.text for e in state.events if e.kind == "role_failed"][-5:] if state else []
    return {"status": status, "stop_reason": metrics.get("stop_reason"), "error": details.get("error"),
            "role": role, "role_call_failed": bool(failed), "exception": last_line, "error_log": error_log,
            "role_failures": role_failures}


def detail(run_id: str, run: Path, root: Path) -> dict[str, Any]:
    calls = load_calls(run, root)
    metrics = load_metrics(run, root)
    state = load_state(run, root)
    error_log = read_text(run, root, "error.log", 200_000)
    return {
        "summary": summary(run_id, run, root),
        "state": state,
        "metrics": metrics,
        "failure": failure(metrics, state, calls, error_log),
        "calls": calls,
        "usage": usage_by_role(calls),
        "history": history(run, root),
        "answer_md": read_text(run, root, "ANSWER.md", 200_000),
        "answer_py": read_text(run, root, "answer.py", 200_000),
        "problem_md": read_text(run, root, "PROBLEM.md", 200_000),
        "inbox": inbox.read(run) if run_file(run, root, inbox.INBOX) else [],
    }
