"""Chromium (Playwright) on the research graph's cards (issue 44): a result's value is drawn once,
as math -- it was the Python string twice, in the claim and again below it -- and a review shows
what its check printed, not an empty `STDERR:` header. Screenshot in test-artifacts/."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from physlab.api import solve_async
from physlab.problems import resolve_problem
from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.web.helpers import ARTIFACTS, CHROMIUM

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")]


def test_a_results_value_is_drawn_once_as_math_on_its_cards(browser, tmp_path):
    runs = tmp_path / "runs"
    run = threading.Thread(target=asyncio.run, args=(solve_async(  # (Playwright's loop holds this thread)
        resolve_problem("examples/quantum_error_correction_main"), "lab", "scripted:lab-qec", workspace=runs / "qec"),))
    run.start()
    run.join()
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    try:
        with BackgroundServer(create_app(runs, poll_s=0.2)) as ui:
            page.goto(f"{ui.url}/runs/qec")
            page.wait_for_selector("#conn.live")
            for card_id in ("card-ER-4", "card-WH-2"):
                card = page.locator(f"[id='{card_id}']")
                text = card.inner_text()
                assert "**" not in text, text                           # no Python power signs
                assert text.count("229376") == 1, text                  # the value once
                assert card.locator("math mfrac").count() >= 1          # drawn as a fraction
                assert "the logical fidelity" in text                   # the claim's words stay
            review = page.locator("[id='card-WH-2'] .review").first.inner_text()
            assert "PASS" in review and "STDERR" not in review
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.locator("[id='card-ER-4']").screenshot(path=str(ARTIFACTS / "graph-card-er.png"))
    finally:
        ctx.close()
