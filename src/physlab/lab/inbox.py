"""Human input: an append-only ``inbox.jsonl`` in the run directory.

Writers (``physlab runs comment|hint|challenge|redirect|pause|stop``) append one JSON line with a
single ``write`` on an ``O_APPEND`` descriptor, so concurrent writers and a running engine never
interleave partial lines. The engine reads the file at each iteration boundary and takes in every
message whose id the state has not consumed yet; a torn last line (writer killed mid-write) is
skipped until it is complete.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
import uuid
from pathlib import Path

from physlab.errors import UserError

INBOX = "inbox.jsonl"
KINDS = ("comment", "hint", "challenge", "redirect", "pause", "stop")


def post(run_dir: str | Path, kind: str, text: str = "", on: str | None = None) -> str:
    run_dir = Path(run_dir)
    if not (run_dir / "state.json").is_file():
        raise UserError("not a lab run directory (no state.json)", path=run_dir)
    if kind not in KINDS:
        raise UserError(f"message kind must be one of {', '.join(KINDS)}", field="kind")
    if kind in ("comment", "challenge") and not on:
        raise UserError(f"a {kind} needs --on ID (e.g. WH-3 or ER-2)", field="--on")
    if kind == "challenge" and on and not on.startswith("ER-"):
        raise UserError("a challenge targets an established result (ER-n)", field="--on")
    mid = uuid.uuid4().hex[:12]
    line = json.dumps({"id": mid, "kind": kind, "text": text, "on": on, "ts": time.time()}) + "\n"
    fd = _open_inbox(run_dir)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return mid


def _open_inbox(run_dir: Path) -> int:
    """The run's own inbox.jsonl for appending, never through a link: the run directory and the
    file are opened without following symbolic links, and a file that is not a regular file with
    one name (a hard link to a file elsewhere, a FIFO) is refused."""
    path = run_dir / INBOX
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | nofollow)
    except OSError as exc:
        raise UserError(f"cannot open the run directory ({exc.strerror}; a symbolic link is refused)",
                        path=run_dir) from None
    try:
        fd = os.open(INBOX, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | nofollow, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise UserError(f"cannot write the inbox ({why}); nothing was posted", path=path) from None
    finally:
        os.close(dir_fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise UserError("the inbox is not a plain file of this run (a hard link or a special file); "
                        "nothing was posted", path=path)
    return fd


def read(run_dir: str | Path) -> list[dict]:
    path = Path(run_dir) / INBOX
    if not path.is_file():
        return []
    out = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(msg, dict) and msg.get("id") and msg.get("kind") in KINDS:
            out.append(msg)
    return out


def pending(run_dir: str | Path, consumed: list[str]) -> list[dict]:
    done = set(consumed)
    return [m for m in read(run_dir) if m["id"] not in done]


# What a message means depends on the state of the run it is sent to.
ENDED = ("complete", "partially_complete", "stopped", "no_answer", "error")


def effective_status(run_dir: str | Path, status: str | None = None) -> str:
    """The state a message meets: the run's status (:func:`physlab.run.status.run_status`, the one
    every reader shows; a run nobody runs any more is ``interrupted``, waiting for a resume like a
    paused one), a resume under way counting as running. ``status`` (the state's own) is not used."""
    from physlab.run.status import run_status

    found = run_status(run_dir)
    return "running" if found == "resuming" else found


def refusal(status: str, kind: str) -> str | None:
    """Why a message of ``kind`` makes no sense for a run in state ``status`` (see
    :func:`effective_status`; None: it does). Pausing or stopping a run that has ended would only
    undo its answer at the next resume; pausing a run that is not running does nothing."""
    if kind in ("pause", "stop") and status in ENDED:
        return f"this run has already ended ({status}): there is nothing to {kind}"
    if kind == "pause" and status == "paused":
        return "this run is already paused"
    if kind == "pause" and status == "interrupted":
        return "this run is not running (its process ended before the run did): there is nothing to pause"
    return None


def when_taken_in(status: str, run_dir: str | Path) -> str:
    """When a run in state ``status`` takes in a message (the answer to "queued; and then?")."""
    resume = f"`physlab solve --resume {run_dir}`"
    if status == "running":
        return "the run takes it in at its next iteration boundary"
    if status in ("paused", "interrupted"):
        return f"the run is {status}: it takes it in when you resume it ({resume})"
    return f"this run has ended ({status}): {resume} takes it in and continues the research"
