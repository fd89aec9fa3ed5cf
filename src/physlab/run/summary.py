"""A run in one line: what `runs list`, the dashboard's table and `runs show` say of any run (its
problem, strategy, model, status, verdict, tokens and cost), read the one way (:mod:`.record`,
:mod:`.status`), and its usage per role from calls.jsonl. :func:`list_runs` is the table of every
run under a runs root, as `runs list` prints it and the dashboard shows it.

A finished session's totals come from its record; a run that is going (or never ended) is counted
from calls.jsonl. A listing shows a damaged run as ``damaged`` with the line saying why.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from physlab.errors import UserError
from physlab.llm.usage import CallRecord, Usage
from physlab.run.discovery import NotFound, discover, resolve_run
from physlab.run.files import CALLS, STATE_OF, read_text
from physlab.run.status import RunFiles, RunStatus, read_run, status_of


def read_calls(ws: Path, *, bodies: bool = False) -> list[CallRecord]:
    """calls.jsonl ([] when there is none); a line cut short by a kill is skipped, any other line
    that is not a call record is one UserError line naming the file and the line."""
    from physlab.llm.meter import read_calls as read_file

    path = Path(ws) / CALLS
    if not path.is_file() or path.is_symlink():
        return []
    return read_file(path, bodies=bodies)


def usage_by_role(calls: Iterable[CallRecord]) -> dict[str, Usage]:
    """Calls, tokens and cost per role: a failed request is no call, but its tokens count."""
    per: dict[str, Usage] = {}
    for c in calls:
        per[c.role] = per.get(c.role, Usage()).add(c.usage())
    return per


class AnswerFiles(BaseModel):
    """The run's final answer as written (ANSWER.md, answer.py), or what a run that ended without
    one left behind (DRAFT_ANSWER.md, draft_answer.py: never graded)."""

    answer: str | None = None
    answer_code: str | None = None
    answer_is_draft: bool = False


def answer_files(ws: Path) -> AnswerFiles:
    answer, code = read_text(ws / "ANSWER.md"), read_text(ws / "answer.py")
    if answer is None and code is None:
        draft, draft_code = read_text(ws / "DRAFT_ANSWER.md"), read_text(ws / "draft_answer.py")
        return AnswerFiles(answer=draft, answer_code=draft_code, answer_is_draft=(draft or draft_code) is not None)
    return AnswerFiles(answer=answer, answer_code=code)


class RunSummary(BaseModel):
    """One run, as every listing shows it."""

    path: str
    status: RunStatus
    problem: str = ""
    strategy: str = ""
    model: str = ""
    verdict: str | None = None
    verdict_reason: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    iteration: int | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    wall_s: float | None = None
    finished: bool = False
    ran_as: str | None = None
    reference_conditioned: bool = False
    api_base: str | None = None
    problem_spec: str | None = None
    keeps_state: bool = False
    """The strategy keeps a resumable state (state.json: the lab)."""


def summarize(ws: str | Path, files: RunFiles | None = None) -> RunSummary:
    """The summary of the run in ``ws``; a damaged run is ``damaged``, its error the line saying why."""
    files = files or read_run(ws)
    record, start, state = files.record, files.start, files.state or {}
    status = status_of(files)
    current = files.finished and record is not None
    calls: list[CallRecord] = []
    if not current:
        try:
            calls = read_calls(files.path)
        except UserError as exc:  # a damaged calls.jsonl: the run is listed, and says why
            files.damaged = files.damaged or str(exc)
            status = "damaged" if not files.holder else status
    total = Usage()
    for u in usage_by_role(calls).values():
        total = total.add(u)
    iteration = state.get("iteration")
    options = start.options if start is not None else (record.options if record else None)
    verdict = record.verdict if record is not None else None
    return RunSummary(
        path=str(files.path), status=status,
        problem=(record.problem_id if record else "") or (start.problem_id if start else "")
        or str(state.get("problem_id") or ""),
        strategy=(record.strategy if record else "") or (options.strategy if options else "")
        or (STATE_OF if files.state is not None else ""),
        model=(record.model if record else "") or (options.model if options else "")
        or (calls[0].model if calls else ""),
        verdict=verdict.verdict if verdict else None, verdict_reason=verdict.reason if verdict else None,
        stop_reason=record.stop_reason if record else None,
        error=files.damaged or (record.error if record and current else None),
        iteration=iteration if isinstance(iteration, int) else None,
        tokens=record.totals.total_tokens if current and record else total.total_tokens,
        cost_usd=record.totals.cost_usd if current and record else total.cost_usd,
        calls=record.totals.calls + record.failed_requests if current and record else len(calls),
        wall_s=record.wall_s if record else None, finished=record is not None,
        ran_as=record.ran_as if record else None,
        reference_conditioned=bool(record and record.reference_conditioned),
        api_base=(options.api_base if options else None) or (record.api_base if record else None),
        problem_spec=(start.problem_spec if start else None) or (record.problem_spec if record else None),
        keeps_state=files.state is not None)


def talk_state(status: str, takes_messages: bool) -> str | None:
    """What the physicist can do with a run: ``running`` (messages are taken in at the next
    iteration boundary; pause, stop), ``paused`` (paused or interrupted: messages wait for a resume;
    stop, resume), ``ended`` (messages reopen it at a resume; resume); None: a run that takes no
    messages (not a lab run)."""
    if not takes_messages:
        return None
    if status in ("running", "resuming"):
        return "running"
    return "paused" if status in ("paused", "interrupted") else "ended"


def listed(run_id: str, s: RunSummary, lab_status: str | None, takes_messages: bool | None = None) -> dict[str, Any]:
    """One line of the runs table (`physlab runs list`, the dashboard): the summary, the run's id
    under its root, its strategy's own status and what it can be told (:func:`talk_state`)."""
    talk = talk_state(s.status, s.keeps_state if takes_messages is None else takes_messages)
    return {**s.model_dump(mode="json", exclude={"path", "keeps_state"}), "id": run_id, "lab_status": lab_status,
            "talk": talk}


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Every run under ``root`` (:func:`physlab.run.discovery.discover`), one :func:`listed` line each."""
    rows = []
    for run_id in discover(root):
        try:
            path = resolve_run(root, run_id)
        except NotFound:  # gone, or turned into a link out of the root, since it was found
            continue
        files = read_run(path)
        rows.append(listed(run_id, summarize(path, files), files.state_status))
    return rows
