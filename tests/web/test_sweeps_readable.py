"""The Sweeps page and the HTML report read on a 1366-px laptop screen (issue #44, item 8): the
page shows the figures a reader compares (the report's own main table, not the CSV's 38 columns)
with every CSV column one click away, nothing scrolls sideways; the HTML report's plots are shown at
a size one can read, under captions in words, not file names. Screenshots of both at 1366 px are
kept in test-artifacts/."""

from __future__ import annotations

import os

import pytest

from physlab.bench.report import build_report, summary_rows
from physlab.bench.report_render import group_table, write_html
from physlab.bench.store import ResultsStore
from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.bench.test_report import _fill
from tests.web.helpers import ARTIFACTS, CHROMIUM
from tests.web.test_one_set_of_numbers import build_db

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")]

LAPTOP = {"width": 1366, "height": 768}

# What makes a reader scroll sideways or squint: the page wider than the window, a table or the box
# around it shown (not folded away in a closed <details>) that scrolls sideways, a column head in
# snake_case.
SIDEWAYS = """() => {
  const out = [];
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth) out.push(`page is ${root.scrollWidth}px wide`);
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('details:not([open])') || el.closest('.cells-scroll')) continue;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(el).overflowX) || el.tagName === 'TABLE';
    if (scrolls && el.scrollWidth > el.clientWidth + 1)
      out.push(`${el.tagName.toLowerCase()}#${el.id || '?'} scrolls sideways (${el.scrollWidth} > ${el.clientWidth})`);
  }
  for (const t of document.querySelectorAll('table')) {
    if (t.closest('details:not([open])')) continue;
    for (const th of t.querySelectorAll('th'))
      if (/^[a-z0-9@]+(_[a-z0-9]+)+$/.test(th.innerText.trim())) out.push(`#${t.id || '?'} head ${th.innerText.trim()}`);
  }
  return out;
}"""


def test_the_sweeps_page_fits_a_laptop_and_keeps_every_column_one_click_away(tmp_path, browser):
    db = tmp_path / "results.sqlite"
    build_db(db)
    rep = build_report(ResultsStore(db, create=False))
    (tmp_path / "runs").mkdir()
    ctx = browser.new_context(viewport=LAPTOP)
    try:
        with BackgroundServer(create_app(tmp_path / "runs", db=db)) as srv:
            page = ctx.new_page()
            page.goto(srv.url + "/sweeps")
            heads = page.eval_on_selector_all("#summary-table tr:first-child th", "els => els.map(e => e.innerText)")
            problems = page.evaluate(SIDEWAYS)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "sweeps_1366.png"))
            page.screenshot(path=str(ARTIFACTS / "sweeps_1366_full.png"), full_page=True)
            folded = page.locator("#all-columns")
            assert not folded.evaluate("d => d.open")
            page.click("#all-columns summary")                      # the CSV's columns, on demand
            every = page.eval_on_selector_all("#all-columns th", "els => els.map(e => e.innerText)")
            wide = page.evaluate("document.documentElement.scrollWidth")
    finally:
        ctx.close()
    assert problems == []
    assert heads == group_table(rep, rep.solvers)[0]                 # the report's main table, as it prints it
    assert 6 <= len(heads) <= 12
    assert set(summary_rows(rep)[0]) <= set(every) and wide <= LAPTOP["width"]


def test_the_html_reports_plots_are_readable_and_captioned_in_words(tmp_path, browser):
    store = _fill(tmp_path / "r.sqlite")
    build_db(tmp_path / "more.sqlite")            # two more models: four panels of anytime accuracy
    rep = build_report(_merged(store, tmp_path / "more.sqlite"), equal_tokens=800)
    path = write_html(rep, tmp_path / "report.html")
    ctx = browser.new_context(viewport=LAPTOP)
    try:
        page = ctx.new_page()
        page.goto(path.as_uri())
        figures = page.evaluate("""() => [...document.querySelectorAll('figure')].map(f => {
            const img = f.querySelector('img');
            return {caption: f.querySelector('figcaption').innerText.trim(), shown: img.clientWidth,
                    natural: img.naturalWidth};
        })""")
        wide = page.evaluate("document.documentElement.scrollWidth")
        sideways = page.evaluate(SIDEWAYS)
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("figure").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "report_1366_plots.png"))
        page.goto(path.as_uri())
        page.screenshot(path=str(ARTIFACTS / "report_1366.png"))
    finally:
        ctx.close()
    assert len(figures) >= 4 and wide <= LAPTOP["width"] and sideways == []
    for f in figures:
        assert "_" not in f["caption"] and len(f["caption"].split()) >= 4, f["caption"]   # words, not a file name
        assert f["shown"] >= min(f["natural"], 800), f                  # not shrunk to half a screen
        assert f["shown"] >= 0.6 * f["natural"], f                      # its text not shrunk past reading


def _merged(store, other):
    """``store`` with the cells of ``other`` copied in (another sweep into the same database)."""
    import sqlite3

    con = sqlite3.connect(other)
    for table in ("cells", "cell_roles", "problems"):
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        rows = con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
        with store.tx() as c:
            c.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                          rows)
    con.close()
    return store
