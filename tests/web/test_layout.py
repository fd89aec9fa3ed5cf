"""Every page of the dashboard at 1400×900 in Chromium: nothing makes the page wider than the
window, no text is clipped (by an element that hides its overflow, or outside an SVG chart's
box), and a screenshot of each is kept in test-artifacts/ (layout_*.png)."""

from __future__ import annotations

import asyncio
import os
import re

import pytest

from physlab.api import solve_async
from physlab.cli import main
from physlab.lab import inbox
from physlab.llm.scripted import register_scenario
from physlab.problems import resolve_problem
from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.web.helpers import ARTIFACTS, CHROMIUM

QEC = "examples/quantum_error_correction_main"

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")]

# What a reader would miss: text cut off by an element that hides its overflow (a scrolling
# element is fine: it scrolls), text outside its SVG chart's box, a page wider than the window.
LAYOUT_PROBLEMS = """() => {
  const out = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                       (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '');
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth) out.push(`page is ${root.scrollWidth}px wide in a ${window.innerWidth}px window`);
  for (const el of document.querySelectorAll('body *')) {
    if (el instanceof SVGElement || ['INPUT', 'SELECT', 'TEXTAREA', 'OPTION', 'BUTTON'].includes(el.tagName)) continue;
    if (el.closest('details:not([open])') && el.tagName !== 'SUMMARY') continue;
    const cs = getComputedStyle(el);
    const hides = (v) => v === 'hidden' || v === 'clip';
    if (hides(cs.overflowX) && el.scrollWidth > el.clientWidth + 1) out.push(`${name(el)} clips its text across`);
    if (hides(cs.overflowY) && el.scrollHeight > el.clientHeight + 1) out.push(`${name(el)} clips its text down`);
    if (cs.textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth + 1) out.push(`${name(el)} ends in an ellipsis`);
  }
  for (const t of document.querySelectorAll('svg text')) {
    const svg = t.ownerSVGElement, vb = svg.viewBox.baseVal, b = t.getBBox();
    if (!vb || vb.width === 0) continue;
    if (b.x < vb.x - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y < vb.y - 0.5 || b.y + b.height > vb.y + vb.height + 0.5)
      out.push(`svg text "${t.textContent.slice(0, 60)}" is outside its chart (${svg.id || svg.getAttribute('aria-label')})`);
  }
  return out;
}"""


class Unreachable:
    def __call__(self, role, messages, info):
        raise RuntimeError("upstream returned HTTP 502 Bad Gateway")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A runs directory with what a physicist has after a day: lab runs (finished, paused), another
    strategy's run, a failed run, and a sweep (its cells beside its database)."""
    d = tmp_path_factory.mktemp("site")
    runs = d / "runs"
    qec = resolve_problem(QEC)

    def pause_at_2(kind, **data):
        if kind == "iteration" and data.get("iteration") == 2:
            inbox.post(runs / "lab-paused", "pause")

    register_scenario("layout-unreachable", Unreachable)
    asyncio.run(solve_async(qec, "lab", "scripted:lab-qec", workspace=runs / "lab-complete"))
    asyncio.run(solve_async(qec, "lab", "scripted:lab-qec", workspace=runs / "lab-paused", events=pause_at_2))
    asyncio.run(solve_async(qec, "rsa", "scripted:rsa-qec", workspace=runs / "rsa"))
    asyncio.run(solve_async(qec, "oneshot", "scripted:layout-unreachable", workspace=runs / "failed"))
    db = d / "results.sqlite"
    with pytest.raises(SystemExit):
        main(["bench", "run", "examples", "--strategies", "oneshot,two-step,tpbench-vote", "--models",
              "scripted:oneshot-qec-correct,scripted:oneshot-wrong", "--db", str(db), "--no-progress"])
    return runs, db


def look(browser, url: str, name: str) -> list[str]:
    """Open ``url`` at 1400×900, keep its screenshots (the window, and the whole page) and return
    what is wrong with its layout."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(30_000)
        pg.goto(url)
        if pg.evaluate("document.body.dataset.events !== undefined"):
            pg.wait_for_selector("#conn.live")       # connected and the live fragment refreshed once
        pg.wait_for_load_state("load")
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / f"layout_{name}.png"))
        pg.screenshot(path=str(ARTIFACTS / f"layout_{name}_full.png"), full_page=True)
        return pg.evaluate(LAYOUT_PROBLEMS)
    finally:
        ctx.close()


def test_every_page_fits_the_window_and_clips_no_text(site, browser):
    runs, db = site
    with BackgroundServer(create_app(runs, db=db)) as srv:
        import urllib.request

        sweeps = urllib.request.urlopen(srv.url + "/sweeps").read().decode()
        cell = re.search(r'<a href="(/runs/~cell/\d+)">', sweeps).group(1)
        pages = {"runs": "/", "lab_complete": "/runs/lab-complete", "lab_paused": "/runs/lab-paused",
                 "rsa": "/runs/rsa", "failed": "/runs/failed", "sweeps": "/sweeps", "sweep_cell": cell}
        problems = {name: look(browser, srv.url + path, name) for name, path in pages.items()}
    with BackgroundServer(create_app(runs, token="layout-token-123")) as srv:
        problems["login"] = look(browser, srv.url + "/", "login")
    assert {k: v for k, v in problems.items() if v} == {}
    assert all((ARTIFACTS / f"layout_{name}.png").stat().st_size > 10_000 for name in problems)
