"""How a sandbox worker is started: the bubblewrap command line, the scrubbed environment, and the
one-time choice of backend (bubblewrap when it works here, else the weaker rlimit-only fallback).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from physlab.errors import UserError

log = logging.getLogger("physlab.sandbox")

BACKENDS = ("auto", "bwrap", "rlimit")
ENV_VAR = "PHYSLAB_SANDBOX_BACKEND"
ZYGOTE_SRC = Path(__file__).with_name("_zygote.py")
ZYGOTE_IN_BOX = "/opt/physlab/zygote.py"
MPL_CACHE_IN_BOX = "/opt/physlab/mplcache"
RUN_ROOT_IN_BOX = "/tmp"


def python_executable() -> str:
    return os.path.realpath(sys.executable)


def python_roots() -> list[str]:
    """The Python installation the sandbox needs read-only: prefixes and site-packages dirs.
    Source checkouts on sys.path (e.g. an editable install of this project) are left out."""
    roots: list[str] = []
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix):
        roots.append(os.path.realpath(p))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p) and os.path.isdir(p):
            roots.append(os.path.realpath(p))
    roots.append(os.path.dirname(os.path.dirname(python_executable())))
    out: list[str] = []
    for r in sorted(set(roots), key=len):
        if r in ("/", "/usr") or r.startswith("/usr/"):
            continue  # /usr is bound anyway
        if not any(r == o or r.startswith(o + "/") for o in out):
            out.append(r)
    return out


def run_env() -> dict[str, str]:
    """The whole environment the user's code sees. Nothing of the caller's environment passes."""
    pybin = os.path.dirname(python_executable())
    return {
        "PATH": f"{pybin}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "0",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "USER": "sandbox",
    }


def zygote_env(backend: str, run_root: str) -> dict[str, str]:
    import json

    env = dict(run_env())
    env["HOME"] = run_root
    env["MPLCONFIGDIR"] = os.path.join(run_root, ".mpl-zygote")
    env["PHYSLAB_ZYGOTE_MPLCACHE"] = MPL_CACHE_IN_BOX if backend == "bwrap" else (mpl_cache() or "")
    env["PHYSLAB_ZYGOTE_RUNENV"] = json.dumps(run_env())
    env["PHYSLAB_ZYGOTE_RUNROOT"] = run_root
    if backend == "bwrap":
        env["PHYSLAB_ZYGOTE_NS"] = "1"
        env["PHYSLAB_ZYGOTE_SWEEP_ALL"] = "1"
    return env


def bwrap_argv(command: list[str], env: dict[str, str], *, zygote: bool = True) -> list[str]:
    """bubblewrap around ``command``: no network, own PID/IPC/UTS namespaces, read-only system and
    Python, a private tmpfs as the only writable place, no $HOME, no caller cwd, no /work."""
    bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
            "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        p = Path("/") / name
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "alternatives",
                 "mime.types", "matplotlibrc"):
        p = Path("/etc") / name
        if p.exists():
            argv += ["--ro-bind", str(p), str(p)]
    for root in python_roots():
        argv += ["--ro-bind", root, root]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", RUN_ROOT_IN_BOX]
    if zygote:
        argv += ["--ro-bind", str(ZYGOTE_SRC), ZYGOTE_IN_BOX]
        cache = mpl_cache()
        if cache:
            argv += ["--ro-bind", cache, MPL_CACHE_IN_BOX]
    argv += ["--remount-ro", "/", "--chdir", RUN_ROOT_IN_BOX, "--clearenv"]
    for k, v in env.items():
        argv += ["--setenv", k, v]
    return argv + ["--"] + command


def _pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


_probe_lock = threading.Lock()
_mpl_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _mpl_cache_cached() -> str | None:
    """Matplotlib's font list, built once per machine by our own (trusted) code outside the
    sandbox. Without it every fresh worker spends seconds running fc-list to rebuild it."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    cache = os.path.join(base, "physlab", "matplotlib")
    try:
        os.makedirs(cache, exist_ok=True)
        if not any(n.startswith("fontlist") for n in os.listdir(cache)):
            env = {"PATH": "/usr/bin:/bin", "MPLCONFIGDIR": cache, "MPLBACKEND": "Agg", "HOME": cache}
            subprocess.run([python_executable(), "-I", "-c", "import matplotlib.font_manager"],
                           env=env, cwd=cache, capture_output=True, timeout=120)
        return cache
    except (OSError, subprocess.TimeoutExpired):
        return None


def mpl_cache() -> str | None:
    with _mpl_lock:
        return _mpl_cache_cached()


@functools.lru_cache(maxsize=1)
def bwrap_works() -> tuple[bool, str]:
    """Probe once per process: can we start Python inside bubblewrap here?"""
    if not shutil.which("bwrap") and not os.path.exists("/usr/bin/bwrap"):
        return False, "bubblewrap (bwrap) is not installed"
    argv = bwrap_argv([python_executable(), "-I", "-c", "import os; print(os.getpid())"],
                      run_env(), zygote=False)
    try:
        out = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap failed to start: {exc}"
    if out.returncode != 0:
        msg = out.stderr.decode(errors="replace").strip().splitlines()
        return False, f"bubblewrap does not work here: {msg[-1] if msg else out.returncode}"
    return True, ""


_warned = False


def resolve_backend(backend: str | None) -> str:
    """auto → bwrap if it works here, else rlimit (announced once, loudly, as weaker)."""
    global _warned
    choice = (backend or "auto").strip().lower()
    if choice == "auto":
        choice = (os.environ.get(ENV_VAR) or "auto").strip().lower()
        if choice not in BACKENDS:
            raise UserError(f"expected one of {', '.join(BACKENDS)}, got {choice!r}", field=ENV_VAR)
    if choice not in BACKENDS:
        raise UserError(f"sandbox backend: expected one of {', '.join(BACKENDS)}, got {choice!r}")
    if choice == "bwrap":
        ok, why = bwrap_works()
        if not ok:
            raise UserError(f"sandbox backend 'bwrap' requested but {why}")
        return "bwrap"
    if choice == "auto":
        with _probe_lock:
            ok, why = bwrap_works()
        if ok:
            return "bwrap"
        if not _warned:
            _warned = True
            msg = (f"physlab sandbox: {why}; falling back to the rlimit backend, which is WEAKER "
                   "(no network, filesystem or PID isolation; only limits, a scrubbed environment "
                   "and a temporary directory)")
            log.warning(msg)
            print(msg, file=sys.stderr)
        return "rlimit"
    if not _warned:
        _warned = True
        log.warning("physlab sandbox: rlimit backend selected; it is WEAKER than bubblewrap "
                    "(no network, filesystem or PID isolation)")
    return "rlimit"


# The kernel's parent-death signal (our preexec prctl, and bwrap's --die-with-parent) fires when
# the *thread* that forked the worker exits, not the process. Runs come from short-lived threads,
# so every worker is forked from this one long-lived thread instead.
_spawner = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="physlab-sandbox-spawn")


def start_zygote(backend: str) -> tuple[subprocess.Popen, str | None]:
    """Start one warm worker. Returns the process and (rlimit backend) its private directory."""
    return _spawner.submit(_start_zygote, backend).result()


def _start_zygote(backend: str) -> tuple[subprocess.Popen, str | None]:
    python = python_executable()
    if backend == "bwrap":
        env = zygote_env("bwrap", RUN_ROOT_IN_BOX)
        argv = bwrap_argv([python, "-I", ZYGOTE_IN_BOX], env)
        cwd, private = "/", None
        proc_env = {"PATH": "/usr/bin:/bin"}
    else:
        import tempfile

        private = tempfile.mkdtemp(prefix="physlab-sb-")
        os.chmod(private, 0o700)
        env = zygote_env("rlimit", private)
        argv = [python, "-I", str(ZYGOTE_SRC)]
        cwd, proc_env = private, env
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None if os.environ.get("PHYSLAB_SANDBOX_DEBUG") else subprocess.DEVNULL,
                            cwd=cwd, env=proc_env, start_new_session=True, preexec_fn=_pdeathsig,
                            close_fds=True)
    return proc, private
