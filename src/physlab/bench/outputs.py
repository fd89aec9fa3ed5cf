"""Where `physlab bench` commands write: output files and folders checked before any work is done,
and file system errors as one line naming the flag (shared by `bench report` and the CritPt export)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from physlab.errors import UserError


def output_file(path: Path | None, flag: str) -> Path | None:
    """Check an output file before any work is done: not a directory; its directory is created."""
    if path is None:
        return None
    if path.is_dir():
        raise UserError("is a directory; expected a file to write", path=path, field=flag)
    make_dir(path.parent, flag)
    return path


def output_dir(path: Path | None, flag: str) -> Path | None:
    """Check an output directory before any work is done: not a file; it is created."""
    if path is None:
        return None
    if path.exists() and not path.is_dir():
        raise UserError("is a file; expected a directory", path=path, field=flag)
    make_dir(path, flag)
    return path


def make_dir(path: Path, flag: str) -> None:
    """Create ``path`` and its parents; a file system error is one line naming the flag."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the directory {path} ({exc.strerror or exc})", path=path,
                        field=flag) from None


def writing(path: Path, flag: str, write: Callable[[], object]) -> None:
    """Run ``write()``; a file system error is one line naming the flag and the file (exit 2)."""
    try:
        write()
    except OSError as exc:
        raise UserError(f"cannot write ({exc.strerror or exc})", path=exc.filename or path,
                        field=flag) from None
