"""Chromium (Playwright) opens a lab run's page as a physicist reads it: the problem first, then
the answer as rendered math (beside its code), the researcher's derivation with its math rendered,
and only then the model calls. Screenshots go to test-artifacts/."""

from __future__ import annotations

import asyncio
import os
import re
import threading

import pytest

from physlab.api import solve_async
from physlab.problems import resolve_problem
from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.web.helpers import ARTIFACTS, CHROMIUM

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")]


def test_a_lab_run_page_shows_the_problem_the_answer_as_math_and_the_derivation(page, tmp_path):
    from playwright.sync_api import expect

    runs = tmp_path / "runs"
    run = threading.Thread(target=asyncio.run, args=(solve_async(  # (Playwright's loop holds this thread)
        resolve_problem("examples/quantum_error_correction_main"), "lab", "scripted:lab-qec", workspace=runs / "qec"),))
    run.start()
    run.join()
    with BackgroundServer(create_app(runs, poll_s=0.2)) as ui:
        page.goto(f"{ui.url}/runs/qec")
        page.wait_for_selector("#conn.live")

        problem, answer, calls = page.locator("#problem"), page.locator("#answer"), page.locator("#calls")
        expect(problem).to_contain_text("[[4,2,2]]")
        assert problem.bounding_box()["y"] < answer.bounding_box()["y"] < calls.bounding_box()["y"]

        math = page.locator("#answer-math math")                       # the answer as rendered math
        expect(math).to_be_visible()
        assert math.get_attribute("display") == "block" and math.locator("mfrac").count() >= 1
        assert math.bounding_box()["height"] > 30                      # a built-up fraction, not a line of code
        expect(page.locator("#answer-line")).to_contain_text("F_logical = ")   # and the code beside it

        derivation = page.locator("#derivation-EV-1")
        expect(derivation).to_have_attribute("open", "")               # the one the answer rests on is open
        expect(derivation).to_contain_text("the answer rests on it")
        expect(derivation.locator("strong", has_text="Stabilizers.")).to_be_visible()
        formulas = derivation.locator(".prose math")
        assert formulas.count() >= 8 and formulas.first.is_visible()
        assert derivation.locator("code.tex").count() == 0             # every formula rendered, none left as TeX
        page.screenshot(path=str(_artifact("web_run_page_physics.png")), full_page=False)
        derivation.screenshot(path=str(_artifact("web_derivation.png")))
        answer.screenshot(path=str(_artifact("web_answer.png")))

        page.click("#card-EV-1 a.to-derivation")                       # the evidence card leads to it
        expect(page).to_have_url(re.compile("#derivation-EV-1$"))

        page.click("#problem summary")                                  # the reader folds the problem away,
        expect(page.locator("#problem-text")).not_to_have_attribute("open", "")
        body = page.locator("body")
        expect(body).to_have_attribute("data-refreshed", re.compile(r"\d"))
        before = body.get_attribute("data-refreshed")
        (runs / "qec" / "inbox.jsonl").write_text("")                   # the run changes: the page refreshes,
        expect(body).not_to_have_attribute("data-refreshed", before)
        expect(page.locator("#problem-text")).not_to_have_attribute("open", "")   # and it stays folded
        page.screenshot(path=str(_artifact("web_run_page_problem_folded.png")), full_page=False)


def _artifact(name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
