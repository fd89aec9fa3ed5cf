"""Warm sandbox worker ("zygote"). Standard library only: this file runs *inside* the sandbox.

It pre-imports the scientific stack once (or the part of it its pool asked for); then, for every
run, it forks a one-run manager *before* any request arrives, and the manager reads the request:

    zygote ── M  (reads ONE request; new user+mount+PID+IPC namespaces, fresh /tmp and /dev/shm;
              │   relays the run's output, enforces the deadline, writes the reply, exits)
              └─ B  (pid 1 of the run's own PID namespace: reaps, counts processes, collects files)
                  └─ C  (the user's code: fresh work dir, rlimits, scrubbed env, clean __main__)

The guarantee between runs is "the worker reads no request data": the zygote never reads a
request, an input file or a run's output, so the memory every run is forked from holds nothing of
any earlier run (a run that scans its own heap finds only its own request). Whatever a run touched
(its manager, its mounts, its IPC namespace, its /tmp) ends with its manager. When B exits the
kernel kills everything left in the run's PID namespace, and the run cannot see or signal the zygote.

The rlimit backend (no bubblewrap around the zygote) gives each run, where the kernel allows, new
mount, PID, IPC and network namespaces of its own (as root directly, else through a user
namespace): B is then the init of the run's PID namespace with a /proc of its own, exactly as
above. When PhysLab is root, user code also runs as an unprivileged uid of its own. Where the
kernel refuses the namespaces, the run's process tree is killed by cgroup (where one can be made),
else by the run's own uid (as root), else by session.

Whatever backend, a run is over only when nothing of it is left: the zygote is a child subreaper,
so what outlives the run's manager becomes its child; after each manager exits it kills and reaps
until it has no child at all, forks the next manager, and only then says "idle" to the pool, which
waits for that word before the run returns.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import struct
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its modules beside it (-I leaves it out)

from _zygote_common import (
    _HDR,
    MNT_DETACH,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    PRELOAD_ENV,
    RUN_UID_BASE,
    SCIENTIFIC_STACK,
    _libc,
    _prctl,
    b64,
    bad_name,
    cfg,
    read_msg,
    write_msg,
)
from _zygote_confine import (
    _cgroup_kill,
    _make_cgroup,
    _others_can_read,
    enter_namespaces,
    enter_run_namespaces,
    kill_run_tree,
    probe_run_namespaces,
    reach_hidden_paths,
    reap_all,
)
from _zygote_run import run_init

EXIT_EOF = 3  # a manager that found the control pipe closed: the worker stops


# ---------------------------------------------------------------- one run's manager (M)
def serve_one(req: dict) -> dict:
    limits = req["limits"]
    cap = int(limits["max_output_bytes"])
    why, namespaced = _enter(req)
    if why:
        return {"error": why}
    pid, pipes, start = _fork_run(req, namespaced)
    out_r, err_r, res_r, st_r = pipes["out_r"], pipes["err_r"], pipes["res_r"], pipes["st_r"]
    # What is kept of each pipe. The user's code holds the write ends of stdout, stderr and the
    # status pipe: beyond these caps its writes are read and dropped, so nothing it writes grows
    # this process (the result pipe is B's, sized by the returned files' cap).
    keep = {out_r: cap, err_r: cap, st_r: 1,
            res_r: int(limits["max_return_file_bytes"]) * 4 // 3 + (1 << 20)}
    relay = _Relay(base64.b64decode(req["stdin"]) if req.get("stdin") else b"", pipes["in_w"], keep)
    timed_out = relay.pump(start + float(limits["timeout_s"]), res_r)
    duration = time.monotonic() - start
    relay.close_stdin()
    _end_run(pid, namespaced, tree_left=timed_out or res_r in relay.open_r)
    res = _supervisor_report(relay, res_r)
    if res.get("error"):
        return {"error": str(res["error"])}
    exit_code, sig = _exit_of(res.get("status"), timed_out)
    truncated = relay.seen[out_r] > cap or relay.seen[err_r] > cap
    limit_hit = _limit_hit(res, timed_out, sig, duration, limits, memory=b"M" in relay.bufs[st_r])
    if truncated and limit_hit is None:
        limit_hit = "output"
    error = ""
    if not res and not timed_out:
        error = "the run ended without reporting (its supervisor was killed)"
    return {
        "exit_code": exit_code, "signal": sig, "timed_out": timed_out, "duration_s": duration,
        "stdout": b64(bytes(relay.bufs[out_r])), "stderr": b64(bytes(relay.bufs[err_r])),
        "stdout_bytes": relay.seen[out_r], "stderr_bytes": relay.seen[err_r], "truncated": truncated,
        "files": res.get("files", {}), "files_truncated": bool(res.get("files_truncated")),
        "limit_hit": limit_hit, "error": error, "namespaced": bool(res.get("namespaced")),
    }


def _enter(req: dict) -> tuple[str | None, bool]:
    """Why the run cannot start (None: it can), and whether it runs in namespaces of its own
    (entered here, by this manager, before the run is forked)."""
    for name in req.get("files") or {}:
        why = bad_name(name)
        if why:
            return f"input file {name!r}: {why}", False
    disk_mb = int(req["limits"].get("max_disk_mb", 256))
    if cfg.run_ns:  # the rlimit backend: without its namespaces the run does not start
        why = enter_run_namespaces(disk_mb)
        if why:
            return why, False
    return None, bool(cfg.run_ns) or cfg.ns and enter_namespaces(disk_mb)


def _fork_run(req: dict, namespaced: bool) -> tuple[int, dict[str, int], float]:
    """B forked with the run's pipes: (its pid, this side's ends of them, when it started)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    fds = {"in_r": in_r, "out_w": out_w, "err_w": err_w, "res_w": res_w, "status_w": st_w}
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for fd in (in_w, out_r, err_r, res_r, st_r, cfg.ctrl_in, cfg.ctrl_out):
            os.close(fd)
        try:
            run_init(req, fds, namespaced)
        finally:
            os._exit(72)
    for fd in fds.values():
        os.close(fd)
    return pid, {"in_w": in_w, "out_r": out_r, "err_r": err_r, "res_r": res_r, "st_r": st_r}, start


class _Relay:
    """This side of the run's pipes: its stdin fed in, and its stdout, stderr, status and result
    read up to what is kept of each (``keep``; the rest read and dropped, counted in ``seen``)."""

    def __init__(self, stdin: bytes, in_w: int, keep: dict[int, int]):
        self.stdin, self.in_w, self.keep = stdin, in_w, keep
        if stdin:
            os.set_blocking(in_w, False)
        else:
            self.close_stdin()
        self.bufs = {fd: bytearray() for fd in keep}
        self.seen = {fd: 0 for fd in keep}
        self.open_r = set(self.bufs)

    def close_stdin(self) -> None:
        if self.in_w >= 0:
            os.close(self.in_w)
            self.in_w = -1

    def pump(self, deadline: float, res_r: int) -> bool:
        """Relay until every pipe is closed, the deadline passes (True: timed out), or B is gone
        and half a second more has passed (what is left is buffered or about to close)."""
        grace_end = None
        while self.open_r:
            now = time.monotonic()
            if res_r not in self.open_r and grace_end is None:
                grace_end = now + 0.5  # B is gone: the rest is buffered or about to close
            end = min(deadline, grace_end) if grace_end else deadline
            if now >= end:
                return grace_end is None
            r, w, _ = select.select(list(self.open_r), [self.in_w] if self.in_w >= 0 else [], [], end - now)
            if w:
                self._feed()
            for fd in r:
                self._read(fd)
        return False

    def _feed(self) -> None:
        try:
            n = os.write(self.in_w, self.stdin[:65536])
            self.stdin = self.stdin[n:]
        except BlockingIOError:
            pass
        except OSError:
            self.stdin = b""
        if not self.stdin:
            self.close_stdin()

    def _read(self, fd: int) -> None:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            self.open_r.discard(fd)
            return
        self.seen[fd] += len(chunk)
        room = self.keep[fd] - len(self.bufs[fd])
        if room > 0:
            self.bufs[fd] += chunk[:room]


def _end_run(pid: int, namespaced: bool, *, tree_left: bool) -> None:
    """Kill what is left of the run and reap B. ``tree_left``: B may not have killed the run's
    processes itself (timed out, or it never reported)."""
    try:
        os.kill(pid, signal.SIGKILL)  # namespaced: B is the run's init, its end is the run's end
    except OSError:
        pass
    if not namespaced:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if tree_left:  # B did not get to kill the run's tree itself
            kill_run_tree()
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _supervisor_report(relay: _Relay, res_r: int) -> dict:
    """What B reported (its run's status, files, limits hit), {} when it reported nothing whole."""
    buf = relay.bufs[res_r]
    if not buf or relay.seen[res_r] > relay.keep[res_r]:
        return {}
    try:
        n = _HDR.unpack(bytes(buf[: _HDR.size]))[0]
        report = json.loads(bytes(buf[_HDR.size: _HDR.size + n]))
    except (ValueError, struct.error):
        return {}
    return report


def _exit_of(status: object, timed_out: bool) -> tuple[int | None, int | None]:
    """(exit code, signal) of the user's code from its wait status; a signal's exit code is -signal."""
    if not isinstance(status, int) or timed_out:
        return None, None
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return -sig, sig
    return None, None


def _limit_hit(res: dict, timed_out: bool, sig: int | None, duration: float, limits: dict, *,
               memory: bool) -> str | None:
    """Which limit ended the run, the first that says so (None: none that these tell)."""
    if timed_out:
        return "timeout"
    if res.get("nproc_hit"):
        return "processes"
    if memory:
        return "memory"
    if sig == signal.SIGXCPU or sig == signal.SIGKILL and duration >= float(limits.get("cpu_s") or 1e9):
        return "cpu"
    if sig == signal.SIGXFSZ:
        return "file_size"
    return None


def manage_one_run() -> int:
    """M: forked before the request exists; reads it, serves it, replies, and takes every trace
    of it (memory, mounts, IPC objects) with it when it exits."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        req = read_msg(cfg.ctrl_in)
    except (EOFError, OSError):
        return EXIT_EOF
    try:
        resp = serve_one(req)
    except Exception:  # noqa: BLE001 - report, the worker goes on
        resp = {"error": "zygote: " + traceback.format_exc(limit=3)}
    write_msg(cfg.ctrl_out, resp)
    return 0


# ---------------------------------------------------------------- the zygote
def fork_manager() -> int:
    """The next run's manager, forked before its request exists."""
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = manage_one_run()
        finally:
            os._exit(code)
    return pid


def _unhide_proc() -> None:
    """bubblewrap covers parts of /proc (sys, irq, bus...) with read-only binds; the kernel only
    lets a run mount its own /proc when an uncovered one is visible. The runs' own /proc is what
    hides this zygote from them, so uncover ours (in our private mount namespace)."""
    try:
        with open("/proc/self/mounts") as fh:
            targets = [line.split()[1] for line in fh if line.split()[1].startswith("/proc/")]
    except OSError:
        return
    for t in sorted(targets, key=len, reverse=True):
        _libc.umount2(t.encode(), MNT_DETACH)


def preload_names() -> tuple[str, ...]:
    """What the launcher asked this worker to import (the whole stack unless it said otherwise);
    only names of the stack, whatever else the variable holds."""
    raw = os.environ.pop(PRELOAD_ENV, None)
    if raw is None:
        return SCIENTIFIC_STACK
    try:
        asked = json.loads(raw)
    except ValueError:
        return SCIENTIFIC_STACK
    return tuple(n for n in SCIENTIFIC_STACK if isinstance(asked, list) and n in asked)


def preload() -> list[str]:
    cache = os.environ.pop("PHYSLAB_ZYGOTE_MPLCACHE", "")
    mine = os.environ.get("MPLCONFIGDIR", "")
    if cache and mine and os.path.isdir(cache):  # a writable copy of the prebuilt font list
        import shutil

        shutil.copytree(cache, mine, dirs_exist_ok=True)
    loaded = []
    for name in preload_names():
        try:
            __import__(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - a missing optional package is fine
            pass
    if "matplotlib.pyplot" in loaded:  # load fonts and the Agg renderer once, not per run
        try:
            plt = sys.modules["matplotlib.pyplot"]
            fig = plt.figure()
            fig.gca().plot([0, 1], [0, 1])
            fig.gca().set_title("x")
            fig.canvas.draw()
            plt.close(fig)
        except Exception:  # noqa: BLE001
            pass
    return loaded


def configure() -> None:
    """Read what the launcher says about this worker (environment variables it set)."""
    cfg.ns = os.environ.pop("PHYSLAB_ZYGOTE_NS", "0") == "1"
    cfg.run_root = os.environ.pop("PHYSLAB_ZYGOTE_RUNROOT", "/tmp")
    cfg.run_env = json.loads(os.environ.pop("PHYSLAB_ZYGOTE_RUNENV", "{}"))
    cfg.rebind = json.loads(os.environ.pop("PHYSLAB_ZYGOTE_REBIND", "[]"))
    if os.environ.pop("PHYSLAB_ZYGOTE_RUNNS", "0") == "1" and not cfg.ns:  # the launcher's probe said so
        cfg.run_ns = "root" if os.geteuid() == 0 else "user"
    if not cfg.ns:
        if not cfg.run_ns:  # a run's own PID namespace ends all its processes: no cgroup needed
            cfg.cgroup = _make_cgroup()
        if os.geteuid() == 0:
            cfg.run_uid = RUN_UID_BASE + os.getpid()
            cfg.hidden_paths = [p for p in sys.path if p and os.path.isdir(p) and not _others_can_read(p)]


def main() -> None:
    cfg.ctrl_in, cfg.ctrl_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    configure()
    loaded = preload()
    reach_hidden_paths()
    _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # runs that can see us cannot ptrace/read us
    if cfg.ns:
        _unhide_proc()
    import gc

    gc.collect()
    gc.freeze()  # keep the preloaded heap shared with the forked runs (no GC copy-on-write)
    try:
        # The zygote itself never reads the control pipe: each run's manager does (see above). It
        # writes only "ready" (once) and, after each run, "idle": the run's manager has replied and
        # exited, everything the run started is reaped, and the next run's manager is waiting.
        pid = fork_manager()
        write_msg(cfg.ctrl_out, {"ready": True, "pid": os.getpid(), "preloaded": loaded,
                                 "run_uid": cfg.run_uid, "cgroup": cfg.cgroup, "run_ns": cfg.run_ns})
        while True:
            _, st = os.waitpid(pid, 0)
            reap_all()
            if not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
                return  # the control pipe closed, or a manager died mid-reply: the pool replaces us
            pid = fork_manager()
            write_msg(cfg.ctrl_out, {"idle": True})
    finally:
        if cfg.cgroup is not None:
            _cgroup_kill()
            try:
                os.rmdir(cfg.cgroup)
            except OSError:
                pass


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe-namespaces"]:  # the launcher, once: can runs have their namespaces?
        print(probe_run_namespaces() or "none")
    else:
        main()
