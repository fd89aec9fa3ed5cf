"""The dashboard's Sweeps page has what the report has: the paired comparisons (same problems, the
difference with its interval, the exact p) and the problem x strategy matrix, for the cells the
filters keep -- the report's own figures (bench.report), not figures of the page's making."""

from __future__ import annotations

import html as htmllib
import re

from fastapi.testclient import TestClient

from physlab.bench.report import build_report, matrix_tables
from physlab.bench.report_render import difference_cell
from physlab.bench.store import ResultsStore
from physlab.web import create_app
from tests.web.helpers import build_results_db


def rows_of(page: str, table_id: str) -> list[list[str]]:
    m = re.search(rf'<table [^>]*id="{table_id}".*?</table>', page, re.S)
    assert m, f"no table #{table_id}"
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(0), re.S)
    return [[htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)]
            for r in rows]


def test_the_sweeps_page_shows_the_paired_comparisons_and_the_matrix(tmp_path):
    db = tmp_path / "results.sqlite"
    build_results_db(db)
    (tmp_path / "runs").mkdir()
    c = TestClient(create_app(tmp_path / "runs", db=db), base_url="http://127.0.0.1")
    page = c.get("/sweeps").text
    store = ResultsStore(db, create=False)
    rep = build_report(store)
    shown = rows_of(page, "comparisons")[1:]
    assert len(shown) == len(rep.comparisons) >= 2
    for row, cmp in zip(shown, rep.comparisons):
        assert row[:3] == [cmp.a.replace("|", " × "), cmp.b.replace("|", " × "), str(cmp.problems)]
        assert row[5] == difference_cell(cmp) and row[7] == f"{cmp.p_value:.3g}"
    tables = matrix_tables(rep)
    for i, (title, heads, rows) in enumerate(tables):
        shown = rows_of(page, f"matrix-{i}")
        assert shown[0] == ["problem", *heads] and shown[1:] == [[str(x) for x in r] for r in rows]
        assert htmllib.escape(title) in page
    assert 'class="solved-all"' in page and 'class="solved-none"' in page or 'class="solved-some"' in page

    page = c.get("/sweeps", params={"model": "scripted:a"}).text         # the filters apply to both
    filtered = build_report(store, filters={"model": "scripted:a"})
    store.close()
    assert len(rows_of(page, "comparisons")) - 1 == len(filtered.comparisons)
    assert "scripted:b" not in page.split('id="comparisons"')[1].split("</table>")[0]
    assert len(re.findall(r'id="matrix-\d+"', page)) == len(matrix_tables(filtered)) == 1
