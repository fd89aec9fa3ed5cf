"""The local corpus: a folder of PDFs, LaTeX, Markdown notes and BibTeX, indexed once into SQLite FTS5
(incrementally) and searched with ranked snippets."""

from __future__ import annotations

import os
import sqlite3

import pytest

from physlab.tools.literature import Library
from physlab.tools.literature.corpus import CorpusIndex
from physlab.tools.literature.standin import minimal_pdf

BIB = r"""% exported from INSPIRE
@string{prl = "Phys. Rev. Lett."}
@article{Maldacena:1997re,
    author = "Maldacena, Juan Martin",
    title = "{The Large $N$ limit of superconformal field theories and supergravity}",
    eprint = "hep-th/9711200",
    doi = "10.1023/A:1026654312961",
    journal = "Adv. Theor. Math. Phys.",
    year = "1998",
    abstract = {We show that the large N limit of conformal field theories contains supergravity on AdS.}
}
@misc{Dennis:2001nw, author = {Dennis, Eric and Kitaev, Alexei and Landahl, Andrew and Preskill, John},
  title = {Topological quantum memory}, year = 2002, eprint = {quant-ph/0110143},
  note = {threshold of the surface code under independent noise near 11 percent}}
@article{broken, title = {never closed
"""

NOTES = """# Lindblad notes

Some scratch on open systems.

## Amplitude damping

The jump operator is $L = \\sqrt{\\gamma}\\, \\sigma_-$ and the excited population decays as $e^{-\\gamma t}$.

## Dephasing

Pure dephasing kills coherences at rate $2\\gamma_\\phi$ without changing populations.
"""

TEX = r"""\documentclass{article}
\title{My draft on the Unruh effect}
\begin{document}
\maketitle
An accelerated detector sees a thermal bath at $T = \hbar a / (2 \pi c k_B)$.
% TODO: secret referee reply
\end{document}
"""


def make_corpus(root):
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "lindblad.md").write_text(NOTES)
    (root / "drafts").mkdir()
    (root / "drafts" / "unruh.tex").write_text(TEX)
    (root / "refs.bib").write_text(BIB)
    (root / "papers").mkdir()
    (root / "papers" / "hawking.pdf").write_bytes(minimal_pdf(
        [["Particle creation by black holes"], ["A black hole radiates with temperature T = kappa / 2 pi."]],
        title="Particle creation by black holes"))
    (root / "papers" / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (root / "ignored.py").write_text("print('not a document')")
    (root / ".hidden.md").write_text("# hidden")
    return root


async def test_corpus_is_indexed_and_searched_with_ranked_snippets(tmp_path):
    corpus = make_corpus(tmp_path / "library")
    async with Library(online=False, corpus=corpus, cache_dir=tmp_path / "cache") as lib:
        report = lib.index_report
        res = await lib.search_corpus("amplitude damping jump operator")
        hawking = await lib.search_corpus("black hole temperature")
        bib = await lib.search_corpus("surface code threshold")
    assert sorted(report.indexed) == ["drafts/unruh.tex", "notes/lindblad.md", "papers/hawking.pdf", "refs.bib"]
    assert report.failed and report.failed[0].startswith("papers/broken.pdf: unreadable PDF")
    assert (tmp_path / "cache" / "corpus.sqlite").is_file()
    top = res.hits[0]
    assert top.key == "corpus:notes/lindblad.md" and top.title == "Lindblad notes" and top.origin == "corpus"
    assert "\\sqrt{\\gamma}" in top.summary
    assert hawking.hits[0].key == "corpus:papers/hawking.pdf"
    assert hawking.hits[0].title == "Particle creation by black holes"
    entry = bib.hits[0]
    assert entry.key == "corpus:refs.bib#Dennis:2001nw" and entry.title == "Topological quantum memory"
    assert entry.authors[:2] == ["Dennis, Eric", "Kitaev, Alexei"] and entry.year == 2002
    assert entry.arxiv_id == "quant-ph/0110143"


async def test_titles_weigh_more_than_bodies(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    (root / "a.md").write_text("# Gauge anomalies\n\nA short note.")
    (root / "b.md").write_text("# Other things\n\nWe mention gauge anomalies once in a long text. " + "filler " * 50)
    async with Library(online=False, corpus=root, cache_dir=tmp_path / "cache") as lib:
        res = await lib.search_corpus("gauge anomalies")
    assert [h.key for h in res.hits] == ["corpus:a.md", "corpus:b.md"]


async def test_reindexing_reads_only_what_changed(tmp_path):
    corpus = make_corpus(tmp_path / "library")
    db = tmp_path / "cache" / "corpus.sqlite"
    index = CorpusIndex(corpus, db)
    first = await index.update()
    assert len(first.read) == 5  # four documents and the broken PDF
    index.close()

    index = CorpusIndex(corpus, db)  # a new run with the same cache
    second = await index.update()
    assert second.read == [] and second.indexed == [] and second.unchanged == 5

    notes = corpus / "notes" / "lindblad.md"
    notes.write_text(NOTES.replace("## Dephasing", "## Depolarising").replace("Pure dephasing kills coherences",
                                                                            "Depolarising noise shrinks Bloch vectors"))
    os.utime(corpus / "refs.bib")  # touched, same contents: read, not re-indexed
    (corpus / "drafts" / "unruh.tex").unlink()
    third = await index.update()
    assert sorted(third.read) == ["notes/lindblad.md", "refs.bib"]
    assert third.indexed == ["notes/lindblad.md"] and third.removed == ["drafts/unruh.tex"]
    assert index.search("depolarising")[0].key == "corpus:notes/lindblad.md"
    assert index.search("dephasing") == [] and index.search("Unruh") == []
    index.close()


async def test_read_paper_on_a_corpus_document_and_its_citations_by_eprint(tmp_path, standin):
    corpus = make_corpus(tmp_path / "library")
    async with Library(standin.settings(), corpus=corpus, cache_dir=tmp_path / "cache") as lib:
        note = await lib.read_paper("corpus:notes/lindblad.md", query="populations coherences")
        draft = await lib.read_paper("corpus:drafts/unruh.tex")
        missing = await lib.read_paper("corpus:notes/nothing.md")
        escape = await lib.read_paper("corpus:../../etc/passwd")
        cites = await lib.citations("corpus:refs.bib#Maldacena:1997re", direction="references")
    assert note.text_from == "corpus" and "Pure dephasing kills coherences" in note.passages[0].text
    assert draft.title == "My draft on the Unruh effect" and "secret referee" not in draft.passages[0].text
    assert missing.unavailable == ["unavailable: corpus: no document corpus:notes/nothing.md in the corpus "
                                   "(search_corpus lists what is there)"]
    assert escape.unavailable[0].startswith("unavailable: read_paper: not a corpus path")
    assert cites.key == "corpus:refs.bib#Maldacena:1997re" and cites.hits[0].key == "INSPIRE:448893"


async def test_links_out_of_the_folder_are_not_followed(tmp_path):
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "diary.md").write_text("# Diary\n\nsecret plans for the grant")
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "diary.md").symlink_to(outside / "diary.md")
    (root / "mine.md").write_text("# Mine\n\nthe grant proposal draft")
    async with Library(online=False, corpus=root, cache_dir=tmp_path / "cache") as lib:
        res = await lib.search_corpus("grant")
    assert [h.key for h in res.hits] == ["corpus:mine.md"]
    assert lib.index_report.skipped == ["diary.md: a link to outside the corpus folder"]


async def test_an_index_from_another_schema_version_is_rebuilt(tmp_path):
    corpus = make_corpus(tmp_path / "library")
    db = tmp_path / "corpus.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE files(path TEXT); PRAGMA user_version = 99;")
    con.close()
    index = CorpusIndex(corpus, db)
    report = await index.update()
    assert "notes/lindblad.md" in report.indexed
    index.close()


async def test_query_text_is_never_fts_syntax(tmp_path):
    corpus = make_corpus(tmp_path / "library")
    async with Library(online=False, corpus=corpus, cache_dir=tmp_path / "cache") as lib:
        for q in ['"unbalanced', "NEAR(a b", "amplitude* OR", "col:value", "-", "()", "AND"]:
            res = await lib.search_corpus(q)
            assert res.unavailable == [] or res.unavailable == ["unavailable: search_literature: the query is empty"]
        res = await lib.search_corpus('"amplitude damping')
    assert res.hits[0].key == "corpus:notes/lindblad.md"


async def test_a_missing_corpus_folder_is_one_line_for_the_user(tmp_path):
    from physlab.errors import UserError

    with pytest.raises(UserError) as err:
        async with Library(online=True, corpus=tmp_path / "nope", cache_dir=tmp_path / "cache"):
            pass
    assert str(err.value) == f"{tmp_path / 'nope'}: the corpus folder does not exist or is not a folder"
