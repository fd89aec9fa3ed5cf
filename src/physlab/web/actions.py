"""What a physicist does to a run from its page: a message for the lab (comment, hint, challenge,
redirect), pause and stop (through the run's inbox, as `physlab runs ...` posts them), and resume (a
detached `physlab solve --resume`, checked here first as the command would check it)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from physlab.errors import UserError
from physlab.lab import inbox
from physlab.run.files import RESUME_LOG
from physlab.run.lock import LOCK_FD_ENV, RunLock, lock_holder, lock_run
from physlab.web import runs
from physlab.web.dashboard import Dashboard, dashboard

router = APIRouter()


class Action(BaseModel):
    kind: Literal["comment", "hint", "challenge", "redirect", "pause", "resume", "stop"]
    text: str = Field(default="", max_length=20_000)
    on: str | None = Field(default=None, pattern=r"^[A-Z]{2}-\d{1,6}$")
    problem: str | None = Field(default=None, max_length=1000, description="resume only: the problem spec")
    confirm: bool = Field(default=False, description="resume only: the user confirmed what a record not written "
                                                     "on this machine chooses (the process gets --yes)")


def default_resumer(run: Path, summary: dict[str, Any], problem: str, lock: RunLock) -> str:
    """Continue a run that is not running in a detached `physlab solve PROBLEM --resume RUN` process:
    the options it was made with (its model, server, key variable, parameters, budget) are the ones
    it recorded, as for a resume from the command line. What the process prints goes to the run's
    resume.log, which its page shows. The process inherits the run's lock (taken before it starts: a
    second resume is refused meanwhile) and is waited for by a thread of ours, so that it leaves no
    defunct entry in the process table when it ends."""
    cmd = [sys.executable, "-m", "physlab", "solve", problem, "--resume", str(run), "--console", "lines"]
    if summary.get("confirmed"):  # the user confirmed, on the page, what the run's record chooses
        cmd.append("--yes")
    if not summary.get("options_recorded"):  # a run from before runs recorded their options
        cmd += [arg for flag, key in (("--model", "model"), ("--api-base", "api_base")) if summary.get(key)
                for arg in (flag, summary[key])]
    log = os.open(run / RESUME_LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, pass_fds=(lock.fd,),
                                env={**os.environ, LOCK_FD_ENV: str(lock.fd)})
    finally:
        os.close(log)
    lock.hand_over(proc.pid)
    threading.Thread(target=proc.wait, name=f"physlab-resume-{proc.pid}", daemon=True).start()
    return f"resuming (pid {proc.pid})"


def resume_problem(spec: str, problem_id: str) -> str:
    """The problem a resume runs on, checked as `physlab solve` would check it (a UserError: one
    line) before any process starts: it must load, and be the run's own problem."""
    from physlab.problems import resolve_problem

    loaded = resolve_problem(spec)
    if problem_id and loaded.id != problem_id:
        raise UserError(f"'{spec}' is problem '{loaded.id}'; this run is on '{problem_id}'")
    return spec


def check_resume(run: Path, spec: str | None, summary: dict[str, Any], confirmed: bool = False) -> str:
    """What `physlab solve --resume RUN` checks before it changes anything, checked here before a
    process starts (so the page says it in one line): a record not written on this machine that
    chooses where requests, keys or files go is confirmed (``NeedsConfirmation`` until it is), the
    problem loads and is the run's, and the run's models would go to the servers they went to, with
    the keys they carried. Returns the problem spec the process is given. A UserError's line is
    prefixed with what it is about."""
    from physlab.run.resume import NeedsConfirmation, check_servers, registry_for, resume_options

    try:
        options, recorded = resume_options(run, {}, yes=confirmed)
    except NeedsConfirmation:
        raise
    except UserError:
        options, recorded = None, None  # a run from before runs recorded their options: the process says
    try:
        chosen = resume_problem(spec or recorded or summary["problem"], summary["problem"])
    except UserError as exc:
        raise UserError(f"problem: {exc} (give the problem as `physlab solve` takes it)") from None
    if options is not None:
        check_servers(run, options, registry_for(options))
    summary["options_recorded"] = options is not None
    summary["confirmed"] = confirmed
    return chosen


async def _resume(board: Dashboard, run_id: str, run: Path, base: Path, action: Action) -> Any:
    """Resume: what `physlab solve --resume RUN` accepts, checked the same way, then the resumer."""
    from physlab.run.resume import NeedsConfirmation

    summary = runs.summary(run_id, run, base)
    try:
        spec = await asyncio.to_thread(check_resume, run, (action.problem or "").strip() or None, summary,
                                       action.confirm)
    except NeedsConfirmation as exc:  # the page asks, and posts again with confirm
        return JSONResponse({"detail": str(exc), "confirm": True}, status_code=409)
    except UserError as exc:
        raise HTTPException(400, str(exc)) from None
    try:  # taken before a process starts, so the page shows "resuming" and a 2nd post is refused
        lock = lock_run(run)
    except UserError:
        pid = lock_holder(run)
        raise HTTPException(409, f"the run is already resuming or running{f' (pid {pid})' if pid else ''}") from None
    try:
        msg = await asyncio.to_thread(board.resumer, run, summary, spec, lock)
    finally:
        lock.release()  # nothing left to release when the resumer handed it to its process
    return {"queued": False, "detail": msg}


def _post(run: Path, status_now: str, action: Action) -> dict[str, Any]:
    """A message, pause or stop into the run's inbox, when its status takes it."""
    if action.kind in ("comment", "hint", "redirect", "challenge") and not action.text.strip():
        raise HTTPException(422, f"text: a {action.kind} needs a message")
    status = inbox.effective_status(run, status_now)
    refused = inbox.refusal(status, action.kind)
    if refused:
        raise HTTPException(409, refused)
    try:
        mid = inbox.post(run, action.kind, action.text, action.on)
    except UserError as exc:
        raise HTTPException(400, str(exc)) from None
    return {"queued": True, "id": mid, "detail": f"{action.kind} queued ({mid}); {inbox.when_taken_in(status, run)}"}


async def _action(request: Request) -> Action:
    if not request.headers.get("content-type", "").startswith("application/json"):
        raise HTTPException(415, "send the action as JSON")
    try:
        return Action.model_validate_json(await request.body())
    except ValidationError as exc:
        err = exc.errors()[0]
        raise HTTPException(422, f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


@router.post("/api/runs/{run_id:path}/actions")
async def api_action(run_id: str, request: Request) -> Any:
    board = dashboard(request)
    run, base = board.run_or_404(run_id)
    action = await _action(request)
    state = runs.load_state(run, base)
    if state is None:
        raise HTTPException(409, "not a lab run (no readable state.json): only the lab takes messages")
    if action.on is not None and state.find(action.on) is None:
        raise HTTPException(400, f"on: no {action.on} in this run")
    if action.kind == "resume":
        return await _resume(board, run_id, run, base, action)
    return _post(run, state.status, action)
