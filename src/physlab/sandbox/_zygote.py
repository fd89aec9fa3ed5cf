"""Warm sandbox worker ("zygote"). Standard library only: this file runs *inside* the sandbox.

It pre-imports the scientific stack once, then serves runs one at a time over a length-prefixed
JSON protocol on fds 0/1 (moved to private fds at start). For each run it forks:

    zygote ── A  (setsid; tries unshare(user+mount+pid); mounts a fresh size-limited tmpfs /tmp)
              └─ B  (pid 1 of the run's own PID namespace: reaps, counts processes, collects files)
                  └─ C  (the user's code: fresh work dir, rlimits, scrubbed env, clean __main__)

When B exits the kernel kills everything left in the run's PID namespace, so nothing a run starts
outlives it, and the run cannot see or signal the zygote. Without nested namespaces (the rlimit
backend, or a kernel that refuses them) the zygote falls back to a process group + child
subreaper sweep. The zygote also wipes its writable areas after every run.
"""

from __future__ import annotations

import base64
import ctypes
import fnmatch
import io
import json
import os
import select
import shutil
import signal
import struct
import sys
import time
import traceback

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
MNT_DETACH = 2
SANDBOX_UID = 1000  # the uid the user's code sees inside a nested user namespace

_libc = ctypes.CDLL(None, use_errno=True)
_HDR = struct.Struct(">Q")
MAX_REQUEST = 512 * 1024 * 1024

NS_WANTED = os.environ.pop("PHYSLAB_ZYGOTE_NS", "0") == "1"  # try per-run namespaces
SWEEP_ALL = os.environ.pop("PHYSLAB_ZYGOTE_SWEEP_ALL", "0") == "1"  # we own our PID namespace
RUN_ROOT = os.environ.pop("PHYSLAB_ZYGOTE_RUNROOT", "/tmp")
RUN_ENV = json.loads(os.environ.pop("PHYSLAB_ZYGOTE_RUNENV", "{}"))


# ---------------------------------------------------------------- protocol
def _read_exact(fd: int, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def read_msg(fd: int) -> dict:
    (n,) = _HDR.unpack(_read_exact(fd, _HDR.size))
    if n > MAX_REQUEST:
        raise ValueError("request too large")
    return json.loads(_read_exact(fd, n))


def write_msg(fd: int, obj: dict) -> None:
    data = json.dumps(obj).encode()
    data = _HDR.pack(len(data)) + data
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---------------------------------------------------------------- helpers
def _proc_stat(pid: int) -> tuple[int, int] | None:
    """(ppid, pgrp) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def _pids() -> list[int]:
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def sweep() -> None:
    """Kill whatever a run left behind, then reap it."""
    me = os.getpid()
    for _ in range(20):
        victims = []
        for pid in _pids():
            if pid in (me, 1):
                continue
            st = _proc_stat(pid)
            if st is None:
                continue
            if SWEEP_ALL or st[0] == me:  # our PID namespace holds only us; else our orphans
                victims.append(pid)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        if not victims:
            return
        time.sleep(0.002)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def wipe(path: str) -> None:
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        p = os.path.join(path, name)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(src: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    rc = _libc.mount(src.encode() if src else None, target.encode(),
                     fstype.encode() if fstype else None, flags, data.encode() if data else None)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {target}: {os.strerror(e)}")


def enter_namespaces(disk_mb: int) -> bool:
    """In A: new user + mount + PID namespaces and a fresh tmpfs for the run. False if refused."""
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0:
        return False
    try:
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/uid_map", f"{SANDBOX_UID} {uid} 1\n")
        _write_file("/proc/self/gid_map", f"{SANDBOX_UID} {gid} 1\n")
        try:
            _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
        except OSError:
            pass
        opts = f"size={disk_mb}m,mode=1777,nr_inodes=100000"
        _mount("tmpfs", RUN_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, opts)
        if os.path.isdir("/dev/shm"):
            try:
                _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64m,mode=1777")
            except OSError:
                pass
    except OSError as exc:
        os.write(2, f"physlab-zygote: namespace setup failed: {exc}\n".encode())
        os._exit(70)
    return True


def drop_privileges() -> None:
    """In C: no capabilities (they are only in the run's own user namespace, but still), and no
    privilege gain through execve."""
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)

    class Hdr(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    hdr = Hdr(0x20080522, 0)
    data = (Data * 2)()
    _libc.capset(ctypes.byref(hdr), data)


def set_rlimits(limits: dict) -> None:
    import resource

    mb = 1024 * 1024
    vsz = 0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    vsz = int(line.split()[1]) * 1024
    except OSError:
        pass
    # memory_mb is what the code may allocate on top of the warm interpreter (sympy, numpy, scipy
    # already mapped), so a 256 MB limit means 256 MB for the user's own data.
    mem = vsz + int(limits["memory_mb"]) * mb
    cpu = int(limits.get("cpu_s") or limits["timeout_s"] + 1)
    for res, val in (
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_CPU, max(1, cpu)),
        (resource.RLIMIT_FSIZE, int(limits["max_file_mb"]) * mb),
        (resource.RLIMIT_NPROC, int(limits["max_processes"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 1024),
    ):
        try:
            resource.setrlimit(res, (val, val))
        except (ValueError, OSError, OverflowError):  # beyond what the kernel takes: no lower limit
            pass


# ---------------------------------------------------------------- the user's code (C)
def run_user_code(req: dict, work: str, fds: dict) -> None:
    rc = 1
    try:
        os.dup2(fds["in_r"], 0)
        os.dup2(fds["out_w"], 1)
        os.dup2(fds["err_w"], 2)
        status_w = fds["status_w"]
        keep = {0, 1, 2, status_w}
        for fd in list(fds.values()) + list(fds.get("extra", [])):
            if isinstance(fd, int) and fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.set_inheritable(status_w, False)
        os.chdir(work)
        os.umask(0o022)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGALRM, signal.SIGUSR1,
                    signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ.clear()
        os.environ.update(RUN_ENV)
        os.environ["HOME"] = work
        os.environ["TMPDIR"] = work
        os.environ["MPLCONFIGDIR"] = os.path.join(work, ".config", "matplotlib")
        set_rlimits(req["limits"])
        if NS_WANTED:
            drop_privileges()
        sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                                       errors="backslashreplace", write_through=False)
        sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                                       errors="backslashreplace", line_buffering=True)
        _fresh_state(work)
    except BaseException:  # noqa: BLE001 - setup failure: report it as the run's stderr
        try:
            os.write(2, traceback.format_exc().encode())
        finally:
            os._exit(71)

    import atexit
    import types

    atexit._clear()  # only the code's own exit handlers run, not the zygote's
    main_path = os.path.join(work, "main.py")
    module = types.ModuleType("__main__")
    module.__file__ = main_path
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    try:
        code = compile(req["code"], main_path, "exec")
        exec(code, module.__dict__)  # noqa: S102 - this *is* the sandboxed run
        rc = 0
    except SystemExit as exc:
        if exc.code is None:
            rc = 0
        elif isinstance(exc.code, int):
            rc = exc.code
        else:
            print(exc.code, file=sys.stderr)
            rc = 1
    except MemoryError as exc:
        os.write(status_w, b"M")
        _print_user_traceback(exc)
        rc = 1
    except BaseException as exc:  # noqa: BLE001 - report any error like the interpreter would
        _print_user_traceback(exc)
        rc = 1
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(rc & 0xFF)


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback as ``python main.py`` would print it: without this file's frame (the
    ``exec`` that runs the code), so the first frame shown is the user's own."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def _fresh_state(work: str) -> None:
    sys.argv = ["main.py"]
    sys.path[:] = [work] + [p for p in sys.path if p and p != os.getcwd() and not p.startswith(RUN_ROOT)]
    sys.path_importer_cache.clear()
    import random

    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed()
        except Exception:  # noqa: BLE001
            pass


# ---------------------------------------------------------------- the run's init (B)
def _safe_rel(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return bool(name) and not name.startswith("/") and ".." not in parts


def run_init(req: dict, fds: dict, namespaced: bool) -> None:
    """B: prepare the work dir, start C, watch it, collect files, report to the zygote."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    res_w = fds["res_w"]
    limits = req["limits"]
    if namespaced:
        try:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
            own_proc = True
        except OSError:  # cannot have our own /proc: at least hide the zygote's
            own_proc = False
            try:
                _mount("tmpfs", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
            except OSError:
                pass
        work = os.path.join(RUN_ROOT, "work")
    else:
        own_proc = False
        work = os.path.join(RUN_ROOT, f"run-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o777)
    with open(os.path.join(work, "main.py"), "w", encoding="utf-8") as fh:
        fh.write(req["code"])
    for name, data in (req.get("files") or {}).items():
        if not _safe_rel(name):
            continue
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
    if namespaced:
        for root, dirs, files in os.walk(work):
            for n in dirs + files:
                try:
                    os.chown(os.path.join(root, n), SANDBOX_UID, SANDBOX_UID)
                except OSError:
                    pass

    pid = os.fork()
    if pid == 0:
        fds = dict(fds)
        fds["extra"] = [res_w]
        run_user_code(req, work, fds)
    for key in ("in_r", "out_w", "err_w", "status_w"):
        os.close(fds[key])

    max_procs = int(limits["max_processes"])
    status, nproc_hit = None, False
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while status is None:
        try:
            got, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if got == pid:
            status = st
            break
        if got:
            continue
        if own_proc and len(_pids()) - 1 > max_procs:  # B itself is not the run's process
            nproc_hit = True
            for p in _pids():
                if p != 1:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
        if pidfd is not None:
            select.select([pidfd], [], [], 0.005)
        else:
            time.sleep(0.002)

    if not namespaced:  # kill what the code left in our process group (A did setsid)
        try:
            os.killpg(os.getpgrp(), 0)
            for p in _pids():
                st = _proc_stat(p)
                if st and st[1] == os.getpgrp() and p not in (os.getpid(), os.getppid()):
                    os.kill(p, signal.SIGKILL)
        except OSError:
            pass

    files, total, files_truncated = {}, 0, False
    cap = int(limits["max_return_file_bytes"])
    for pattern in req.get("collect") or []:
        for root, dirs, names in os.walk(work):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            for n in names:
                path = os.path.join(root, n)
                rel = os.path.relpath(path, work)
                if rel in files or rel == "main.py" and "main.py" not in (req.get("files") or {}) and pattern != "main.py":
                    continue
                if not fnmatch.fnmatch(rel, pattern) or os.path.islink(path) or not os.path.isfile(path):
                    continue
                size = os.path.getsize(path)
                if total + size > cap:
                    files_truncated = True
                    continue
                with open(path, "rb") as fh:
                    data = fh.read(cap - total + 1)
                total += len(data)
                files[rel] = b64(data)
    write_msg(res_w, {"status": status, "nproc_hit": nproc_hit, "files": files,
                      "files_truncated": files_truncated, "namespaced": namespaced,
                      "own_proc": own_proc})
    if not namespaced:
        shutil.rmtree(work, ignore_errors=True)
    os._exit(0)


def run_outer(req: dict, fds: dict) -> None:
    """A: new session and (if allowed) namespaces, then B; reports B's end by exiting."""
    os.setsid()
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    namespaced = NS_WANTED and enter_namespaces(int(req["limits"].get("max_disk_mb", 256)))
    pid = os.fork()
    if pid == 0:
        run_init(req, fds, namespaced)
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _, st = os.waitpid(pid, 0)
    os._exit(1 if namespaced else 2)


# ---------------------------------------------------------------- the zygote (serving loop)
def serve_one(req: dict) -> dict:
    limits = req["limits"]
    cap = int(limits["max_output_bytes"])
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    fds = {"in_r": in_r, "out_w": out_w, "err_w": err_w, "res_w": res_w, "status_w": st_w}
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for fd in (in_w, out_r, err_r, res_r, st_r, CTRL_IN, CTRL_OUT):
            os.close(fd)
        try:
            run_outer(req, fds)
        finally:
            os._exit(72)
    for fd in fds.values():
        os.close(fd)

    stdin = base64.b64decode(req["stdin"]) if req.get("stdin") else b""
    if stdin:
        os.set_blocking(in_w, False)
    else:
        os.close(in_w)
        in_w = -1
    bufs = {out_r: bytearray(), err_r: bytearray(), res_r: bytearray(), st_r: bytearray()}
    seen = {out_r: 0, err_r: 0}
    open_r = set(bufs)
    deadline = start + float(limits["timeout_s"])
    timed_out = False
    grace_end = None
    while open_r:
        now = time.monotonic()
        if res_r not in open_r and grace_end is None:
            grace_end = now + 0.5  # B is gone: the rest is buffered or about to close
        end = min(deadline, grace_end) if grace_end else deadline
        if now >= end:
            if grace_end is None or now >= deadline:
                timed_out = grace_end is None
            break
        wlist = [in_w] if in_w >= 0 else []
        r, w, _ = select.select(list(open_r), wlist, [], end - now)
        if w:
            try:
                n = os.write(in_w, stdin[:65536])
                stdin = stdin[n:]
            except BlockingIOError:
                pass
            except OSError:
                stdin = b""
            if not stdin:
                os.close(in_w)
                in_w = -1
        for fd in r:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_r.discard(fd)
                continue
            if fd in seen:
                seen[fd] += len(chunk)
                room = cap - len(bufs[fd])
                if room > 0:
                    bufs[fd] += chunk[:room]
            else:
                bufs[fd] += chunk
    duration = time.monotonic() - start
    if in_w >= 0:
        os.close(in_w)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    for fd in bufs:
        os.close(fd)
    sweep()
    if NS_WANTED:
        wipe(RUN_ROOT)
        wipe("/dev/shm")

    res = {}
    if bufs[res_r]:
        try:
            n = _HDR.unpack(bytes(bufs[res_r][: _HDR.size]))[0]
            res = json.loads(bytes(bufs[res_r][_HDR.size: _HDR.size + n]))
        except (ValueError, struct.error):
            res = {}
    status = res.get("status")
    exit_code, sig = None, None
    if isinstance(status, int) and not timed_out:
        if os.WIFEXITED(status):
            exit_code = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            exit_code = -sig
    limit_hit = None
    if timed_out:
        limit_hit = "timeout"
    elif res.get("nproc_hit"):
        limit_hit = "processes"
    elif b"M" in bufs[st_r]:
        limit_hit = "memory"
    elif sig == signal.SIGXCPU or sig == signal.SIGKILL and duration >= float(limits.get("cpu_s") or 1e9):
        limit_hit = "cpu"
    elif sig == signal.SIGXFSZ:
        limit_hit = "file_size"
    truncated = seen[out_r] > cap or seen[err_r] > cap
    if truncated and limit_hit is None:
        limit_hit = "output"
    error = ""
    if not res and not timed_out:
        error = "the run ended without reporting (its supervisor was killed)"
    return {
        "exit_code": exit_code, "signal": sig, "timed_out": timed_out, "duration_s": duration,
        "stdout": b64(bytes(bufs[out_r])), "stderr": b64(bytes(bufs[err_r])),
        "stdout_bytes": seen[out_r], "stderr_bytes": seen[err_r], "truncated": truncated,
        "files": res.get("files", {}), "files_truncated": bool(res.get("files_truncated")),
        "limit_hit": limit_hit, "error": error, "namespaced": bool(res.get("namespaced")),
    }


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


def preload() -> list[str]:
    cache = os.environ.pop("PHYSLAB_ZYGOTE_MPLCACHE", "")
    mine = os.environ.get("MPLCONFIGDIR", "")
    if cache and mine and os.path.isdir(cache):  # a writable copy of the prebuilt font list
        shutil.copytree(cache, mine, dirs_exist_ok=True)
    loaded = []
    for name in ("sympy", "numpy", "scipy", "scipy.integrate", "scipy.special", "scipy.linalg",
                 "scipy.optimize", "mpmath", "matplotlib", "matplotlib.pyplot"):
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


def main() -> None:
    global CTRL_IN, CTRL_OUT
    CTRL_IN, CTRL_OUT = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    loaded = preload()
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # runs that can see us cannot ptrace/read us
    if NS_WANTED:
        _unhide_proc()
    import gc

    gc.collect()
    gc.freeze()  # keep the preloaded heap shared with the forked runs (no GC copy-on-write)
    write_msg(CTRL_OUT, {"ready": True, "pid": os.getpid(), "preloaded": loaded})
    while True:
        try:
            req = read_msg(CTRL_IN)
        except (EOFError, OSError):
            return
        try:
            resp = serve_one(req)
        except Exception:  # noqa: BLE001 - report, keep serving
            resp = {"error": "zygote: " + traceback.format_exc(limit=3)}
        write_msg(CTRL_OUT, resp)


CTRL_IN = CTRL_OUT = -1

if __name__ == "__main__":
    main()
