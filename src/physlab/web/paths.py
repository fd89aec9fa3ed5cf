"""Which files the dashboard may read: run directories under the runs root, and nothing else.

A run id is the run directory's path relative to the root (``qec`` or ``sweep1/cell-3``). It is
checked lexically (no empty, ``.``/``..`` parts, no absolute paths, no backslashes or NULs) and
then resolved (symlinks followed) and required to stay inside the resolved root, so ``../``,
absolute paths, URL-encoded variants (FastAPI decodes them before we see them) and symlinks that
point out of the runs directory are all refused the same way: 404.
"""

from __future__ import annotations

from pathlib import Path

RUN_MARKERS = ("state.json", "metrics.json", "calls.jsonl")
MAX_DEPTH = 2            # runs/<run> and runs/<group>/<run> (e.g. a sweep's workspaces)


class NotFound(Exception):
    """No such run (or a path the server must not reveal)."""


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and any((path / m).is_file() for m in RUN_MARKERS)


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def resolve_run(root: Path, run_id: str) -> Path:
    parts = run_id.split("/")
    if (not run_id or len(run_id) > 500 or "\x00" in run_id or "\\" in run_id or run_id.startswith("/")
            or len(parts) > MAX_DEPTH or any(p in ("", ".", "..") or p.startswith(".") for p in parts)):
        raise NotFound(run_id)
    path = root / run_id
    if not _inside(path, root) or path.resolve() == root.resolve() or not is_run_dir(path.resolve()):
        raise NotFound(run_id)
    return path.resolve()


def run_file(run: Path, root: Path, name: str) -> Path | None:
    """``run/name`` when it is a regular file that (after symlinks) is still under the root."""
    path = run / name
    if not path.is_file() or not _inside(path, root):
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


def discover(root: Path) -> list[str]:
    """Run ids under ``root`` (depth 1 and 2), sorted."""
    out: list[str] = []
    if not root.is_dir():
        return out

    def walk(d: Path, prefix: str, depth: int) -> None:
        try:
            children = sorted(d.iterdir())
        except OSError:
            return
        for child in children:
            if child.name.startswith(".") or not child.is_dir() or not _inside(child, root):
                continue
            rid = f"{prefix}{child.name}"
            if is_run_dir(child):
                out.append(rid)
            elif depth < MAX_DEPTH:
                walk(child, rid + "/", depth + 1)

    walk(root, "", 1)
    return out
