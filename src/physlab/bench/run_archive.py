"""A cell's run directory as bytes, and back: how a cell that ran on a Ray node reaches the driver's
``--workspace-root`` without a shared filesystem (its git history, calls.jsonl, metrics.json, answers).

Unpacking goes through tarfile's ``data`` filter (PEP 706): no member may leave the directory, be a
device, or link outside it; the files a model's code made are in the archive, so it is not trusted.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path


def pack(run_dir: Path) -> bytes:
    """The directory's files as a gzipped tar (level 1: run directories are mostly text, and the
    archive crosses the cluster once)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for path in sorted(run_dir.rglob("*")):
            tar.add(path, arcname=path.relative_to(run_dir).as_posix(), recursive=False)
    return buf.getvalue()


def unpack(data: bytes, run_dir: Path) -> None:
    """Make ``run_dir`` hold exactly the archive's files (what an earlier try left there goes)."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(run_dir, filter="data")
