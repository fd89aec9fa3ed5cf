"""The literature for one run: arXiv, INSPIRE-HEP and the local corpus behind one seam, and the four
tool functions the lab's roles call.

``Library`` owns the run's clients (one paced connection per service), the corpus index and what the
tools have shown, so a quote a role cites can be checked against what it was really given
(:meth:`Library.source_for`). Each tool is a plain annotated async method returning a small typed
result; a source that cannot be asked becomes an ``unavailable: …`` line in that result, never an
exception or a traceback, so a role call goes on without it.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Literal, Protocol, TypeVar

import httpx
from pydantic import BaseModel
from pydantic_ai import Tool

from physlab.tools.literature.arxiv_source import ArxivSource
from physlab.tools.literature.corpus import CorpusIndex, IndexReport
from physlab.tools.literature.fetch import make_client
from physlab.tools.literature.fulltext import FulltextError
from physlab.tools.literature.inspire_source import InspireSource
from physlab.tools.literature.keys import BadKey, PaperKey, parse_key, without_version
from physlab.tools.literature.models import (
    CitationList,
    PaperMeta,
    PaperText,
    Passage,
    SearchHit,
    SearchResults,
    Source,
)
from physlab.tools.literature.polite import SourceUnavailable
from physlab.tools.literature.settings import LiteratureSettings
from physlab.tools.literature.text import clean_text, rank_passages, split_passages

log = logging.getLogger(__name__)
T = TypeVar("T")
M = TypeVar("M", bound=PaperMeta)
SearchSource = Literal["all", "arxiv", "inspire", "corpus"]


class LiteratureSource(Protocol):
    """The seam every bibliographic source fills: a name and a search returning typed hits."""

    name: str

    async def search(self, query: str, max_results: int) -> list[SearchHit]: ...


class Library:
    """A run's literature. ``online`` enables arXiv and INSPIRE; ``corpus`` (a folder) the local corpus,
    indexed into ``cache_dir/corpus.sqlite``. Use as ``async with Library(...) as lib:``."""

    def __init__(self, settings: LiteratureSettings | None = None, *, cache_dir: Path | None = None,
                 online: bool = True, corpus: Path | None = None):
        self.settings = settings or LiteratureSettings()
        self.cache_dir, self.online, self.corpus_dir = cache_dir, online, corpus
        self.arxiv: ArxivSource | None = None
        self.inspire: InspireSource | None = None
        self.corpus: CorpusIndex | None = None
        self.index_report: IndexReport | None = None
        self._http: list[httpx.AsyncClient] = []
        self._stack = ExitStack()
        self._meta: dict[str, PaperMeta] = {}       # every paper a tool has shown, by key
        self._shown: dict[str, list[str]] = {}      # the texts shown for each key (summaries, passages)

    async def __aenter__(self) -> Library:
        s = self.settings
        if self.online:
            arxiv_http, inspire_http = make_client(s.timeout_s, s.user_agent), make_client(s.timeout_s, s.user_agent)
            self._http = [arxiv_http, inspire_http]
            self.arxiv = ArxivSource(s, arxiv_http, self.cache_dir)
            self.inspire = InspireSource(s, inspire_http)
        if self.corpus_dir is not None:
            try:
                # Without a cache directory the index lives for this library only (indexed again next time).
                cache = self.cache_dir if self.cache_dir is not None else Path(self._stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="physlab-corpus-")))
                self.corpus = CorpusIndex(Path(self.corpus_dir), cache / "corpus.sqlite",
                                          passage_chars=s.passage_chars, summary_chars=s.summary_chars,
                                          max_text_chars=s.max_text_chars, max_pdf_bytes=s.max_download_bytes,
                                          pdf=s.pdf_limits())
                self.index_report = await self.corpus.update()
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self._http:
            await client.aclose()
        if self.corpus is not None:
            self.corpus.close()
        self._stack.close()

    # --- the tools -------------------------------------------------------------------------------

    async def search_literature(self, query: str, source: SearchSource = "all",
                                max_results: int | None = None) -> SearchResults:
        """Search the physics literature for papers: arXiv (titles, abstracts), INSPIRE-HEP (high-energy
        physics records with citation counts) and the physicist's own corpus, if one was given.

        Args:
            query: What to look for, in words (e.g. "surface code threshold depolarizing noise"). With
                source="arxiv" its own field syntax works too (ti:, au:, abs:, AND), with source="inspire"
                INSPIRE's (t, a, refersto:recid:N).
            source: "all" (every enabled source), "arxiv", "inspire" or "corpus".
            max_results: Hits per source (at most the run's limit).
        """
        k = self._k(max_results)
        query = clean_text(query, 500, one_line=True)
        out = SearchResults(query=query)
        enabled: dict[str, LiteratureSource | None] = {
            "arxiv": self.arxiv, "inspire": self.inspire,
            "corpus": _CorpusSearch(self.corpus) if self.corpus is not None else None}
        names = {"arxiv": "arXiv", "inspire": "INSPIRE", "corpus": "corpus"}
        why = {"arxiv": "the online literature tools are not enabled for this run",
               "inspire": "the online literature tools are not enabled for this run",
               "corpus": "no corpus folder was given for this run (--corpus DIR)"}
        picked = [n for n in enabled if enabled[n] is not None] if source == "all" else [source]
        if not picked:
            out.unavailable.append("unavailable: search_literature: no literature source is enabled for this run")
            return out
        out.unavailable += [f"unavailable: {names[n]}: {why[n]}" for n in picked if enabled[n] is None]
        if not query.strip():
            out.unavailable.append("unavailable: search_literature: the query is empty")
            return out
        asked = [(names[n], src) for n in picked if (src := enabled[n]) is not None]
        results = await asyncio.gather(*(self._guard(name, src.search(query, k)) for name, src in asked))
        by_arxiv: dict[str, SearchHit] = {}
        for _, result in zip(asked, results):
            if isinstance(result, str):
                out.unavailable.append(result)
                continue
            for hit in result:
                same = by_arxiv.get(hit.arxiv_id or "") if hit.origin != "corpus" else None
                if same is not None:  # one paper found by arXiv and INSPIRE: one hit with both ids
                    for f in ("inspire_recid", "doi", "citation_count", "year"):
                        if getattr(same, f) is None:
                            setattr(same, f, getattr(hit, f))
                    continue
                if hit.arxiv_id and hit.origin != "corpus":
                    by_arxiv[hit.arxiv_id] = hit
                out.hits.append(hit)
        for hit in out.hits:
            self._remember(hit, hit.summary)
        return out

    async def read_paper(self, key: str, query: str | None = None, start: int = 0) -> PaperText:
        """Read a paper's text: the passages that best match `query`, or from passage `start` on in
        reading order. Full text comes from arXiv (the authors' LaTeX, else the PDF) or the local corpus;
        an INSPIRE record or DOI without an arXiv version gives its abstract.

        Args:
            key: The paper: an arXiv id (2101.01234, hep-th/9711200), INSPIRE:<recid>, DOI:<doi>, or a
                corpus key from search_corpus (corpus:<path>).
            query: Words to look for in the paper; the best-matching passages are returned.
            start: Without a query, the first passage to return (to read on from where you stopped).
        """
        try:
            pk = parse_key(key)
        except BadKey as exc:
            return PaperText(key=clean_text(key, 80, one_line=True), title="", origin="corpus",
                             unavailable=[f"unavailable: read_paper: {exc}"])
        if pk.kind == "corpus":
            return self._read_corpus(pk, query, start)
        if not self.online:
            return PaperText(key=str(pk), title="", origin="arxiv", unavailable=[
                "unavailable: read_paper: the online literature tools are not enabled for this run"])
        assert self.arxiv is not None and self.inspire is not None
        meta_or_err = await self._guard("arXiv" if pk.kind == "arxiv" else "INSPIRE", self._metadata(pk))
        if isinstance(meta_or_err, str):
            return PaperText(key=str(pk), title="", origin="arxiv" if pk.kind == "arxiv" else "inspire",
                             unavailable=[meta_or_err])
        meta = meta_or_err
        base = meta.model_dump(include=set(PaperMeta.model_fields))
        if meta.arxiv_id is None:
            return self._passages(PaperText(**base, text_from="abstract"), [meta.summary] if meta.summary else [],
                                  query, start)
        text = await self._guard("arXiv", self.arxiv.fulltext(pk.value if pk.kind == "arxiv" else meta.arxiv_id))
        if isinstance(text, str):
            return self._passages(PaperText(**base, text_from="abstract", unavailable=[text]),
                                  [meta.summary] if meta.summary else [], query, start)
        passages = split_passages(text.text, self.settings.passage_chars)
        return self._passages(PaperText(**base, text_from=text.kind), passages, query, start)

    async def citations(self, key: str, direction: Literal["citations", "references"] = "citations",
                        max_results: int | None = None) -> CitationList:
        """Papers that cite a paper ("citations"), or that it cites ("references"), from INSPIRE-HEP,
        most cited first.

        Args:
            key: The paper: INSPIRE:<recid>, an arXiv id or DOI:<doi> (or a corpus BibTeX entry that has one).
            direction: "citations" (papers citing it) or "references" (papers it cites).
            max_results: How many to list (at most the run's limit).
        """
        out = CitationList(key=clean_text(key, 80, one_line=True), direction=direction)
        try:
            pk = parse_key(key)
        except BadKey as exc:
            out.unavailable.append(f"unavailable: citations: {exc}")
            return out
        out.key = str(pk)
        if pk.kind == "corpus":
            pk = self._corpus_identity(pk) or pk
            if pk.kind == "corpus":
                out.unavailable.append(f"unavailable: citations: {out.key} has no arXiv id or DOI to look it up by")
                return out
        if self.inspire is None:
            out.unavailable.append("unavailable: INSPIRE: the online literature tools are not enabled for this run")
            return out
        inspire = self.inspire

        async def ask() -> tuple[int, list[SearchHit]]:
            recid = int(pk.value) if pk.kind == "inspire" else (await inspire.record(pk)).inspire_recid
            assert recid is not None
            return await inspire.citing(recid, self._k(max_results), direction)

        result = await self._guard("INSPIRE", ask())
        if isinstance(result, str):
            out.unavailable.append(result)
            return out
        out.total = result[0]
        out.hits = [self._remember(h, h.summary) for h in result[1]]
        return out

    async def search_corpus(self, query: str, max_results: int | None = None) -> SearchResults:
        """Search the physicist's own papers and notes (the corpus folder given for this run), ranked by
        relevance, with the matching snippet of each. Read one with read_paper(key).

        Args:
            query: Words to look for.
            max_results: How many documents to list (at most the run's limit).
        """
        return await self.search_literature(query, source="corpus", max_results=max_results)

    def tools(self) -> list[Tool]:
        """The tools a role's agent gets for this run: search_literature, read_paper, citations (when
        online) and search_corpus (when a corpus was given)."""
        fns: list[Callable[..., Awaitable[BaseModel]]] = []
        if self.online or self.corpus is not None:
            fns += [self.search_literature, self.read_paper]
        if self.online:
            fns.append(self.citations)
        if self.corpus is not None:
            fns.append(self.search_corpus)
        return [Tool(fn, takes_ctx=False) for fn in fns]

    # --- sources the lab records -----------------------------------------------------------------

    def source_for(self, key: str, quote: str) -> Source | None:
        """The :class:`Source` for a passage a role quotes from ``key``, if a tool really showed that
        passage (whitespace and case aside) in this run; None if it did not (a quote no tool gave)."""
        try:
            canon = parse_key(key).canonical()
        except BadKey:
            return None
        meta = self._meta.get(canon)
        needle = " ".join(quote.split()).lower()
        if meta is None or len(needle) < 8:
            return None
        for shown in self._shown.get(canon, []):
            if needle in " ".join(shown.split()).lower():
                return meta.source(clean_text(quote, self.settings.passage_chars))
        return None

    def seen(self, key: str) -> PaperMeta | None:
        """What the tools have shown about a paper (its title, authors, ids), if anything."""
        try:
            return self._meta.get(parse_key(key).canonical())
        except BadKey:
            return None

    # --- plumbing --------------------------------------------------------------------------------

    def _k(self, n: int | None) -> int:
        return max(1, min(n or self.settings.max_results, self.settings.max_results))

    def _remember(self, meta: M, shown: str) -> M:
        """Keep what a tool showed about a paper, under each key it is known by (so a quote from the
        arXiv text of an INSPIRE record is found by either key)."""
        for key in _aliases(meta):
            kept = self._meta.get(key)
            if kept is None or (isinstance(meta, SearchHit) and not isinstance(kept, SearchHit)):
                self._meta[key] = meta
            texts = self._shown.setdefault(key, [])
            if shown and shown not in texts and len(texts) < 500:
                texts.append(shown)
        return meta

    async def _metadata(self, pk: PaperKey) -> SearchHit:
        cached = self._meta.get(pk.canonical())
        if isinstance(cached, SearchHit) and (cached.arxiv_id is not None or pk.kind != "arxiv"):
            return cached
        assert self.arxiv is not None and self.inspire is not None
        hit = await (self.arxiv.metadata(pk.value) if pk.kind == "arxiv" else self.inspire.record(pk))
        self._remember(hit, hit.summary)
        return hit

    def _corpus_identity(self, pk: PaperKey) -> PaperKey | None:
        found = self.corpus.document(str(pk)) if self.corpus is not None else None
        if found is None:
            return None
        meta = found[0]
        if meta.arxiv_id:
            return PaperKey(kind="arxiv", value=meta.arxiv_id)
        if meta.doi:
            return PaperKey(kind="doi", value=meta.doi)
        return None

    def _read_corpus(self, pk: PaperKey, query: str | None, start: int) -> PaperText:
        if self.corpus is None:
            return PaperText(key=str(pk), title="", origin="corpus", unavailable=[
                "unavailable: corpus: no corpus folder was given for this run (--corpus DIR)"])
        found = self.corpus.document(str(pk))
        if found is None:
            return PaperText(key=str(pk), title="", origin="corpus", unavailable=[
                f"unavailable: corpus: no document {pk} in the corpus (search_corpus lists what is there)"])
        meta, passages = found
        self._remember(meta, "")
        return self._passages(PaperText(**meta.model_dump(), text_from="corpus"), passages, query, start)

    def _passages(self, paper: PaperText, passages: list[str], query: str | None, start: int) -> PaperText:
        k = self.settings.max_passages
        chosen = rank_passages(passages, query, k) if query else []
        if not chosen:
            first = max(0, min(start, max(len(passages) - 1, 0)))
            chosen = list(range(first, min(first + k, len(passages))))
        paper.passages = [Passage(index=i, text=passages[i]) for i in chosen]
        paper.total_passages = len(passages)
        meta = PaperMeta(**paper.model_dump(include=set(PaperMeta.model_fields)))
        for p in paper.passages:
            self._remember(meta, p.text)
        return paper

    async def _guard(self, name: str, work: Awaitable[T]) -> T | str:
        """The result, or the one 'unavailable: …' line the lab gets when the source failed."""
        try:
            return await work
        except SourceUnavailable as exc:
            return str(exc)
        except FulltextError as exc:
            return f"unavailable: {name}: {exc}"
        except Exception as exc:  # hostile data reached a path nobody foresaw: the role goes on without it
            log.warning("literature tool %s failed", name, exc_info=True)
            return f"unavailable: {name}: internal error ({type(exc).__name__})"


def _aliases(meta: PaperMeta) -> list[str]:
    keys = [meta.key]
    if meta.arxiv_id:
        keys.append(f"arXiv:{without_version(meta.arxiv_id)}")
    if meta.inspire_recid is not None:
        keys.append(f"INSPIRE:{meta.inspire_recid}")
    if meta.doi:
        keys.append(f"DOI:{meta.doi}")
    return list(dict.fromkeys(keys))


class _CorpusSearch:
    name = "corpus"

    def __init__(self, index: CorpusIndex):
        self.index = index

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        return self.index.search(query, max_results)
