"""The host's side of ending a worker: its processes as the host sees them (the worker, bubblewrap's,
the zygote, a run's manager and everything the run started), held by pidfd so that a pid reused
after the process ended is never signalled, and waited for until each has ended."""

from __future__ import annotations

import os
import select
import signal
import time


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _ns_pid(pid: int) -> int | None:
    """``pid``'s pid in its innermost PID namespace (what the process itself calls its pid)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class ProcessTree:
    """A process and its descendants at one moment, top down, each held by a pidfd where the
    kernel has them (Linux 5.3), else by pid."""

    def __init__(self, root: int) -> None:
        kids: dict[int, list[int]] = {}
        for p in os.listdir("/proc"):
            if p.isdigit():
                ppid = _ppid(int(p))
                if ppid is not None:
                    kids.setdefault(ppid, []).append(int(p))
        self.parent: dict[int, int | None] = {}
        self.fds: dict[int, int | None] = {}
        level: list[tuple[int, int | None]] = [(root, None)]
        while level:
            nxt: list[tuple[int, int | None]] = []
            for pid, parent in level:
                fd = _pidfd(pid)
                if parent is not None and _ppid(pid) != parent:  # gone (its pid maybe reused) meanwhile
                    if fd is not None:
                        os.close(fd)
                    continue
                self.parent[pid], self.fds[pid] = parent, fd
                nxt += [(k, pid) for k in kids.get(pid, [])]
            level = nxt

    def find(self, ns_pid: int) -> int | None:
        """The host pid of the topmost process whose own pid (in its PID namespace) is ``ns_pid``
        (a run's processes, in a namespace further down, may have the same)."""
        return next((p for p in self.parent if _ns_pid(p) == ns_pid), None)

    def below(self, pid: int) -> list[int]:
        """The descendants of ``pid`` (not itself)."""
        out, todo = [], [pid]
        while todo:
            kids = [p for p, parent in self.parent.items() if parent == todo[0]]
            out += kids
            todo = todo[1:] + kids
        return out

    def kill(self, pids: list[int] | None = None, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to ``pids`` (default: all of them)."""
        for pid in self.parent if pids is None else pids:
            fd = self.fds.get(pid)
            try:
                if fd is not None:
                    signal.pidfd_send_signal(fd, sig)
                else:
                    os.kill(pid, sig)
            except OSError:
                pass

    def wait(self, timeout: float) -> bool:
        """Until every process has ended (a zombie has: it runs no more), at most ``timeout`` s."""
        end = time.monotonic() + timeout
        left = dict(self.fds)
        while left:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return False
            fds = [fd for fd in left.values() if fd is not None]
            if fds:
                poller = select.poll()
                for fd in fds:
                    poller.register(fd, select.POLLIN)
                step = remaining if len(fds) == len(left) else min(remaining, 0.05)  # some without pidfd
                ready = {fd for fd, _ in poller.poll(step * 1000)}
            else:
                ready = set()
                time.sleep(0.01)  # no pidfd here: look again
            left = {p: fd for p, fd in left.items() if (fd not in ready if fd is not None else running(p))}
        return True

    def close(self) -> None:
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)
        self.fds = {p: None for p in self.fds}


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def running(pid: int) -> bool:
    """Has ``pid`` not ended yet (neither gone nor a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
