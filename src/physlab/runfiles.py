"""A run's files: a whole file replaced at once, and calls.jsonl appended one whole line at a time."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8) in one step: whoever reads it meanwhile (the
    dashboard, a resume) sees the old file or the new one, and a kill mid-write leaves the old one."""
    tmp = path.with_name(path.name + ".tmp")
    with _naming(tmp):
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    os.replace(tmp, path)


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """A write error names the file (a full disk shows when the data is flushed, where Python
    gives the error no file name)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


class LineLog:
    """A file opened once for appending whole lines (created if missing). Each line is flushed as
    it is written, so a kill loses at most the line being written; a line a kill cut short is ended
    when the file is opened again, so the next one starts a line of its own."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        if self._fh.tell() and not self._ends_with_newline():
            self._fh.write(b"\n")

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def write_line(self, line: str | bytes) -> None:
        data = line.encode("utf-8") if isinstance(line, str) else line
        with _naming(self.path):
            self._fh.write(data + b"\n")
            self._fh.flush()

    def close(self) -> None:
        with _naming(self.path):  # a line a full disk refused is still buffered: closing retries it
            self._fh.close()
