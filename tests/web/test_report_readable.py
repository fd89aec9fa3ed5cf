"""`physlab bench report --html` reads on a laptop screen: the main table holds the figures a reader
compares (accuracy with its interval, pass@k, spend) in a dozen columns, not the CSV's thirty; every
CSV column is still there, folded away. "Accuracy vs spend" plots dollars where the models have
prices, and tokens -- labelled so -- where they do not."""

from __future__ import annotations

import os
import re

import pytest

from physlab.bench.report import GroupSummary, Report, build_report, summary_rows
from physlab.bench.report_render import write_html
from tests.bench.test_report import _fill
from tests.web.helpers import ARTIFACTS, CHROMIUM


def main_table(html: str) -> str:
    m = re.search(r'<table [^>]*id="summary".*?</table>', html, re.S)
    assert m, "no main table"
    return m.group(0)


def test_the_main_table_is_a_dozen_columns_and_the_csv_columns_are_folded_away(tmp_path):
    rep = build_report(_fill(tmp_path / "r.sqlite"), equal_tokens=800)
    html = write_html(rep, tmp_path / "report.html").read_text()
    table = main_table(html)
    heads = re.findall(r"<th[^>]*>(.*?)</th>", table.split("</tr>")[0])
    assert 8 <= len(heads) <= 12, heads
    assert {"strategy", "model", "accuracy [95% CI]", "equal-budget accuracy [95% CI]"} <= set(heads)
    g = rep.groups[0]
    assert f"{g.accuracy:.3f} [{g.ci_low:.3f}, {g.ci_high:.3f}]" in table
    every = re.search(r'<details id="all-columns">.*?</details>', html, re.S)
    assert every and all(f"<th>{c}</th>" in every.group(0) for c in summary_rows(rep)[0])


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")
def test_the_report_fits_a_laptop_screen(tmp_path, browser):
    rep = build_report(_fill(tmp_path / "r.sqlite"), equal_tokens=800)
    path = write_html(rep, tmp_path / "report.html")
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    try:
        page.goto(path.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        assert page.locator("#summary").bounding_box()["width"] <= 1240
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report_html.png"), full_page=False)
        page.click("#all-columns summary")                     # the CSV's columns, opened, scroll in their box
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        page.screenshot(path=str(ARTIFACTS / "report_html_all_columns.png"), full_page=False)
    finally:
        ctx.close()


def group(strategy: str, model: str, cost: float, tokens: float = 5000.0) -> GroupSummary:
    return GroupSummary(strategy=strategy, model=model, cells=10, graded=10, correct=5, problems=10, accuracy=0.5,
                        ci_low=0.3, ci_high=0.7, tokens_median=tokens, cost_median=cost, total_cost=cost * 10,
                        total_tokens=int(tokens * 10))


def test_accuracy_vs_spend_plots_dollars_where_prices_are_known(tmp_path):
    from physlab.bench.plots import accuracy_vs_cost_figure

    def axes_of(groups):
        fig = accuracy_vs_cost_figure(Report(db="x", groups=groups))
        return [(ax.get_xlabel(), ax.get_title(), len(ax.lines) + len(ax.containers)) for ax in fig.axes]

    priced = [group("oneshot", "openai:gpt-4o", 0.02), group("lab", "openai:gpt-4o", 0.9)]
    unpriced = [group("oneshot", "openai:my-vllm", 0.0, 4000), group("lab", "openai:my-vllm", 0.0, 90000)]
    (label, _, n), = axes_of(priced)
    assert "USD" in label and n >= 2
    (label, title, _), = axes_of(unpriced)
    assert "tokens" in label and "no known price" in title
    both = axes_of(priced + unpriced)                          # one panel in dollars, one in tokens
    assert len(both) == 2 and "USD" in both[0][0] and "tokens" in both[1][0] and "no known price" in both[1][1]
