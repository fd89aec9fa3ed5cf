from __future__ import annotations

import pytest

from tests.web.helpers import CHROMIUM, build_lab_run, write_metrics


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



@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (browsers cannot be downloaded here)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                                    "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page of the browser at a laptop's size (a test module may define its own `page`)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    ctx.close()
