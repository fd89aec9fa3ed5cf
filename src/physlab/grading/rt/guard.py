"""Run one grading step in a forked child with a hard timeout.

SymPy's ``simplify``/``expand``/``evalf`` can hang or eat memory on hostile (or just large)
input. Each step runs in ``os.fork()``'s child, which writes a JSON result to a pipe; the parent
waits with a deadline and SIGKILLs the child when it passes. No ``signal.alarm`` anywhere: this
runs inside the sandbox, in a process of its own, and the host side stays thread/asyncio safe.
Forking a process that has SymPy loaded costs a few milliseconds.
"""

import json
import os
import select
import signal
import time
from typing import Any

MAX_RESULT_BYTES = 4_000_000


class StepTimeout(Exception):
    pass


class StepFailed(Exception):
    pass


def run_guarded(fn, timeout_s, *args):
    """``fn(*args)`` (must return something JSON-able) in a child process; raises StepTimeout
    when it does not finish in ``timeout_s``, StepFailed when it raises or dies."""
    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:  # no fork allowed: run inline (the stage's own timeout still bounds it)
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001
            raise StepFailed(f"{type(exc).__name__}: {exc}"[:300]) from None
    if pid == 0:  # child
        os.close(r)
        try:
            try:
                payload = json.dumps({"ok": fn(*args)})
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]})
            data = payload.encode()
            view = memoryview(data)
            while view:
                n = os.write(w, view)
                view = view[n:]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    size = 0
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if not ready:
                continue
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_RESULT_BYTES:
                break
    finally:
        _reap(r, pid)
    if timed_out:
        raise StepTimeout(f"step did not finish in {timeout_s:g} s")
    try:
        msg = json.loads(b"".join(chunks).decode())
    except ValueError:
        raise StepFailed("step died without a result (memory limit?)") from None
    if "error" in msg:
        raise StepFailed(msg["error"])
    return msg["ok"]


def run_steps(steps, job, timeouts, fatal=("step_rebuild",)):
    """Run ``steps`` (each ``fn(job) -> [status, note]``) in order in ONE forked child, stopping at
    the first decisive status (not None). Every step has its own deadline: when one passes, the
    child is killed and a new child resumes with the next step. Returns ``[(name, status, note)]``
    for the steps that ran; a step named in ``fatal`` that times out or dies ends the run. One fork per call on the normal path (forks cost ~50 ms in a warm
    sandbox worker)."""
    results = []
    i = 0
    while i < len(steps):
        try:
            r, w = os.pipe()
            pid = os.fork()
        except OSError:  # cannot fork: run inline (the stage's own timeout bounds it)
            for fn in steps[i:]:
                try:
                    status, note = fn(job)
                except Exception as exc:  # noqa: BLE001
                    status, note = None, f"{fn.__name__} failed ({type(exc).__name__})"
                results.append((fn.__name__, status, note))
                if status is not None:
                    break
            return results
        if pid == 0:
            os.close(r)
            try:
                for k in range(i, len(steps)):
                    try:
                        msg: dict[str, Any] = {"k": k, "ok": list(steps[k](job))}
                    except BaseException as exc:  # noqa: BLE001
                        msg = {"k": k, "error": f"{type(exc).__name__}: {exc}"[:300]}
                    data = (json.dumps(msg) + "\n").encode()
                    view = memoryview(data)
                    while view:
                        view = view[os.write(w, view):]
                    if "ok" in msg and msg["ok"][0] is not None:
                        break
            finally:
                os._exit(0)
        os.close(w)
        current = i
        deadline = time.monotonic() + timeouts[current]
        buf = b""
        next_i = len(steps)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    results.append((steps[current].__name__, None,
                                    f"{_label(steps[current])} step timed out after {timeouts[current]:g} s"))
                    next_i = current + 1
                    break
                ready, _, _ = select.select([r], [], [], left)
                if not ready:
                    continue
                chunk = os.read(r, 65536)
                if not chunk:  # child ended (done, or died mid-step)
                    if current < len(steps) and not (results and results[-1][1] is not None):
                        results.append((steps[current].__name__, None,
                                        f"{_label(steps[current])} step died (memory limit?)"))
                        next_i = current + 1
                    break
                buf += chunk
                decisive = False
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    msg = json.loads(line)
                    k = msg["k"]
                    if "ok" in msg:
                        status, note = msg["ok"]
                    else:
                        status, note = None, f"{_label(steps[k])} step failed ({msg['error']})"
                    results.append((steps[k].__name__, status, note))
                    current = k + 1
                    if status is not None or current >= len(steps):
                        decisive = True
                        break
                    deadline = time.monotonic() + timeouts[current]
                if decisive:
                    break
        finally:
            _reap(r, pid)
        if results and (results[-1][1] is not None or results[-1][0] in fatal):
            return results
        i = next_i
    return results


def _label(fn):
    name = fn.__name__
    return name[5:] if name.startswith("step_") else name


def _reap(read_fd: int, pid: int) -> None:
    """Close the result pipe and make sure the forked check is dead and waited for."""
    os.close(read_fd)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
