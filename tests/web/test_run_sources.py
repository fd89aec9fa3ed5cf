"""The run page lists the literature a lab run cited (issue 37): each source with its key, the
quoted passage and who used it for what, as text (a title or passage from a paper is hostile)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState, SourceUse
from physlab.lab.workspace import RunWorkspace
from physlab.tools.literature import Source
from physlab.web import create_app


def test_the_run_page_shows_each_cited_source_and_escapes_it(tmp_path):
    root = tmp_path / "runs"
    ws = RunWorkspace(root / "lab-src")
    ws.init(problem_md="# p\n\nFind c.\n")
    src = Source(id="src-0123456789", key="arXiv:hep-th/9711200", title="Large N <script>alert(1)</script>",
                 passage="the trace of four gamma matrices is 4 (...)", origin="arxiv", year=1997,
                 url="javascript:alert(1)")
    state = T.cite_sources(ResearchState(problem_id="p"), [(src, SourceUse(role="surveyor", purpose="the form of c"))])
    ws.commit(state, "iteration 0")
    page = TestClient(create_app(root), base_url="http://127.0.0.1").get("/runs/lab-src").text
    assert '<section id="sources"><h2>Sources (1)</h2>' in page
    assert "arXiv:hep-th/9711200" in page and "the trace of four gamma matrices is 4" in page
    assert "surveyor (it. 0): the form of c" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert 'href="javascript:' not in page            # only http(s) links
