"""Chromium (Playwright) resumes a paused lab run from its page: the Resume button continues it on
the server and with the key variable it was made with (no flag to re-enter), and the page shows
what the resumed process printed; a resume that cannot be honoured (its key variable unset) is
refused on the page in one line, and no process starts."""

from __future__ import annotations

import json
import os

import pytest

from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.run.keyed import KEY_ENV, keyed_standin, paused_run, run_files
from tests.web.helpers import CHROMIUM

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")]


def test_resume_button_continues_on_the_recorded_server_and_shows_the_output(page, tmp_path, monkeypatch):
    from playwright.sync_api import expect

    runs = tmp_path / "runs"
    ws = runs / "qec"
    with keyed_standin() as srv, BackgroundServer(create_app(runs, poll_s=0.2)) as ui:
        url = srv.base_url
        paused_run(ws, srv, monkeypatch)
        kept, asked = run_files(ws), srv.stats.requests

        monkeypatch.delenv(KEY_ENV)                               # cannot be honoured: refused in one line
        page.goto(f"{ui.url}/runs/qec")
        page.wait_for_selector("#conn.live")
        expect(page.locator("#resume-problem")).not_to_have_value("")     # the problem the run recorded
        page.click("#resume-button")
        expect(page.locator("#action-result")).to_contain_text(KEY_ENV)
        assert page.locator("#action-result").get_attribute("data-ok") == "false"
        assert run_files(ws) == kept and srv.stats.requests == asked

        monkeypatch.setenv(KEY_ENV, "sk-standin-4f1c9e")
        page.click("#resume-button")
        expect(page.locator("#action-result")).to_contain_text("resuming")
        expect(page.locator("#run-status .badge").first).to_have_text("complete", timeout=240_000)
        expect(page.locator("#resume-log")).to_contain_text("openai:standin", timeout=30_000)
        assert srv.stats.requests > asked and srv.stats.faults["unauthorized"] == 0
    m = json.loads((ws / "metrics.json").read_text())
    assert (m["status"], m["verdict"]["verdict"]) == ("complete", "correct")
    assert m["options"]["api_key_env"] == KEY_ENV and m["options"]["api_base"] == url
