"""Chromium (Playwright) drives the dashboard: a live scripted lab run (watch the run appear and an
ER appear, post a comment, see the lab take it in at the next iteration boundary, stop the run)
and a sweep report with filters. Screenshots go to test-artifacts/."""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest

from physlab.lab import inbox
from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.web.helpers import ARTIFACTS, CHROMIUM, build_results_db

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")]


def shot(pg, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"web_{name}.png"), full_page=False)


class Gate:
    """The runner's event callback: holds the run at the start of chosen iterations (before the
    lab takes in its inbox) until the test lets it go."""

    def __init__(self, *iterations: int):
        self.reached = {i: threading.Event() for i in iterations}
        self.release = {i: threading.Event() for i in iterations}

    def __call__(self, kind: str, **data) -> None:
        it = data.get("iteration")
        if kind == "iteration" and it in self.reached:
            self.reached[it].set()
            assert self.release[it].wait(120), f"test never released iteration {it}"

    def wait(self, it: int) -> None:
        assert self.reached[it].wait(120), f"the run never reached iteration {it}"


@pytest.mark.slow
def test_live_lab_run_comment_and_stop(page, tmp_path):
    from playwright.sync_api import expect

    from physlab.api import solve_async
    from physlab.problems import resolve_problem

    runs = tmp_path / "runs"
    runs.mkdir()
    gate = Gate(3, 4)
    result: dict = {}

    def run() -> None:
        try:
            result["attempt"] = asyncio.run(solve_async(resolve_problem("examples/quantum_error_correction_main"), "lab",
                                                       "scripted:lab-qec", workspace=runs / "qec", events=gate))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            result["error"] = exc
        finally:
            for ev in (*gate.reached.values(),):
                ev.set()

    with BackgroundServer(create_app(runs, poll_s=0.2)) as srv:
        page.goto(srv.url + "/")
        page.wait_for_selector("#conn.live")
        assert page.locator("#no-runs").is_visible()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        try:
            page.wait_for_selector('tr[data-run="qec"]')               # the runs list updates live (SSE)
            page.click('tr[data-run="qec"] a')
            page.wait_for_selector("#conn.live")
            gate.wait(3)
            assert "error" not in result, result.get("error")
            page.wait_for_selector("#card-ER-1")                         # an established result appeared
            page.wait_for_selector('g.node[data-id="ER-1"]')
            shot(page, "1_er_appeared")

            page.select_option("#action-kind", "comment")
            page.fill("#action-on", "ER-1")
            page.fill("#action-text", "Check the limit $F(0)=1$ <script>window.__pwned=1</script>")
            page.click("#action-send")
            expect(page.locator("#action-result")).to_contain_text("queued")  # (no eval: the page's CSP forbids it)
            msgs = inbox.read(runs / "qec")
            assert [(m["kind"], m["on"]) for m in msgs] == [("comment", "ER-1")]
            page.wait_for_selector("#pending")
            shot(page, "2_comment_queued")

            gate.release[3].set()                                        # next iteration boundary
            page.wait_for_selector('.human[data-hm]', timeout=60_000)
            state = json.loads((runs / "qec" / "state.json").read_text())
            hm = state["human_messages"]
            assert [(h["kind"], h["on"], h["received_iteration"]) for h in hm] == [("comment", "ER-1", 3)]
            assert msgs[0]["id"] in state["inbox_consumed"]
            assert page.evaluate("window.__pwned") is None                # model/user text never runs
            assert page.locator("#human-messages math").count() >= 1     # $F(0)=1$ rendered as MathML
            shot(page, "3_comment_taken_in")

            gate.wait(4)
            page.click("#stop-button")
            expect(page.locator("#action-result")).to_contain_text("stop queued")
            gate.release[4].set()
            worker.join(120)
            assert not worker.is_alive() and "error" not in result, result.get("error")
            expect(page.locator("#run-status")).to_contain_text("stopped by the physicist", timeout=60_000)
            state = json.loads((runs / "qec" / "state.json").read_text())
            assert state["stop_reason"] == "stopped by the physicist" and state["iteration"] == 4
            assert any(h["kind"] == "stop" for h in state["human_messages"])
            page.wait_for_selector("#timeline li >> text=stopped by the physicist")
            # metrics.json written and the run's lock let go: the page says how it ended
            expect(page.locator("#run-status .badge").first).to_have_text(result["attempt"].status, timeout=60_000)
            shot(page, "4_stopped")
        finally:
            for ev in gate.release.values():
                ev.set()
            worker.join(120)


def test_sweep_report_with_filters(page, tmp_path):
    db = tmp_path / "results.sqlite"
    truth = build_results_db(db)
    (tmp_path / "runs").mkdir()
    with BackgroundServer(create_app(tmp_path / "runs", db=db)) as srv:
        page.goto(srv.url + "/")
        page.click("nav >> text=Sweeps")
        page.wait_for_selector("#summary-table")
        assert page.locator("#summary-table tbody tr").count() == len(truth)
        assert page.locator("#accuracy-chart rect").count() == len(truth)
        shot(page, "5_sweeps_all")
        page.locator("#comparisons").scroll_into_view_if_needed()        # what the report has: paired comparisons
        assert page.locator("#comparisons tbody tr").count() >= 2 and page.locator("#matrix-0 td.solved-all").count()
        shot(page, "5b_sweeps_comparisons_matrix")
        page.select_option("#filter-strategy", "oneshot")
        page.select_option("#filter-suite", "s1")
        page.click("#filters button")
        page.wait_for_url("**/sweeps?*strategy=oneshot*")
        rows = page.locator("#summary-table tbody tr")
        assert rows.count() == 2
        assert all(t.startswith("oneshot") for t in rows.all_inner_texts())
        assert page.locator("#budget-chart path").count() >= 2
        shot(page, "6_sweeps_filtered")


def test_token_page_when_not_on_loopback(page, tmp_path):
    (tmp_path / "runs").mkdir()
    with BackgroundServer(create_app(tmp_path / "runs", token="browser-token-123")) as srv:
        urls: list[str] = []
        page.on("request", lambda request: urls.append(request.url))
        page.goto(srv.url + "/")
        page.fill("#token", "browser-token-123")
        page.press("#token", "Enter")
        page.wait_for_selector("#no-runs")
        page.wait_for_selector("#conn.live")                             # SSE works with the cookie
        assert urls and not any("browser-token-123" in u for u in urls)  # posted: in no URL, no history entry
