"""One run inside the worker: B (the run's init: work dir, files in, watching C, files out) and C
(the user's code). Standard library only."""

from __future__ import annotations

import base64
import fnmatch
import io
import os
import select
import signal
import stat
import sys
import tempfile
import time
import traceback

from _zygote_common import (
    PR_SET_PDEATHSIG,
    SANDBOX_UID,
    _pids,
    _prctl,
    _proc_stat,
    _write_file,
    b64,
    bad_name,
    cfg,
    write_msg,
)
from _zygote_confine import drop_privileges, kill_run_tree, mount_own_proc, set_rlimits


# ---------------------------------------------------------------- the user's code (C)
def run_user_code(req: dict, work: str, fds: dict, supervisors: int = 0) -> None:
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
        os.environ.update(cfg.run_env)
        os.environ["HOME"] = work
        os.environ["TMPDIR"] = work
        os.environ["MPLCONFIGDIR"] = os.path.join(work, ".config", "matplotlib")
        set_rlimits(req["limits"], supervisors)
        if cfg.cgroup is not None:
            _write_file(os.path.join(cfg.cgroup, "cgroup.procs"), "0")
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
        exec(code, module.__dict__)  # this *is* the sandboxed run
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
    here = os.path.dirname(os.path.abspath(__file__))
    rebound = tuple(t for _, t in cfg.rebind)

    def keep(p: str) -> bool:  # not the zygote's own directory, cwd or scratch space
        if not p or p in (here, os.getcwd()):
            return False
        return not p.startswith(cfg.run_root + "/") or p.startswith(rebound)

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
    own_proc = namespaced and mount_own_proc()
    if namespaced and not own_proc and not cfg.ns:  # rlimit: the host's /proc lists every process
        write_msg(res_w, {"error": "the run's own /proc could not be mounted"})
        os._exit(0)
    own_tmp = namespaced and cfg.ns  # bwrap: the run's own tmpfs as /tmp
    if own_tmp:
        work = os.path.join(cfg.run_root, "work")
        os.makedirs(work, exist_ok=True)
    else:  # a new directory each run (B's pid is 1 in every run that has its own PID namespace)
        work = tempfile.mkdtemp(prefix="run-", dir=cfg.run_root)
    os.chmod(work, 0o700 if cfg.run_uid is not None else 0o777)
    error = _write_inputs(req, work)
    if error:
        write_msg(res_w, {"error": error})
        _remove(work, own_tmp)
        os._exit(0)
    if own_tmp:
        _own_work_dir(work, SANDBOX_UID)
    elif cfg.run_uid is not None:
        _own_work_dir(work, cfg.run_uid)

    pid = os.fork()
    if pid == 0:
        fds = dict(fds)
        fds["extra"] = [res_w]
        # in a user namespace of the run's own, its manager (M) and init (B) share the code's uid
        run_user_code(req, work, fds, 2 if namespaced and (cfg.ns or cfg.run_ns == "user") else 0)
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
            _kill_the_rest()
        if pidfd is not None:
            select.select([pidfd], [], [], 0.005)
        else:
            time.sleep(0.002)

    # nothing the code started may run on while its files are collected
    if namespaced:
        _kill_the_rest()
    else:
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
    _remove(work, own_tmp)
    os._exit(0)


def _kill_the_rest() -> None:
    """B, pid 1 of the run's PID namespace: kill(-1) reaches every other process of the run and
    nothing outside it, in one pass (a process with a pending SIGKILL cannot finish a fork)."""
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass


def _remove(work: str, own_tmp: bool) -> None:
    if not own_tmp:  # a bwrap run's own tmpfs goes with its mount namespace
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
