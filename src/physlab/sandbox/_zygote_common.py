"""What every part of the sandbox worker shares: system constants, the launcher's settings, the
control protocol and the check of input file names (the host imports ``bad_name`` from here, so
this module imports nothing of its siblings and does nothing when imported). Standard library
only: the worker files run *inside* the sandbox (see ``_zygote.py``)."""

from __future__ import annotations

import base64
import ctypes
import json
import os
import struct

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x20000000, 0x08000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
MNT_DETACH = 2
SANDBOX_UID = 1000  # the uid the user's code sees inside a nested user namespace
RUN_UID_BASE = 1_600_000_000  # rlimit backend as root: user code runs as RUN_UID_BASE + worker pid

# What a warm worker imports before its first run, so that each run forked from it starts with them
# loaded: the scientific stack the lab's code uses, and the grader's reader of written (LaTeX)
# answers. A pool may ask for fewer (``physlab.sandbox.preload``): a one-run command pays only for
# what its run uses. The launcher passes the choice in PRELOAD_ENV (a JSON list of these names).
SCIENTIFIC_STACK = ("sympy", "numpy", "scipy", "scipy.integrate", "scipy.special", "scipy.linalg",
                    "scipy.optimize", "mpmath", "matplotlib", "matplotlib.pyplot",
                    "latex2sympy2_extended", "pint")
PRELOAD_ENV = "PHYSLAB_ZYGOTE_PRELOAD"

_libc = ctypes.CDLL(None, use_errno=True)
_HDR = struct.Struct(">Q")
MAX_REQUEST = 512 * 1024 * 1024


class Config:
    """What the launcher told this worker; set once by the zygote before its first fork."""

    ns = False  # per-run namespaces inside bubblewrap's (bwrap backend)
    run_ns: str | None = None  # rlimit backend: "root" or "user", each run's own PID/mount/IPC/network namespaces
    run_root = "/tmp"
    run_env: dict = {}
    rebind: list = []  # [[staging, target]]: Python roots under run_root, bound again over each run's tmpfs
    run_uid: int | None = None  # rlimit backend as root: the unprivileged uid runs use
    cgroup: str | None = None  # rlimit backend without namespaces: a cgroup for the run's processes
    hidden_paths: list = []  # sys.path entries run_uid cannot reach (a pyenv under a 0700 home)
    ctrl_in = ctrl_out = -1  # the control pipe (read by each run's manager, never by the zygote)


cfg = Config()


def _prctl(*args: int) -> int:
    """prctl(2) where the C library has it (Linux); elsewhere (macOS) a no-op."""
    fn = getattr(_libc, "prctl", None)
    return fn(*args) if fn is not None else -1


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


# ---------------------------------------------------------------- processes, files, mounts
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
