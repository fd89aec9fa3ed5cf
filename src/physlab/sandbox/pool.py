"""A bounded pool of warm workers (zygotes).

The pool is deliberately thread-based with blocking pipe I/O rather than tied to one asyncio loop:
the same pool serves ``await Sandbox.run`` (through a worker thread), ``run_sync`` from plain
code, from other threads, and from code already inside an event loop, and it survives the loop
that first used it. A run takes an idle worker or starts one (up to ``size``), else queues.
A worker that dies or stops answering is killed and replaced transparently.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import threading
import time
import weakref

from physlab.sandbox import launch, reap
from physlab.sandbox._zygote_common import SCIENTIFIC_STACK

_HDR = struct.Struct(">Q")
GRACE_S = 10.0  # beyond the run's own timeout before a worker counts as wedged
ORDERLY_S = 10.0  # for a killed worker's zygote to reap its run and exit, then for stragglers to end
MAX_RESPONSE = 1 << 30
MAX_WAIT_S = 3600.0  # one select() at most; the loop waits again until the deadline


class WorkerDied(Exception):
    pass


class Worker:
    def __init__(self, backend: str, preload: tuple[str, ...] = SCIENTIFIC_STACK):
        self.backend = backend
        self.proc, self.private = launch.start_zygote(backend, preload)
        self.runs = 0
        self.idle = True  # the zygote said its last run is over and reaped
        self.hello: dict = {}
        try:
            self.hello = self._read(time.monotonic() + 120)  # the whole stack: ~1 s of CPU
        except BaseException:
            self.kill()
            raise
        if not self.hello.get("ready"):
            self.kill()
            raise WorkerDied(f"sandbox worker failed to start: {self.hello}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, req: dict, deadline: float) -> dict:
        data = json.dumps(req).encode()
        try:
            self.proc.stdin.write(_HDR.pack(len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(f"sandbox worker is gone: {exc}") from exc
        self.runs += 1
        reply = self._read(deadline)
        # Then the zygote's word that the run's manager has exited, everything the run started is
        # reaped and the next manager waits: a run returns with nothing of it left. Without that
        # word the reply still stands, and the worker is killed (which waits for it all) instead.
        try:
            self.idle = self._read(deadline).get("idle") is True
        except (TimeoutError, WorkerDied):
            self.idle = False
        return reply

    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("sandbox worker did not answer in time")
            r, _, _ = select.select([fd], [], [], min(left, MAX_WAIT_S))  # huge timeouts overflow select
            if not r:
                continue
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
            if not chunk:
                raise WorkerDied("sandbox worker exited")
            buf += chunk
        return bytes(buf)

    def _read(self, deadline: float) -> dict:
        (n,) = _HDR.unpack(self._read_exact(_HDR.size, deadline))
        if n > MAX_RESPONSE:
            raise WorkerDied("sandbox worker sent an oversized reply")
        try:
            reply = json.loads(self._read_exact(n, deadline))
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise WorkerDied("sandbox worker sent a damaged reply")
        return reply

    def kill(self) -> None:
        """Stop this worker and return once nothing of it, or of a run it was serving, is left.
        What runs below the zygote (a run's manager, the run) is killed first and the zygote,
        their child subreaper, reaps it all and exits, so each process is reaped by a living
        parent (we cannot reap our grandchildren, and the machine's init may never do it). A
        zygote that does not exit (stopped, wedged) is killed with everything, and waited for."""
        tree = reap.ProcessTree(self.proc.pid)
        try:
            zygote = self.proc.pid if self.backend != "bwrap" else tree.find(self.hello.get("pid", -1))  # in bwrap's PID namespace
            below = tree.below(zygote) if zygote is not None else []
            tree.kill(below)
            tree.kill([p for p in tree.parent if p not in below], signal.SIGCONT)  # a stopped zygote reaps too
            try:
                self.proc.wait(timeout=ORDERLY_S if below else 0)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            tree.kill()
            self._kill_runs()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            tree.wait(ORDERLY_S)
        finally:
            tree.close()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        if self.private:
            shutil.rmtree(self.private, ignore_errors=True)

    def _kill_runs(self) -> None:
        """rlimit backend: what a run left when its worker died (the run may have killed it) is
        no longer below the worker, but still in the worker's cgroup, or still runs as the runs'
        own uid: kill that and wait (at most ORDERLY_S) until it has ended."""
        cgroup, uid = self.hello.get("cgroup"), self.hello.get("run_uid")
        end = time.monotonic() + ORDERLY_S
        if isinstance(cgroup, str) and os.path.isabs(cgroup):
            try:
                with open(os.path.join(cgroup, "cgroup.kill"), "w") as fh:
                    fh.write("1")
            except OSError:
                pass
            while time.monotonic() < end:  # the kill is asynchronous: rmdir once the last process is gone
                try:
                    os.rmdir(cgroup)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        if isinstance(uid, int) and uid > 0 and os.geteuid() == 0:
            while time.monotonic() < end:
                found = False
                for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
                    try:
                        if os.stat(f"/proc/{pid}").st_uid == uid and reap.running(pid):
                            found = True
                            os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                if not found:
                    break
                time.sleep(0.01)  # killed, not yet ended: look again


_pools: weakref.WeakSet[Pool] = weakref.WeakSet()


class Pool:
    def __init__(self, backend: str, size: int, preload: tuple[str, ...] = SCIENTIFIC_STACK):
        self.backend = backend
        self.size = max(1, size)
        self.preload = preload  # what each of its workers imports before its first run
        self._idle: list[Worker] = []
        self._count = 0  # workers alive or being started
        self._cond = threading.Condition()
        self._closed = False
        _pools.add(self)

    def _acquire(self) -> Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("the sandbox was closed")
                while self._idle:
                    w = self._idle.pop()
                    if w.alive():
                        return w
                    self._count -= 1
                    w.kill()
                if self._count < self.size:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return Worker(self.backend, self.preload)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, w: Worker, healthy: bool) -> None:
        with self._cond:
            if healthy and not self._closed and w.alive():
                self._idle.append(w)
            else:
                self._count -= 1
                w.kill()
            self._cond.notify()

    def warm(self, n: int | None = None) -> None:
        """Start workers ahead of time (each takes about a second)."""
        warm_pools([self], n)

    def run(self, req: dict, timeout_s: float) -> dict:
        """One run on a warm worker. Never raises for what the code does; the reply says."""
        w = self._acquire()
        healthy = False
        try:
            resp = w.request(req, time.monotonic() + timeout_s + GRACE_S)
            healthy = w.idle
            return resp
        except TimeoutError:
            return {"timed_out": True, "error": "the sandbox worker stopped answering; replaced"}
        except WorkerDied as exc:  # e.g. the code managed to kill its worker
            return {"error": f"the sandbox worker died during the run ({exc}); replaced"}
        finally:
            self._release(w, healthy)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for w in idle:
            w.kill()


def warm_pools(pools: list[Pool], n: int | None = None) -> None:
    """Start ``n`` workers (default: each pool's size) in each pool, all side by side."""
    got: list[tuple[Pool, Worker]] = []
    errors: list[BaseException] = []

    def one(pool: Pool) -> None:
        try:
            got.append((pool, pool._acquire()))
        except BaseException as exc:  # noqa: BLE001 - raised below, after the others
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(p,), name="physlab-sandbox-warm")
               for p in pools for _ in range(min(n or p.size, p.size))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for pool, w in got:
        pool._release(w, True)
    if errors:
        raise errors[0]


def _close_all() -> None:
    for p in list(_pools):
        p.close()


def b64d(s: str | None) -> bytes:
    return base64.b64decode(s) if s else b""
