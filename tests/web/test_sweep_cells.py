"""From a sweep you reach every cell: each opens as a run page (answer, verdict, the transcript of
its calls) whether its workspace is under the dashboard's runs root or beside the database."""

from __future__ import annotations

import re
import shutil

import pytest
from fastapi.testclient import TestClient

from physlab.bench.store import ResultsStore
from physlab.cli import main
from physlab.web import create_app

LOCAL = "http://127.0.0.1"  # the dashboard answers loopback hosts only


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A real sweep: the examples with two strategies and one scripted model."""
    d = tmp_path_factory.mktemp("sweep")
    db = d / "results.sqlite"
    with pytest.raises(SystemExit) as done:
        main(["bench", "run", "examples", "--strategies", "oneshot,two-step", "--models",
              "scripted:oneshot-qec-correct", "--db", str(db), "--no-progress"])
    assert done.value.code == 0
    return db


def links(html: str) -> list[str]:
    table = html.split('id="cells-table"')[1].split("</table>")[0]
    return re.findall(r'<a href="(/runs/[^"#]+)">', table)


def test_every_cell_opens_as_a_run_page_with_its_transcript(sweep, tmp_path):
    (tmp_path / "runs").mkdir()
    c = TestClient(create_app(tmp_path / "runs", db=sweep), base_url=LOCAL)         # cells live beside the db, not in runs/
    html = c.get("/sweeps").text
    store = ResultsStore(sweep, create=False)
    cells = store.cells()
    store.close()
    pages = links(html)
    assert len(pages) == len(cells) == 40 and len(set(pages)) == 40
    assert html.count("#calls\">transcript</a>") == 40
    for url in pages[:3] + pages[-3:]:
        page = c.get(url)
        assert page.status_code == 200 and 'id="calls"' in page.text and 'id="verdict"' in page.text
        assert page.text.count("<details id=\"call-") >= 1 and "sweep cell examples/" in page.text
        run_id = url.removeprefix("/runs/")
        assert c.get(f"/api/runs/{run_id}/calls/0").json()["role"] in ("solver", "formatter", "deriver")
        assert c.get(f"/fragments/runs/{run_id}").status_code == 200
    assert c.get("/runs/~cell/9999").status_code == 404 and c.get("/runs/~cell/..%2F..").status_code == 404
    assert TestClient(create_app(tmp_path / "runs"), base_url=LOCAL).get(pages[0]).status_code == 404   # no db: no cells


def test_cells_under_the_runs_root_keep_their_own_ids(sweep):
    root = sweep.parent / "results_runs"
    c = TestClient(create_app(root, db=sweep), base_url=LOCAL)
    pages = links(c.get("/sweeps").text)
    assert all(p.startswith("/runs/examples/") for p in pages) and len(pages) == 40
    assert c.get(pages[0]).status_code == 200


def test_a_cell_whose_workspace_is_gone_is_listed_without_a_link(sweep, tmp_path):
    db = tmp_path / "copy.sqlite"
    shutil.copy(sweep, db)
    c = TestClient(create_app(tmp_path, db=db), base_url=LOCAL)
    store = ResultsStore(db)
    store.conn.execute("UPDATE cells SET workspace = ? WHERE rowid = 1", (str(tmp_path / "gone"),))
    store.conn.commit()
    store.close()
    html = c.get("/sweeps").text
    assert len(links(html)) == 39 and 'data-cell="1"' in html
