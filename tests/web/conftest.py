from __future__ import annotations

import pytest

from tests.web.helpers import build_lab_run, write_metrics


@pytest.fixture
def runs_root(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    build_lab_run(root / "lab1")
    write_metrics(root / "sweep" / "cell1")
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    outside = tmp_path / "outside_run"
    outside.mkdir()
    (outside / "metrics.json").write_text('{"problem_id": "TOP-SECRET"}')
    (outside / "PROBLEM.md").write_text("TOP-SECRET")
    (root / "escape").symlink_to(outside)                       # a symlinked run out of the root
    (root / "lab1" / "LOG.md").unlink()
    (root / "lab1" / "LOG.md").symlink_to(tmp_path / "secret.txt")   # a symlinked file out of the root
    return root
