"""A run's small files, written with as few system calls as the job needs.

A sweep writes five files per cell (PROBLEM.md, calls.jsonl, ANSWER.md, answer.py, metrics.json)
while other cells wait for the event loop. ``Path.write_text`` spends seven system calls on one
(open, fstat, a terminal check, two seeks, write, close) and ~40 us on the 2-core development VM;
``os.open``/``os.write``/``os.close`` need three and ~16 us. Appended lines (calls.jsonl) go out
with one ``os.write`` each (the kernel writes a regular file's whole buffer at once): nothing
waits in a buffer if the process dies.
"""

from __future__ import annotations

import os
from pathlib import Path

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_file(path: str | Path, data: str | bytes) -> None:
    """Create or replace ``path`` with ``data`` (text is written as UTF-8)."""
    fd = os.open(path, _CREATE, 0o666)
    try:
        _write_all(fd, data.encode("utf-8") if isinstance(data, str) else data)
    finally:
        os.close(fd)


class LineLog:
    """A file opened once for appending whole lines (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = os.open(path, _APPEND, 0o666)
        if os.lseek(self._fd, 0, os.SEEK_END) and not self._ends_with_newline():
            _write_all(self._fd, b"\n")  # a kill mid-write left half a line: the next one starts afresh

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def write_line(self, line: str | bytes) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path}: the log is closed")
        data = line.encode("utf-8") if isinstance(line, str) else line
        _write_all(self._fd, data + b"\n")

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
