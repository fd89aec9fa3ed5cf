"""arXiv's API and site against the stand-in: search, abstracts, full text."""

from __future__ import annotations

import asyncio

import pytest

from physlab.tools.literature import Library, SourceUnavailable
from physlab.tools.literature.arxiv_source import arxiv_query
from physlab.tools.literature.standin import LiteratureStandin, StandinPaper, eprint_gzip, minimal_pdf


async def test_search_returns_typed_hits_from_the_atom_feed(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        res = await lib.search_literature("toric code anyons", source="arxiv")
    assert res.unavailable == []
    hit = res.hits[0]
    assert hit.key == "arXiv:quant-ph/9707021" and hit.arxiv_id == "quant-ph/9707021"
    assert hit.title == "Fault-tolerant quantum computation by anyons"
    assert hit.authors == ["A. Yu. Kitaev"] and hit.year == 1997
    assert hit.doi == "10.1016/S0003-4916(02)00018-0"
    assert hit.url == f"{standin.base_url}/abs/quant-ph/9707021"
    # arXiv wraps abstracts across indented lines: the summary is one clean line
    assert "\n" not in hit.summary and "toric code stores qubits" in hit.summary
    sent = standin.requests_to("arxiv")[0]
    assert sent.path == "/api/query" and sent.query["search_query"] == "all:toric AND all:code AND all:anyons"


def test_a_models_own_arxiv_syntax_is_sent_as_written():
    assert arxiv_query("au:del_maestro AND ti:checkerboard") == "au:del_maestro AND ti:checkerboard"
    assert arxiv_query("Kitaev's toric-code (2003)") == "all:Kitaev AND all:toric-code AND all:2003"


async def test_many_authors_are_listed_as_et_al(standin, tmp_path):
    async with Library(standin.settings(max_authors=3), cache_dir=tmp_path) as lib:
        res = await lib.search_literature("holographic codes", source="arxiv")
    assert res.hits[0].authors == ["Ada Lovelace", "Emmy Noether", "Paul Dirac", "et al."]


async def test_read_paper_gives_latex_passages_with_the_equations_as_written(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        paper = await lib.read_paper("arXiv:quant-ph/9707021v2", query="stabilizers of the toric code")
    assert paper.text_from == "latex source" and paper.unavailable == []
    assert paper.key == "arXiv:quant-ph/9707021" and paper.title.startswith("Fault-tolerant")
    best = paper.passages[0].text
    # the \input file was inlined from the archive; the mathematics is the authors' LaTeX
    assert r"A_v = \prod_{j \in \mathrm{star}(v)} \sigma^x_j" in best
    whole = " ".join(p.text for p in paper.passages)
    assert "SECRET-COMMENT" not in whole and "FIGURE-CAPTION-DROPPED" not in whole


async def test_read_paper_without_query_reads_in_order_and_pages_on(standin, tmp_path):
    settings = standin.settings(passage_chars=200, max_passages=2)
    async with Library(settings, cache_dir=tmp_path) as lib:
        first = await lib.read_paper("quant-ph/9707021")
        rest = await lib.read_paper("quant-ph/9707021", start=2)
    assert [p.index for p in first.passages] == [0, 1]
    assert first.passages[0].text.startswith("Abstract.")
    assert first.total_passages > 2 and rest.passages[0].index == 2
    # downloaded once: the second reading came from the run's cache
    assert len([r for r in standin.served if r.path.startswith("/e-print/")]) == 1


async def test_pdf_only_submission_is_read_from_the_pdf(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        paper = await lib.read_paper("hep-th/9711200", query="near-horizon geometry")
    assert paper.text_from == "pdf", paper.unavailable
    assert any("near-horizon geometry of N D3-branes" in p.text for p in paper.passages)


async def test_fulltext_pdf_setting_prefers_the_pdf(tmp_path):
    paper = StandinPaper("2101.00001", "Both", ["A B"], "abstract words", "2021-01-01",
                         eprint=eprint_gzip("\\documentclass{article}\\begin{document}FROM-LATEX\\end{document}"),
                         pdf=minimal_pdf([["FROM-PDF page one"]]))
    with LiteratureStandin([paper]) as srv:
        async with Library(srv.settings(fulltext="pdf"), cache_dir=tmp_path / "a") as lib:
            from_pdf = await lib.read_paper("2101.00001")
        async with Library(srv.settings(), cache_dir=tmp_path / "b") as lib:
            from_tex = await lib.read_paper("2101.00001")
    assert from_pdf.text_from == "pdf" and "FROM-PDF" in from_pdf.passages[0].text
    assert from_tex.text_from == "latex source" and "FROM-LATEX" in from_tex.passages[0].text


async def test_bad_arxiv_id_is_one_line_for_the_model(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        paper = await lib.read_paper("arXiv:12345")
    assert paper.passages == []
    assert paper.unavailable == ["unavailable: read_paper: not an arXiv id: '12345' (expected e.g. 1207.7214, "
                                 "2101.01234v2 or hep-th/9711200)"]
    assert standin.served == []  # nothing was sent


async def test_the_apis_error_feed_is_not_mistaken_for_a_paper(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        # arXiv answers an id it cannot parse with a one-entry feed titled 'Error' (HTTP 200); that
        # entry has no <published> and is dropped (as the `arxiv` package drops it): no paper at all
        with pytest.raises(SourceUnavailable) as err:
            await lib.arxiv.metadata("9707021")  # type: ignore[union-attr]
    assert str(err.value) == "unavailable: arXiv: no paper arXiv:9707021"


async def test_unknown_paper_falls_back_to_nothing_with_a_reason(standin, tmp_path):
    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        paper = await lib.read_paper("2401.99999")
    assert paper.passages == [] and paper.unavailable == ["unavailable: arXiv: no paper arXiv:2401.99999"]


async def test_requests_to_arxiv_are_spaced_and_never_concurrent(standin, tmp_path):
    delay = 0.25
    async with Library(standin.settings(arxiv_delay_s=delay), cache_dir=tmp_path) as lib:
        await asyncio.gather(lib.search_literature("toric", source="arxiv"),
                             lib.search_literature("holographic", source="arxiv"),
                             lib.read_paper("quant-ph/9707021"))
    served = sorted(standin.requests_to("arxiv"), key=lambda r: r.started)
    assert len(served) >= 4  # two searches, the paper's metadata, its e-print
    assert standin.max_in_flight["arxiv"] == 1
    gaps = [b.started - a.finished for a, b in zip(served, served[1:])]
    assert min(gaps) >= delay * 0.95, gaps
