"""Which files the dashboard may read: the files of run directories under the runs root (found
and resolved the one way, :mod:`physlab.run.discovery`), and nothing else."""

from __future__ import annotations

from pathlib import Path

from physlab.run.discovery import inside


def run_file(run: Path, root: Path, name: str) -> Path | None:
    """``run/name`` when it is a regular file that (after symlinks) is still under the root."""
    path = run / name
    if not path.is_file() or not inside(path, root):
        return None
    return path.resolve()


def read_text(run: Path, root: Path, name: str, limit: int = 2_000_000) -> str | None:
    path = run_file(run, root, name)
    if path is None:
        return None
    try:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None
