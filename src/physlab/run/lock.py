"""The lock on a run directory: one process runs (or resumes) a run at a time.

The process running a run holds an exclusive lock on ``.physlab.lock`` in its directory for the
run's lifetime (:func:`lock_run`); a second one is refused in one line naming the first. The lock
is an flock on an open file description, so the kernel drops it when its holder dies, and a process
can hand it to a child it starts (the dashboard's resume) without a gap (:meth:`RunLock.hand_over`).
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from physlab.errors import UserError

LOCK = ".physlab.lock"
LOCK_FD_ENV = "PHYSLAB_RUN_LOCK_FD"  # a lock descriptor handed down by the process that started us


def open_by(path: Path) -> list[int]:
    """Processes that have ``path`` open (Linux: their /proc/PID/fd links); [] where unknown."""
    target = os.path.realpath(path)
    found = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    found.append(int(pid))
                    break
            except OSError:
                continue
    return found


class RunLock:
    """The exclusive lock on one run directory (see :func:`lock_run`)."""

    def __init__(self, root: Path, fd: int) -> None:
        self.root, self.fd = root, fd

    def _write_holder(self, pid: int) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{pid}\n".encode(), 0)

    def hand_over(self, pid: int) -> None:
        """A child started with this descriptor (``pass_fds`` and ``LOCK_FD_ENV``) holds the lock
        now: name it as the holder and close our copy (the lock stays with the child's)."""
        self._write_holder(pid)
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def release(self) -> None:
        if self.fd >= 0:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            self.close()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _inherited(path: Path) -> int | None:
    """The lock descriptor our parent handed us for ``path``, if it did."""
    raw = os.environ.get(LOCK_FD_ENV, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        mine, theirs = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        return None
    os.environ.pop(LOCK_FD_ENV, None)
    os.set_inheritable(fd, False)
    return fd


def lock_run(root: str | Path) -> RunLock:
    """Take the run directory's lock, or refuse in one line naming the process that has it."""
    root = Path(root)
    path = root / LOCK
    fd = _inherited(path)
    if fd is None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise UserError(f"cannot lock the run directory ({exc.strerror})", path=path) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UserError("cannot lock the run directory (the lock is not a regular file)", path=path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        pid = lock_holder(root)
        who = f"another physlab process (pid {pid})" if pid else "another physlab process"
        raise UserError(f"{who} is already running or resuming this run; wait for it to end, or stop it "
                        f"with `physlab runs stop {root}`", path=root) from None
    lock = RunLock(root, fd)
    lock._write_holder(os.getpid())
    return lock


def lock_holder(root: str | Path) -> int | None:
    """The pid that holds the run's lock, as the lock file names it, when that process is alive
    (for display; taking the lock is the only real test)."""
    try:
        fd = os.open(Path(root) / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 32).decode("ascii", "replace").strip() if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    finally:
        os.close(fd)
    if not raw.isdigit():
        return None
    pid = int(raw)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid
