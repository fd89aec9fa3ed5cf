"""How a sandbox worker is started: the bubblewrap command line, the scrubbed environment, and the
one-time choice of backend (bubblewrap when it works here, else the weaker rlimit-only fallback).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from physlab.errors import UserError
from physlab.sandbox._zygote_common import PRELOAD_ENV, SCIENTIFIC_STACK

BACKENDS = ("auto", "bwrap", "rlimit")
ENV_VAR = "PHYSLAB_SANDBOX_BACKEND"
ZYGOTE_SRC = Path(__file__).with_name("_zygote.py")  # with its _zygote_*.py modules beside it
WORKER_FILES = tuple(sorted(Path(__file__).parent.glob("_zygote*.py")))
WORKER_IN_BOX = "/opt/physlab"
ZYGOTE_IN_BOX = f"{WORKER_IN_BOX}/{ZYGOTE_SRC.name}"
MPL_CACHE_IN_BOX = "/opt/physlab/mplcache"
RUN_ROOT_IN_BOX = "/tmp"
PYROOTS_IN_BOX = "/opt/physlab/pyroots"


def python_executable() -> str:
    """The interpreter as this process was started (a venv's ``bin/python``, not the base
    interpreter it links to: the venv's pyvenv.cfg is found next to it)."""
    return os.path.abspath(sys.executable)


def python_roots() -> list[str]:
    """The Python installation the sandbox needs read-only, wherever it lives: prefixes (a venv
    and its base), site-packages dirs and the interpreter's own directory. Source checkouts on
    sys.path (e.g. an editable install of this project) are left out."""
    roots: list[str] = []
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix):
        roots.append(os.path.realpath(p))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p) and os.path.isdir(p):
            roots.append(os.path.realpath(p))
    for exe in (python_executable(), os.path.realpath(python_executable())):
        roots.append(os.path.dirname(os.path.dirname(exe)))
    out: list[str] = []
    for r in sorted(set(roots), key=len):
        if r in ("/", "/usr") or r.startswith("/usr/"):
            continue  # /usr is bound anyway
        if not any(r == o or r.startswith(o + "/") for o in out):
            out.append(r)
    return out


def own_package_dirs() -> list[str]:
    """PhysLab's own package directory when a bound Python root holds it (a regular install):
    its built-in suites carry reference answers, and nothing in the sandbox needs it."""
    pkg = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir))  # (this file is in physlab/sandbox/)
    return [pkg] if any(_under(pkg, r) for r in python_roots()) else []


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def python_mounts() -> tuple[list[str], list[list[str]]]:
    """bubblewrap arguments that mount the Python installation read-only wherever it lives, and
    the roots under the run's /tmp as [staging path, real path]: a run mounts a fresh tmpfs over
    /tmp, then binds those back from their staging path (a venv made under /tmp keeps its
    packages). PhysLab's own package directory is covered by an empty read-only tmpfs."""
    argv: list[str] = []
    rebind: list[list[str]] = []
    hide = own_package_dirs()
    for i, root in enumerate(python_roots()):
        targets = [root]
        if _under(root, RUN_ROOT_IN_BOX):
            staging = f"{PYROOTS_IN_BOX}/{i}"
            targets.append(staging)
            rebind.append([staging, root])
        for target in targets:
            argv += ["--ro-bind", root, target]
            for pkg in hide:
                if _under(pkg, root):
                    inside = target + pkg[len(root):]
                    argv += ["--tmpfs", inside, "--remount-ro", inside]
    return argv, rebind


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


def zygote_env(backend: str, run_root: str, rebind: list[list[str]] | None = None, *,
               preload: tuple[str, ...] = SCIENTIFIC_STACK) -> dict[str, str]:
    import json

    env = dict(run_env())
    env[PRELOAD_ENV] = json.dumps(list(preload))
    env["HOME"] = run_root
    env["MPLCONFIGDIR"] = os.path.join(run_root, ".mpl-zygote")
    env["PHYSLAB_ZYGOTE_MPLCACHE"] = MPL_CACHE_IN_BOX if backend == "bwrap" else (mpl_cache() or "")
    env["PHYSLAB_ZYGOTE_RUNENV"] = json.dumps(run_env())
    env["PHYSLAB_ZYGOTE_RUNROOT"] = run_root
    if backend == "rlimit":
        env["PHYSLAB_ZYGOTE_RUNNS"] = "1" if rlimit_namespaces() else "0"
    if backend == "bwrap":
        env["PHYSLAB_ZYGOTE_NS"] = "1"
        env["PHYSLAB_ZYGOTE_REBIND"] = json.dumps(rebind or [])
    return env


def bwrap_argv(command: list[str], env: dict[str, str], *, zygote: bool = True) -> list[str]:
    """bubblewrap around ``command``: no network, own PID/IPC/UTS namespaces, read-only system,
    /dev and Python, a private tmpfs as the only writable place, no $HOME, no caller cwd, no /work."""
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
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--tmpfs", RUN_ROOT_IN_BOX]
    argv += python_mounts()[0]  # after /tmp's tmpfs, so a venv under /tmp is mounted over it
    if zygote:
        for f in WORKER_FILES:
            argv += ["--ro-bind", str(f), f"{WORKER_IN_BOX}/{f.name}"]
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


def install_advice() -> str:
    """What to install where bubblewrap is missing (it is Linux-only)."""
    if sys.platform == "darwin" or not sys.platform.startswith("linux"):
        return ("bubblewrap is Linux-only: run PhysLab in a Linux VM or container and install it there "
                "(e.g. `brew install lima && limactl start`, then `sudo apt-get install bubblewrap` inside)")
    return "install it: `apt-get install bubblewrap` (Debian/Ubuntu), `dnf install bubblewrap` (Fedora)"


@functools.lru_cache(maxsize=1)
def bwrap_works() -> tuple[bool, str]:
    """Probe once per process: can we start Python inside bubblewrap here?"""
    if not shutil.which("bwrap") and not os.path.exists("/usr/bin/bwrap"):
        return False, f"bubblewrap (bwrap) is not installed; {install_advice()}"
    argv = bwrap_argv([python_executable(), "-I", "-c", "import os; print(os.getpid())"],
                      run_env(), zygote=False)
    try:
        out = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap failed to start: {exc}"
    if out.returncode != 0:
        msg = out.stderr.decode(errors="replace").strip().splitlines()
        return False, (f"bubblewrap does not work here ({msg[-1] if msg else out.returncode}); it needs "
                       "unprivileged user namespaces (in a container: --security-opt seccomp=unconfined)")
    return True, ""


@functools.lru_cache(maxsize=1)
def rlimit_namespaces() -> bool:
    """Can the rlimit backend give each run its own mount, PID, IPC and network namespaces here
    (as root directly, else through an unprivileged user namespace)? Probed once per process by
    the worker's own code, which tries one run's whole setup."""
    try:
        out = subprocess.run([python_executable(), "-I", str(ZYGOTE_SRC), "--probe-namespaces"],
                             capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                             env={"PATH": "/usr/bin:/bin"}, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() in ("root", "user")


def fallback_warning() -> str:
    """Exactly what the rlimit backend isolates and what it does not (one line)."""
    root, ns = os.geteuid() == 0, rlimit_namespaces()
    isolated = ["memory, CPU, process and file-size limits", "a scrubbed environment", "a private work directory"]
    if root:
        isolated.append("an unprivileged uid of its own (files only root may read and the memory, environment and "
                        "descriptors of other processes stay unreadable)")
    if ns:
        isolated.append("its own PID, IPC and network namespaces and /dev/shm (it sees only its own "
                        "processes, reaches no network, not even services on this machine's loopback, "
                        "and all its processes end with it)")
    else:
        isolated.append("its processes killed after each run")
    if ns:  # (_zygote_confine builds the run's root: what bubblewrap shows, nothing else)
        isolated.append("its own root (the system and the Python installation read-only, its work directory on a "
                        "tmpfs of its own: no problem file, no /sys, no home, nothing left for the next run)")
        exposed = ["this machine's host name (no UTS namespace of its own)"]
    else:
        exposed = ["the network (including services on this machine's loopback)",
                   "files readable by all users (problem files with their reference answers included)"]
        if not root:
            exposed.append("your files")
            exposed.append("its process limit (all of your processes count against it, other runs' included)")
        exposed.append("the process list in /proc" if root else
                       "the process list in /proc with your other processes' environment (API keys)")
        exposed.append("/tmp and other places it may write (a run can leave files there for the next)")
    return ("physlab sandbox: rlimit backend, WEAKER than bubblewrap. Isolated: " + ", ".join(isolated)
            + ". NOT isolated: " + ", ".join(exposed) + ".")


_warned = False


def resolve_backend(backend: str | None) -> str:
    """auto → bwrap if it works here, else rlimit (announced once, loudly, as weaker). As root,
    auto never falls back: running model code as root without bubblewrap must be chosen."""
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
        if os.geteuid() == 0:
            how = ("an unprivileged uid in its own PID, IPC and network namespaces, with a root of its own "
                   "holding only the system and the Python installation" if rlimit_namespaces() else
                   "an unprivileged uid; the network, the process list and files readable by all users "
                   "are not isolated")
            raise UserError(f"physlab sandbox: {why}; PhysLab runs as root and will not run model-written "
                            f"code without bubblewrap unless told to: set {ENV_VAR}=rlimit to accept the "
                            f"weaker rlimit backend (code runs as {how})")
    if not _warned:
        _warned = True
        print(fallback_warning() if choice == "rlimit" else f"physlab sandbox: {why}. {fallback_warning()}",
              file=sys.stderr)
    return "rlimit"


# The kernel's parent-death signal (our preexec prctl, and bwrap's --die-with-parent) fires when
# the *thread* that forked the worker exits, not the process. Runs come from short-lived threads,
# so every worker is forked from this one long-lived thread instead.
_spawner = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="physlab-sandbox-spawn")


def start_zygote(backend: str, preload: tuple[str, ...] = SCIENTIFIC_STACK) -> tuple[subprocess.Popen, str | None]:
    """Start one warm worker that imports ``preload`` (``physlab.sandbox.preload``). Returns the
    process and (rlimit backend) its private directory."""
    return _spawner.submit(_start_zygote, backend, preload).result()


def _start_zygote(backend: str, preload: tuple[str, ...] = SCIENTIFIC_STACK) -> tuple[subprocess.Popen, str | None]:
    python = python_executable()
    if backend == "bwrap":
        env = zygote_env("bwrap", RUN_ROOT_IN_BOX, python_mounts()[1], preload=preload)
        argv = bwrap_argv([python, "-I", ZYGOTE_IN_BOX], env)
        cwd, private = "/", None
        proc_env = {"PATH": "/usr/bin:/bin"}
    else:
        import tempfile

        private = tempfile.mkdtemp(prefix="physlab-sb-")
        os.chmod(private, 0o711)  # the runs' own uid (when we are root) enters its work dir here
        env = zygote_env("rlimit", private, preload=preload)
        argv = [python, "-I", str(ZYGOTE_SRC)]
        cwd, proc_env = private, env
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None if os.environ.get("PHYSLAB_SANDBOX_DEBUG") else subprocess.DEVNULL,
                            cwd=cwd, env=proc_env, start_new_session=True, preexec_fn=_pdeathsig,
                            close_fds=True)
    return proc, private
