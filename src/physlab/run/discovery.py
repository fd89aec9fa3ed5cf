"""The runs under a runs root: which directories are runs (:func:`~physlab.run.files.is_run_dir`),
found one and two levels down (``runs/<run>``, ``runs/<sweep>/<cell>``), and a run id (its path
relative to the root) turned back into its directory without ever leaving the root. `physlab runs
list` and the dashboard list runs this one way.

A run id is checked lexically (no empty, ``.``/``..`` or hidden parts, no absolute paths,
backslashes or NULs), then resolved (links followed) and required to stay inside the resolved root,
so ``../``, absolute paths, URL-encoded variants (decoded before they get here) and links that point
out of the runs directory are all refused the same way: :class:`NotFound`.
"""

from __future__ import annotations

from pathlib import Path

from physlab.run.files import is_run_dir

MAX_DEPTH = 2  # runs/<run> and runs/<group>/<run> (e.g. a sweep's workspaces)


class NotFound(Exception):
    """No such run (or a path that must not be revealed)."""


def inside(path: Path, root: Path) -> bool:
    """``path``, links followed, is ``root`` or under it."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def resolve_run(root: Path, run_id: str) -> Path:
    """The directory of the run ``run_id`` under ``root`` (resolved), or :class:`NotFound`."""
    parts = run_id.split("/")
    if (not run_id or len(run_id) > 500 or "\x00" in run_id or "\\" in run_id or run_id.startswith("/")
            or len(parts) > MAX_DEPTH or any(p in ("", ".", "..") or p.startswith(".") for p in parts)):
        raise NotFound(run_id)
    path = root / run_id
    if not inside(path, root) or path.resolve() == root.resolve() or not is_run_dir(path.resolve()):
        raise NotFound(run_id)
    return path.resolve()


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
            if child.name.startswith(".") or not child.is_dir() or not inside(child, root):
                continue
            rid = f"{prefix}{child.name}"
            if is_run_dir(child):
                out.append(rid)
            elif depth < MAX_DEPTH:
                walk(child, rid + "/", depth + 1)

    walk(root, "", 1)
    return out
