"""User-facing errors.

Anything a user can get wrong (a malformed problem file, a bad flag value, a missing run directory)
raises :class:`UserError` with one line that says which file, which field and what was expected.
The CLI prints that line and exits 2; it never shows a traceback for bad input.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | Path | None = None, field: str | None = None):
        self.path = str(path) if path is not None else None
        self.field = field
        parts = []
        if self.path:
            parts.append(self.path)
        if field:
            parts.append(f"field '{field}'")
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ProblemFileError(UserError):
    """A problem file that cannot be read or does not have the expected shape."""


@contextmanager
def naming_the_file(path: str | Path) -> Iterator[None]:
    """An OSError raised inside names ``path`` (a full disk shows when data is flushed, where
    Python gives the error no file name), so the one line the user sees says which file."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
