"""Warm sandbox worker ("zygote"). Standard library only: this file runs *inside* the sandbox.

It pre-imports the scientific stack once; then, for every run, it forks a one-run manager *before*
any request arrives, and the manager reads the request:

    zygote ── M  (reads ONE request; new user+mount+PID+IPC namespaces, fresh /tmp and /dev/shm;
              │   relays the run's output, enforces the deadline, writes the reply, exits)
              └─ B  (pid 1 of the run's own PID namespace: reaps, counts processes, collects files)
                  └─ C  (the user's code: fresh work dir, rlimits, scrubbed env, clean __main__)

The guarantee between runs is "the worker reads no request data": the zygote never reads a
request, an input file or a run's output, so the memory every run is forked from holds nothing of
any earlier run (a run that scans its own heap finds only its own request). Whatever a run touched
(its manager, its mounts, its IPC namespace, its /tmp) ends with its manager. When B exits the
kernel kills everything left in the run's PID namespace, and the run cannot see or signal the zygote.

Without nested namespaces (the rlimit backend) there is no such boundary: runs get a process tree
killed by cgroup (where one can be made), else by the run's own uid (when the worker is root:
user code runs as an unprivileged uid of its own), else by session + child-subreaper sweep.
"""

from __future__ import annotations

import base64
import ctypes
import errno
import fnmatch
import io
import json
import os
import select
import signal
import stat
import struct
import sys
import time
import traceback

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x20000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
MNT_DETACH = 2
SANDBOX_UID = 1000  # the uid the user's code sees inside a nested user namespace
RUN_UID_BASE = 1_600_000_000  # rlimit backend as root: user code runs as RUN_UID_BASE + worker pid
EXIT_EOF = 3  # a manager that found the control pipe closed: the worker stops

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(*args: int) -> int:
    """prctl(2) where the C library has it (Linux); elsewhere (macOS) a no-op."""
    fn = getattr(_libc, "prctl", None)
    return fn(*args) if fn is not None else -1


_HDR = struct.Struct(">Q")
MAX_REQUEST = 512 * 1024 * 1024

# Set once in main() from the environment the launcher gave us (nothing read at import, so the
# host can import bad_name() without side effects).
NS_WANTED = False  # per-run namespaces (bwrap backend)
RUN_ROOT = "/tmp"
RUN_ENV: dict = {}
REBIND: list = []  # [[staging, target]]: Python roots under RUN_ROOT, bound again over each run's tmpfs
RUN_UID: int | None = None  # rlimit backend as root: the unprivileged uid runs use
CGROUP: str | None = None  # rlimit backend: a cgroup for the run's processes, when one can be made
HIDDEN_PATHS: list = []  # sys.path entries RUN_UID cannot reach (a pyenv under a 0700 home)
CTRL_IN = CTRL_OUT = -1


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


def bad_name(name: object) -> str | None:
    """Why ``name`` cannot be an input file's path in the work dir (None when it can). Also the
    host's check (physlab.sandbox.core), so a request and the worker agree on what is refused."""
    if not isinstance(name, str) or not name:
        return "expected a non-empty relative path"
    if "\x00" in name:
        return "contains a NUL character"
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts:
        return "expected a relative path inside the work dir"
    if any(p in ("", ".") for p in parts):
        return "expected a file path (no empty or '.' parts, no trailing '/')"
    return None


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
    """Kill whatever a run left behind as our orphans (we are a child subreaper), then reap."""
    me = os.getpid()
    for _ in range(20):
        victims = []
        for pid in _pids():
            if pid in (me, 1):
                continue
            st = _proc_stat(pid)
            if st is not None and st[0] == me:
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


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    rc = _libc.mount(src.encode() if src else None, target.encode(),
                     fstype.encode() if fstype else None, flags, data.encode() if data else None)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {target}: {os.strerror(e)}")


def enter_namespaces(disk_mb: int) -> bool:
    """In M: new user + mount + PID + IPC namespaces, and for the run a fresh size-limited tmpfs
    as /tmp that also backs /dev/shm (so shared memory counts toward the run's disk limit).
    False if the kernel refuses the namespaces."""
    uid, gid = os.geteuid(), os.getegid()
    _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the uid_map files of a non-dumpable process are not ours
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) != 0:
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
            shm = os.path.join(RUN_ROOT, ".dev-shm")
            os.mkdir(shm)
            os.chmod(shm, 0o1777)
            _mount(shm, "/dev/shm", None, MS_BIND, None)
        for staging, target in REBIND:  # an interpreter environment living under /tmp (a venv)
            os.makedirs(target, exist_ok=True)
            _mount(staging, target, None, MS_BIND | MS_REC, None)
            _read_only(target)
    except OSError as exc:
        os.write(2, f"physlab-zygote: namespace setup failed: {exc}\n".encode())
        os._exit(70)
    return True


def _read_only(target: str) -> None:
    """Make a bind mount read-only (it usually is already: a bind of a read-only mount that the
    kernel locked when it entered this namespace)."""
    try:
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    except OSError:
        if not os.statvfs(target).f_flag & os.ST_RDONLY:
            raise


def drop_privileges() -> None:
    """In C: an unprivileged uid of its own (rlimit backend as root), no capabilities, and no
    privilege gain through execve."""
    if RUN_UID is not None:
        os.setgroups([])
        os.setgid(RUN_UID)  # as root: real, effective and saved ids
        os.setuid(RUN_UID)
    _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)

    class Hdr(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    if hasattr(_libc, "capset"):  # Linux
        _libc.capset(ctypes.byref(Hdr(0x20080522, 0)), (Data * 2)())


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


# ---------------------------------------------------------------- killing a run's whole tree
def _cgroup_kill() -> None:
    if CGROUP is None:
        return
    try:
        _write_file(os.path.join(CGROUP, "cgroup.kill"), "1")
    except OSError:  # a kernel before cgroup.kill: kill what cgroup.procs lists
        for _ in range(20):
            try:
                with open(os.path.join(CGROUP, "cgroup.procs")) as fh:
                    pids = [int(p) for p in fh.read().split()]
            except (OSError, ValueError):
                return
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass


def _uid_kill() -> None:
    """Every process of the run's own uid (no other process has it): kill(-1) from that uid
    reaches exactly them, whatever session or parent they moved to."""
    if RUN_UID is None:
        return
    pid = os.fork()
    if pid == 0:
        try:
            # kill(-1) walks the process list under the lock fork needs, and a process with a
            # pending SIGKILL cannot finish a fork: one pass reaches all (a second for safety)
            os.setuid(RUN_UID)
            for _ in range(2):
                os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kill_run_tree() -> None:
    _cgroup_kill()
    _uid_kill()


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
        if CGROUP is not None:
            _write_file(os.path.join(CGROUP, "cgroup.procs"), "0")
        reach_hidden_paths()
        if NS_WANTED or RUN_UID is not None:
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


def reach_hidden_paths() -> None:
    """Before C gives up root (rlimit backend): import directories the run's uid cannot reach
    (an interpreter under a home only root may enter) become /proc/self/fd/N paths through a
    descriptor opened now, in sys.path and in the packages already imported, so later imports
    still work and nothing else of that home opens."""
    if RUN_UID is None or not HIDDEN_PATHS:
        return
    moved = {}
    for i, entry in enumerate(sys.path):
        if entry in HIDDEN_PATHS:
            try:
                fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            sys.path[i] = moved[entry + "/"] = f"/proc/self/fd/{fd}"
    prefixes = tuple(sorted(moved, key=len, reverse=True))
    for module in list(sys.modules.values()):
        path = getattr(module, "__path__", None)
        if type(path) is not list:  # namespace packages recompute theirs from sys.path
            continue
        for i, p in enumerate(path):
            hit = next((h for h in prefixes if p.startswith(h)), None)
            if hit is not None:
                path[i] = moved[hit] + "/" + p[len(hit):]


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback as ``python main.py`` would print it: without this file's frame (the
    ``exec`` that runs the code), so the first frame shown is the user's own."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def _fresh_state(work: str) -> None:
    sys.argv = ["main.py"]
    here = os.path.dirname(os.path.abspath(__file__))
    rebound = tuple(t for _, t in REBIND)

    def keep(p: str) -> bool:  # not the zygote's own directory, cwd or scratch space
        if not p or p in (here, os.getcwd()):
            return False
        return not p.startswith(RUN_ROOT + "/") or p.startswith(rebound)

    sys.path[:] = [work] + [p for p in sys.path if keep(p)]
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
def _write_inputs(req: dict, work: str) -> str:
    """The input files into the work dir; '' or why one could not be written (one line)."""
    with open(os.path.join(work, "main.py"), "w", encoding="utf-8") as fh:
        fh.write(req["code"])
    for name, data in (req.get("files") or {}).items():
        why = bad_name(name)
        if why:
            return f"input file {name!r}: {why}"
        path = os.path.join(work, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(base64.b64decode(data))
        except (OSError, ValueError) as exc:
            return f"input file {name!r}: cannot be written ({getattr(exc, 'strerror', None) or exc})"
    return ""


def _own_work_dir(work: str, owner: int) -> None:
    for root, dirs, files in os.walk(work):
        for n in [root] + [os.path.join(root, x) for x in dirs + files]:
            try:
                os.chown(n, owner, owner, follow_symlinks=False)
            except OSError:
                pass


def run_init(req: dict, fds: dict, namespaced: bool) -> None:
    """B: prepare the work dir, start C, watch it, collect files, report to M."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The run's own session: signals the code sends its process group (which, unlike pids, reach
    # across PID namespaces) stop at B; M and the zygote are not in it.
    os.setsid()
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
    os.chmod(work, 0o700 if RUN_UID is not None else 0o777)
    error = _write_inputs(req, work)
    if error:
        write_msg(res_w, {"error": error})
        _remove(work, namespaced)
        os._exit(0)
    if namespaced:
        _own_work_dir(work, SANDBOX_UID)
    elif RUN_UID is not None:
        _own_work_dir(work, RUN_UID)

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

    if not namespaced:  # nothing the code started may run on while its files are collected
        kill_run_tree()
        try:
            os.killpg(os.getpgrp(), 0)
            for p in _pids():
                st = _proc_stat(p)
                if st and st[1] == os.getpgrp() and p != os.getpid():
                    os.kill(p, signal.SIGKILL)
        except OSError:
            pass

    files, files_truncated = collect(work, req, int(limits["max_return_file_bytes"]))
    write_msg(res_w, {"status": status, "nproc_hit": nproc_hit, "files": files,
                      "files_truncated": files_truncated, "namespaced": namespaced,
                      "own_proc": own_proc})
    _remove(work, namespaced)
    os._exit(0)


def _remove(work: str, namespaced: bool) -> None:
    if not namespaced:  # a namespaced run's tmpfs goes with its mount namespace
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def collect(work: str, req: dict, cap: int) -> tuple[dict, bool]:
    """Regular files of the work dir matching the patterns, never through a symbolic link."""
    files, total, files_truncated = {}, 0, False
    given = req.get("files") or {}
    for pattern in req.get("collect") or []:
        for root, dirs, names in os.walk(work):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            for n in names:
                path = os.path.join(root, n)
                rel = os.path.relpath(path, work)
                if rel in files or rel == "main.py" and "main.py" not in given and pattern != "main.py":
                    continue
                if not fnmatch.fnmatch(rel, pattern):
                    continue
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                except OSError:
                    continue
                with os.fdopen(fd, "rb") as fh:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    if total + st.st_size > cap:
                        files_truncated = True
                        continue
                    data = fh.read(cap - total + 1)
                total += len(data)
                files[rel] = b64(data)
    return files, files_truncated


# ---------------------------------------------------------------- one run's manager (M)
def serve_one(req: dict) -> dict:
    limits = req["limits"]
    cap = int(limits["max_output_bytes"])
    for name in req.get("files") or {}:
        why = bad_name(name)
        if why:
            return {"error": f"input file {name!r}: {why}"}
    namespaced = NS_WANTED and enter_namespaces(int(limits.get("max_disk_mb", 256)))
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
            run_init(req, fds, namespaced)
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
    # What is kept of each pipe. The user's code holds the write ends of stdout, stderr and the
    # status pipe: beyond these caps its writes are read and dropped, so nothing it writes grows
    # this process (the result pipe is B's, sized by the returned files' cap).
    keep = {out_r: cap, err_r: cap, st_r: 1,
            res_r: int(limits["max_return_file_bytes"]) * 4 // 3 + (1 << 20)}
    bufs = {fd: bytearray() for fd in keep}
    seen = {fd: 0 for fd in keep}
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
            seen[fd] += len(chunk)
            room = keep[fd] - len(bufs[fd])
            if room > 0:
                bufs[fd] += chunk[:room]
    duration = time.monotonic() - start
    if in_w >= 0:
        os.close(in_w)
    try:
        os.kill(pid, signal.SIGKILL)  # namespaced: B is the run's init, its end is the run's end
    except OSError:
        pass
    if not namespaced:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        kill_run_tree()
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass

    res = {}
    if bufs[res_r] and seen[res_r] <= keep[res_r]:
        try:
            n = _HDR.unpack(bytes(bufs[res_r][: _HDR.size]))[0]
            res = json.loads(bytes(bufs[res_r][_HDR.size: _HDR.size + n]))
        except (ValueError, struct.error):
            res = {}
    if res.get("error"):
        return {"error": str(res["error"])}
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


def manage_one_run() -> int:
    """M: forked before the request exists; reads it, serves it, replies, and takes every trace
    of it (memory, mounts, IPC objects) with it when it exits."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        req = read_msg(CTRL_IN)
    except (EOFError, OSError):
        return EXIT_EOF
    try:
        resp = serve_one(req)
    except Exception:  # noqa: BLE001 - report, the worker goes on
        resp = {"error": "zygote: " + traceback.format_exc(limit=3)}
    write_msg(CTRL_OUT, resp)
    return 0


# ---------------------------------------------------------------- the zygote
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
        import shutil

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


def _others_can_read(path: str) -> bool:
    """Can a user with no relation to the owner list ``path`` (every parent searchable by others)?"""
    path = os.path.abspath(path)
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return False
        while path != "/":
            path = os.path.dirname(path)
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True


def _make_cgroup() -> str | None:
    """A cgroup (v2) of our own for the runs' processes, when this process may make one."""
    try:
        with open("/proc/self/cgroup") as fh:
            rel = next((line.strip()[3:] for line in fh if line.startswith("0::")), None)
        with open("/proc/self/mountinfo") as fh:
            base = next((line.split()[4] for line in fh if " - cgroup2 " in line), None)
    except OSError:
        return None
    if rel is None or base is None:
        return None
    path = os.path.join(base, rel.lstrip("/"), f"physlab-sandbox-{os.getpid()}")
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:  # usable only if a process of ours can be moved in (and back out)
        pid = os.fork()
        if pid == 0:
            try:
                _write_file(os.path.join(path, "cgroup.procs"), "0")
                os._exit(0)
            except OSError:
                os._exit(1)
        _, st = os.waitpid(pid, 0)
        if os.WEXITSTATUS(st) == 0:
            return path
    except OSError:
        pass
    try:
        os.rmdir(path)
    except OSError:
        pass
    return None


def configure() -> None:
    """Read what the launcher says about this worker (environment variables it set)."""
    global NS_WANTED, RUN_ROOT, RUN_ENV, REBIND, RUN_UID, CGROUP, HIDDEN_PATHS
    NS_WANTED = os.environ.pop("PHYSLAB_ZYGOTE_NS", "0") == "1"
    RUN_ROOT = os.environ.pop("PHYSLAB_ZYGOTE_RUNROOT", "/tmp")
    RUN_ENV = json.loads(os.environ.pop("PHYSLAB_ZYGOTE_RUNENV", "{}"))
    REBIND = json.loads(os.environ.pop("PHYSLAB_ZYGOTE_REBIND", "[]"))
    if not NS_WANTED:
        CGROUP = _make_cgroup()
        if os.geteuid() == 0:
            RUN_UID = RUN_UID_BASE + os.getpid()
            HIDDEN_PATHS = [p for p in sys.path if p and os.path.isdir(p) and not _others_can_read(p)]


def main() -> None:
    global CTRL_IN, CTRL_OUT
    CTRL_IN, CTRL_OUT = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    configure()
    loaded = preload()
    _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # runs that can see us cannot ptrace/read us
    if NS_WANTED:
        _unhide_proc()
    import gc

    gc.collect()
    gc.freeze()  # keep the preloaded heap shared with the forked runs (no GC copy-on-write)
    write_msg(CTRL_OUT, {"ready": True, "pid": os.getpid(), "preloaded": loaded,
                         "run_uid": RUN_UID, "cgroup": CGROUP})
    try:
        while True:
            # The zygote itself never reads the control pipe: each run's manager does (see above).
            pid = os.fork()
            if pid == 0:
                code = 70
                try:
                    code = manage_one_run()
                finally:
                    os._exit(code)
            while True:
                try:
                    _, st = os.waitpid(pid, 0)
                    break
                except InterruptedError:
                    continue
            if not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
                return  # the control pipe closed, or a manager died mid-reply: the pool replaces us
            if not NS_WANTED:
                kill_run_tree()
                sweep()
    finally:
        if CGROUP is not None:
            _cgroup_kill()
            try:
                os.rmdir(CGROUP)
            except OSError:
                pass


if __name__ == "__main__":
    main()
