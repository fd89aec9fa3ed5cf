"""calls.jsonl's writer: a file opened once and appended one whole line at a time, so a kill
loses at most the line being written (``physlab.llm.meter.read_calls`` skips such a line)."""

from __future__ import annotations

import os
from pathlib import Path

from physlab.errors import naming_the_file


class LineLog:
    """A file opened once for appending whole lines (created if missing). Each line is flushed as
    it is written, so a kill loses at most the line being written; a line a kill cut short is ended
    when the file is opened again, so the next one starts a line of its own."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh = open(self.path, "ab")  # closed by close()
        if self._fh.tell() and not self._ends_with_newline():
            self._fh.write(b"\n")

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def write_line(self, line: str | bytes) -> None:
        data = line.encode("utf-8") if isinstance(line, str) else line
        with naming_the_file(self.path):
            self._fh.write(data + b"\n")
            self._fh.flush()

    def close(self) -> None:
        with naming_the_file(self.path):  # a line a full disk refused is still buffered: closing retries it
            self._fh.close()
