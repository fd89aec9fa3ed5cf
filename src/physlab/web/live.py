"""The dashboard's live updates: server-sent events, one stream for the runs table and one per run.
Each polls the watched files' modification times and sizes on the server (``runs.signature``) and
sends an event when they change; the page then fetches the re-rendered fragment."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from physlab.run.discovery import discover
from physlab.web import runs
from physlab.web.dashboard import dashboard

router = APIRouter()
KEEP_ALIVE_S = 15  # a comment line this often keeps proxies from closing a quiet stream


async def stream(sig: Callable[[], Any], request: Request, event: str) -> AsyncIterator[str]:
    board = dashboard(request)
    started, last, last_beat = time.monotonic(), None, time.monotonic()
    while time.monotonic() - started < board.sse_max_s and not board.stopping.is_set():
        if await request.is_disconnected():
            break
        current = await asyncio.to_thread(sig)
        if current != last:
            last = current
            yield f"event: {event}\ndata: {json.dumps({'t': time.time()})}\n\n"
        elif time.monotonic() - last_beat > KEEP_ALIVE_S:
            last_beat = time.monotonic()
            yield ": keep-alive\n\n"
        await asyncio.sleep(board.poll_s)


def sse(gen: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(gen, media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@router.get("/api/events")
async def events_all(request: Request) -> StreamingResponse:
    root = dashboard(request).root
    return sse(stream(lambda: tuple((rid, runs.signature(root / rid)) for rid in discover(root)), request, "runs"))


@router.get("/api/events/runs/{run_id:path}")
async def events_run(run_id: str, request: Request) -> StreamingResponse:
    run, _ = dashboard(request).run_or_404(run_id)
    return sse(stream(lambda: runs.signature(run), request, "run"))
