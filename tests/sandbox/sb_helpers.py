"""Helpers for the sandbox tests: find processes a run may have left behind on the host."""

from __future__ import annotations

import os


def host_pids_with(token: str) -> list[int]:
    """Host processes whose command line contains ``token``."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{p}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmd and state != b"Z":
            out.append(int(p))
    return out


def _tree(pid: int) -> list[int]:
    """pid and all its descendants on the host."""
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def pids_with(token: str) -> list[str]:
    """Host processes whose command line contains ``token``, in any state (a zombie included: it
    still holds its pid and counts against its user's process limit), as their /proc/PID/stat."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    with open(f"/proc/{p}/stat") as st:
                        out.append(st.read())
        except OSError:
            continue
    return out


def worker_trees(box) -> list[list[int]]:
    """Each idle worker's host processes, the worker first and its newest descendant last (when
    idle, that is the manager forked for the next run)."""
    return [process_tree(w.proc.pid) for w in list(box._pool._idle)]


def process_tree(pid: int) -> list[int]:
    """pid and its descendants on the host, level by level."""
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p))
    out, level = [], [pid]
    while level:
        out += sorted(level)
        level = [k for p in level for k in kids.get(p, [])]
    return out


def alive(pid: int) -> bool:
    """Is ``pid`` still a process, a zombie included?"""
    return os.path.exists(f"/proc/{pid}")


def running(pid: int) -> bool:
    """Is ``pid`` a process that has not ended (neither gone nor a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False
