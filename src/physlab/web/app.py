"""The FastAPI app behind `physlab ui`.

Pages are rendered on the server (see ``render``); ``static/app.js`` only listens to server-sent
events and swaps the re-rendered fragment in, and posts actions as JSON. Live updates: the SSE
endpoints poll the watched files' mtimes/sizes server-side (``runs.signature``) and send an event
when they change.

Security: only run directories under the runs root are readable (``paths``). With a token (always
when bound off loopback) every route but /static and /login needs it: the cookie set when the login
form posts it (never a token in a URL), or an ``Authorization: Bearer`` / ``X-PhysLab-Token`` header. Without a token (loopback only) the Host
header must name a loopback host (no DNS rebinding) and actions must come with a same-origin
``Origin`` (if any) and a JSON body, so another web page cannot post them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Literal
from urllib.parse import parse_qs

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, ValidationError

from physlab.errors import UserError
from physlab.lab import inbox
from physlab.run.files import RESUME_LOG
from physlab.run.lock import LOCK_FD_ENV, RunLock, lock_holder, lock_run
from physlab.web import render, runs
from physlab.web.paths import NotFound, discover, read_text, resolve_run
from physlab.web.sweeps import CELL_PREFIX, FILTERS, cell_workspace, report_data, sweeps_page

COOKIE = "physlab_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
FILES = ("PROBLEM.md", "ANSWER.md", "answer.py", "RESEARCH_STATE.md", "LOG.md", "state.json", "metrics.json",
         "error.log")
STATIC = Path(__file__).parent / "static"
# The pages load only their own script and stylesheet: injected markup could not run a script even
# if it got past the templates' escaping.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


class Action(BaseModel):
    kind: Literal["comment", "hint", "challenge", "redirect", "pause", "resume", "stop"]
    text: str = Field(default="", max_length=20_000)
    on: str | None = Field(default=None, pattern=r"^[A-Z]{2}-\d{1,6}$")
    problem: str | None = Field(default=None, max_length=1000, description="resume only: the problem spec")
    confirm: bool = Field(default=False, description="resume only: the user confirmed what a record not written "
                                                     "on this machine chooses (the process gets --yes)")


def _own_path(path: str) -> bool:
    """A path on this server to go back to after the login (never another site: ``//host``,
    ``/\\host``, a scheme)."""
    # no whitespace or backslash anywhere: browsers drop tabs and newlines and read \\ as /, so
    # "/\t/evil.example" would leave the site
    return len(path) < 2000 and re.fullmatch(r"/(?!/)[^\s\\\x00-\x1f\x7f]*", path) is not None


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


def create_app(runs_dir: str | Path, *, db: str | Path | None = None, token: str | None = None,
               poll_s: float = 0.5, sse_max_s: float = 300.0,
               resumer: Callable[[Path, dict[str, Any], str, RunLock], str] = default_resumer) -> FastAPI:
    root = Path(runs_dir).resolve()
    app = FastAPI(title="PhysLab", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.root, app.state.db, app.state.token = root, Path(db) if db else None, token
    app.state.poll_s, app.state.sse_max_s = poll_s, sse_max_s
    app.state.stopping = threading.Event()
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.middleware("http")
    async def content_security_policy(request: Request, call_next):
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response

    # ------------------------------------------------------------------ auth
    def authorised(request: Request) -> bool:
        if token is None:
            return True
        given = (request.cookies.get(COOKIE) or request.headers.get("x-physlab-token")
                 or request.headers.get("authorization", "").removeprefix("Bearer ").strip())
        return bool(given) and secrets.compare_digest(given.encode(), token.encode())

    @app.middleware("http")
    async def guard(request: Request, call_next):
        path = request.url.path
        if token is None:
            host = (request.headers.get("host") or "").rsplit(":", 1)[0] if not (request.headers.get("host") or "").startswith("[") \
                else (request.headers.get("host") or "").split("]")[0] + "]"
            if host not in LOOPBACK_HOSTS:  # also in tests (their clients name 127.0.0.1)
                return PlainTextResponse("host not allowed", status_code=403)
        if path.startswith("/static/") or path == "/login" or authorised(request):
            if request.method == "POST":
                origin = request.headers.get("origin")
                if origin and origin.split("://", 1)[-1] != request.headers.get("host"):
                    return PlainTextResponse("cross-origin action refused", status_code=403)
            return await call_next(request)
        if path.startswith("/api/"):
            return JSONResponse({"detail": "token required"}, status_code=401)
        return HTMLResponse(render.login_page("", path if request.method == "GET" and _own_path(path) else "/"),
                            status_code=401)

    @app.get("/login")
    def login_form():
        """The token form; a token in this URL is not taken (history, proxies and logs keep URLs)."""
        if token is None:
            return RedirectResponse("/", status_code=303)
        return HTMLResponse(render.login_page(), status_code=401)

    @app.post("/login")
    async def login(request: Request):
        """The form's token, posted: a cookie and a redirect to the page asked for."""
        # the form's two fields read with the standard library: FastAPI's Form() needs
        # python-multipart, a dependency for one urlencoded body
        form = parse_qs((await request.body())[:4096].decode("utf-8", "replace"))
        given, goto = (form.get("token") or [""])[0], (form.get("next") or ["/"])[0]
        if token is None:
            return RedirectResponse("/", status_code=303)
        if given and secrets.compare_digest(given.encode(), token.encode()):
            resp = RedirectResponse(goto if _own_path(goto) else "/", status_code=303)
            resp.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return resp
        return HTMLResponse(render.login_page("wrong token" if given else "", _own_path(goto) and goto or "/"),
                            status_code=401)

    # ------------------------------------------------------------------ helpers
    def run_or_404(run_id: str) -> tuple[Path, Path]:
        """(the run directory, the directory its files must stay in): a run under the runs root,
        or a sweep cell's workspace (``~cell/N``, N its row in the results database), confined to
        itself."""
        try:
            if run_id.startswith(CELL_PREFIX) and app.state.db is not None:
                cell = cell_workspace(app.state.db, run_id[len(CELL_PREFIX):])
                if cell is None:
                    raise NotFound(run_id)
                return cell, cell
            return resolve_run(root, run_id), root
        except NotFound:
            raise HTTPException(404, "no such run") from None

    def summaries() -> list[dict[str, Any]]:
        out = []
        for rid in discover(root):
            try:
                out.append(runs.summary(rid, resolve_run(root, rid), root))
            except NotFound:
                continue
        return out

    def filters_of(request: Request) -> dict[str, str]:
        return {k: request.query_params.get(k, "") for k in FILTERS if request.query_params.get(k)}

    # ------------------------------------------------------------------ pages and fragments
    @app.get("/", response_class=HTMLResponse)
    def index():
        return render.runs_page(summaries())

    @app.get("/fragments/runs", response_class=HTMLResponse)
    def runs_fragment():
        return render.runs_table(summaries())

    @app.get("/fragments/runs/{run_id:path}", response_class=HTMLResponse)
    def run_fragment(run_id: str):
        run, base = run_or_404(run_id)
        return render.run_fragment(runs.detail(run_id, run, base))

    @app.get("/runs/{run_id:path}", response_class=HTMLResponse)
    def run_page(run_id: str):
        run, base = run_or_404(run_id)
        name = f"sweep cell {run.parent.name}/{run.name}" if run_id.startswith(CELL_PREFIX) else None
        return render.run_page(run_id, runs.detail(run_id, run, base), name)

    @app.get("/sweeps", response_class=HTMLResponse)
    def sweeps(request: Request):
        try:
            return sweeps_page(app.state.db, filters_of(request), root)
        except UserError as exc:
            raise HTTPException(404, str(exc)) from None

    # ------------------------------------------------------------------ JSON API
    @app.get("/api/runs")
    def api_runs():
        return summaries()

    @app.get("/api/sweeps")
    def api_sweeps(request: Request):
        if app.state.db is None:
            raise HTTPException(404, "no results database (physlab ui --db FILE)")
        try:
            data = report_data(app.state.db, filters_of(request))
        except UserError as exc:
            raise HTTPException(404, str(exc)) from None
        return {"report": data["report"].model_dump(mode="json"), "rows": data["rows"], "choices": data["choices"]}

    @app.get("/api/runs/{run_id:path}/calls/{n}")
    def api_call(run_id: str, n: int):
        calls = runs.load_calls(*run_or_404(run_id))
        if not 0 <= n < len(calls):
            raise HTTPException(404, "no such call")
        return calls[n].model_dump(mode="json")

    @app.get("/api/runs/{run_id:path}/files/{name}")
    def api_file(run_id: str, name: str):
        run, base = run_or_404(run_id)
        if name not in FILES:
            raise HTTPException(404, "not a run file")
        text = read_text(run, base, name)
        if text is None:
            raise HTTPException(404, "no such file")
        return PlainTextResponse(text)

    @app.post("/api/runs/{run_id:path}/actions")
    async def api_action(run_id: str, request: Request):
        run, base = run_or_404(run_id)
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise HTTPException(415, "send the action as JSON")
        try:
            action = Action.model_validate_json(await request.body())
        except ValidationError as exc:
            err = exc.errors()[0]
            raise HTTPException(422, f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        state = runs.load_state(run, base)
        if state is None:
            raise HTTPException(409, "not a lab run (no readable state.json): only the lab takes messages")
        if action.on is not None and state.find(action.on) is None:
            raise HTTPException(400, f"on: no {action.on} in this run")
        if action.kind == "resume":  # what `physlab solve --resume RUN` accepts, checked the same way
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
                msg = await asyncio.to_thread(resumer, run, summary, spec, lock)
            finally:
                lock.release()  # nothing left to release when the resumer handed it to its process
            return {"queued": False, "detail": msg}
        if action.kind in ("comment", "hint", "redirect", "challenge") and not action.text.strip():
            raise HTTPException(422, f"text: a {action.kind} needs a message")
        status = inbox.effective_status(run, state.status)
        refused = inbox.refusal(status, action.kind)
        if refused:
            raise HTTPException(409, refused)
        try:
            mid = inbox.post(run, action.kind, action.text, action.on)
        except UserError as exc:
            raise HTTPException(400, str(exc)) from None
        return {"queued": True, "id": mid,
                "detail": f"{action.kind} queued ({mid}); {inbox.when_taken_in(status, run)}"}

    @app.get("/api/runs/{run_id:path}")
    def api_run(run_id: str):
        run, base = run_or_404(run_id)
        d = runs.detail(run_id, run, base)
        return {"summary": d["summary"], "state": d["state"].model_dump(mode="json") if d["state"] else None,
                "metrics": d["metrics"], "history": d["history"],
                "usage_by_role": {k: v.model_dump() for k, v in d["usage"].items()},
                "inbox": d["inbox"], "calls": len(d["calls"])}

    # ------------------------------------------------------------------ server-sent events
    async def stream(sig: Callable[[], Any], request: Request, event: str):
        started, last, last_beat = time.monotonic(), None, time.monotonic()
        while time.monotonic() - started < app.state.sse_max_s and not app.state.stopping.is_set():
            if await request.is_disconnected():
                break
            current = await asyncio.to_thread(sig)
            if current != last:
                last = current
                yield f"event: {event}\ndata: {json.dumps({'t': time.time()})}\n\n"
            elif time.monotonic() - last_beat > 15:
                last_beat = time.monotonic()
                yield ": keep-alive\n\n"
            await asyncio.sleep(app.state.poll_s)

    def sse(gen) -> StreamingResponse:
        return StreamingResponse(gen, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.get("/api/events")
    async def events_all(request: Request):
        def sig():
            return tuple((rid, runs.signature(root / rid)) for rid in discover(root))
        return sse(stream(sig, request, "runs"))

    @app.get("/api/events/runs/{run_id:path}")
    async def events_run(run_id: str, request: Request):
        run, _ = run_or_404(run_id)
        return sse(stream(lambda: runs.signature(run), request, "run"))

    return app
