"""arXiv: search and abstracts from its Atom API, full text from arxiv.org.

The API is asked as the `arxiv` package (lukasschwab/arxiv.py) asks it -- ``search_query`` or
``id_list``, ``sortBy=relevance``, ``sortOrder=descending``, ``start``, ``max_results`` (arXiv API
User's Manual, "Query Interface") -- but through PhysLab's own bounded fetcher (:mod:`.fetch`: the
API's own host only, a timeout per phase and for the whole reply, at most ``max_response_bytes``),
paced with the downloads (:mod:`.polite`). Its feed is read with lxml's public API and the settings
the package's own parser has (no entity expansion, no network, libxml2's depth limit), into PhysLab's
``SearchHit``. The package's client itself is not used: it takes no session, transport or timeout
through its public API (``Client(page_size, delay_seconds, num_retries)`` only), so bounding its
requests meant replacing its private ``_session``.
The PDF and e-print URLs are built from the ``arxiv_site_url`` setting and the checked id, never
taken from the feed.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from lxml import etree
from pydantic import TypeAdapter

from physlab.tools.literature.fetch import get_bytes
from physlab.tools.literature.fulltext import Fulltext, FulltextError, is_pdf, paper_text
from physlab.tools.literature.keys import BadKey, parse_key, without_version
from physlab.tools.literature.models import SearchHit
from physlab.tools.literature.polite import Pace, Pacer, SourceUnavailable
from physlab.tools.literature.settings import LiteratureSettings
from physlab.tools.literature.text import clean_text

NAME = "arXiv"
_FULLTEXT = TypeAdapter(Fulltext)
# The feed's namespaces (arXiv API User's Manual, "Details of Atom Results Returned").
_NS = {"atom": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}


class ArxivSource:
    """arXiv for one run: one connection, requests (API and downloads) spaced by ``arxiv_delay_s``."""

    name = NAME

    def __init__(self, settings: LiteratureSettings, http: httpx.AsyncClient, cache_dir: Path | None = None):
        self.settings, self._http = settings, http
        self._pacer = Pacer(Pace(min_interval_s=settings.arxiv_delay_s))
        self._cache = cache_dir / "arxiv" if cache_dir is not None else None

    @property
    def host(self) -> str:
        return urlsplit(self.settings.arxiv_api_url).netloc

    async def _entries(self, *, query: str = "", ids: tuple[str, ...] = (), max_results: int) -> list[FeedEntry]:
        """One page of the API's answer, read. A request is tried again, ``arxiv_retries`` times, when the
        server answered with an error or the connection failed (as the `arxiv` package's client does);
        not after a timeout, a reply over the cap or a redirect elsewhere."""
        s = self.settings
        params = {"search_query": query, "id_list": ",".join(ids), "sortBy": "relevance", "sortOrder": "descending",
                  "start": "0", "max_results": str(max_results)}
        for attempt in range(s.arxiv_retries + 1):
            last = attempt == s.arxiv_retries
            async with self._pacer.turn():
                try:
                    status, _, body = await get_bytes(self._http, s.arxiv_api_url, source=NAME, params=params,
                                                      max_bytes=s.max_response_bytes, accept="application/atom+xml")
                except SourceUnavailable as exc:
                    if exc.transient and not last:
                        continue
                    raise
            if status == 200:
                break
            if last:
                raise SourceUnavailable(NAME, f"{self.host} answered HTTP {status}")
        try:
            return await asyncio.to_thread(read_feed, body)
        except (ValueError, etree.LxmlError) as exc:
            raise SourceUnavailable(NAME, f"{self.host} sent a feed that cannot be read ({type(exc).__name__})"
                                    ) from None

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        entries = await self._entries(query=arxiv_query(query), max_results=max_results)
        return [self._hit(e) for e in entries[:max_results]]

    async def metadata(self, arxiv_id: str) -> SearchHit:
        entries = await self._entries(ids=(arxiv_id,), max_results=1)
        if not entries:
            raise SourceUnavailable(NAME, f"no paper arXiv:{arxiv_id}")
        return self._hit(entries[0])

    async def fulltext(self, arxiv_id: str) -> Fulltext:
        """The paper's text: its e-print source (LaTeX) or its PDF, as ``fulltext`` prefers; cached in the
        run's cache directory so a paper is downloaded once per run."""
        cached = self._cached(arxiv_id)
        if cached is not None:
            return cached
        order = ["e-print", "pdf"] if self.settings.fulltext == "source" else ["pdf", "e-print"]
        errors: list[str] = []
        for kind in order:
            url = f"{self.settings.arxiv_site_url.rstrip('/')}/{kind}/{arxiv_id}"
            async with self._pacer.turn():
                status, _, data = await get_bytes(self._http, url, source=NAME,
                                                  max_bytes=self.settings.max_download_bytes)
            if status != 200:
                errors.append(f"{kind}: HTTP {status}")
                continue
            if kind == "pdf" and not is_pdf(data):
                errors.append("pdf: not a PDF")
                continue
            try:
                text = await paper_text(data, max_unpacked=self.settings.max_source_unpacked_bytes,
                                        max_chars=self.settings.max_text_chars, pdf=self.settings.pdf_limits())
            except FulltextError as exc:
                errors.append(f"{kind}: {exc}")
                continue
            self._store(arxiv_id, text)
            return text
        raise SourceUnavailable(NAME, f"no readable text for arXiv:{arxiv_id} ({'; '.join(errors)})")

    def _cache_file(self, arxiv_id: str) -> Path | None:
        return self._cache / (arxiv_id.replace("/", "_") + ".json") if self._cache is not None else None

    def _cached(self, arxiv_id: str) -> Fulltext | None:
        path = self._cache_file(arxiv_id)
        if path is None or not path.is_file():
            return None
        try:
            return _FULLTEXT.validate_json(path.read_bytes())
        except (OSError, ValueError):
            return None

    def _store(self, arxiv_id: str, text: Fulltext) -> None:
        path = self._cache_file(arxiv_id)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(_FULLTEXT.dump_json(text))
        tmp.replace(path)

    def _hit(self, e: FeedEntry) -> SearchHit:
        s = self.settings
        short = e.entry_id.split("arxiv.org/abs/")[-1]  # the id the feed names, read as the package reads it
        try:
            key = parse_key(f"arXiv:{without_version(short)}")
        except BadKey:
            raise SourceUnavailable(NAME, f"the feed gave an entry with an unexpected id {short[:40]!r}") from None
        authors = [clean_text(a, 120, one_line=True) for a in e.authors]
        doi = clean_text(e.doi, 200, one_line=True) or None
        return SearchHit(key=str(key), title=clean_text(e.title, 300, one_line=True) or "(untitled)",
                         authors=_cap_authors(authors, s.max_authors), year=e.published.year,
                         url=f"{s.arxiv_site_url.rstrip('/')}/abs/{key.value}", arxiv_id=key.value,
                         doi=doi if doi and doi.startswith("10.") else None, origin="arxiv",
                         summary=clean_text(e.summary, s.summary_chars, one_line=True))


@dataclass(frozen=True)
class FeedEntry:
    """What a hit takes from one ``<entry>`` of the API's Atom feed."""

    entry_id: str
    title: str
    authors: list[str]
    summary: str
    doi: str
    published: datetime


def read_feed(data: bytes) -> list[FeedEntry]:
    """The entries of an Atom feed from the API. An entry without ``<id>``, ``<updated>`` or
    ``<published>`` is left out, as the `arxiv` package leaves it out (arXiv answers a malformed id
    with a one-entry feed titled 'Error' that has no ``<published>``); a date that is no date makes
    the feed unreadable (ValueError), and so does a reply that is no XML."""
    # The `arxiv` package's own parser settings: no entity is expanded (an entity bomb stays one
    # reference), nothing is fetched (an external entity naming a local file stays unread), and
    # libxml2's limits hold (nesting past 256 levels is cut off).
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=True)
    root = etree.fromstring(data, parser=parser) if data.strip() else None
    if root is None:
        raise ValueError("not an XML document")
    entries = []
    for entry in root.iterfind("atom:entry", _NS):
        entry_id, updated, published = (entry.findtext(f"atom:{tag}", None, _NS) for tag in ("id", "updated", "published"))
        if not entry_id or updated is None or published is None:
            continue
        _date(updated)
        entries.append(FeedEntry(
            entry_id=entry_id, title=re.sub(r"\s+", " ", entry.findtext("atom:title", "", _NS)),
            authors=[a.findtext("atom:name", "", _NS) for a in entry.iterfind("atom:author", _NS)],
            summary=entry.findtext("atom:summary", "", _NS), doi=entry.findtext("arxiv:doi", "", _NS),
            published=_date(published)))
    return entries


def _date(text: str) -> datetime:
    """An Atom (RFC 3339) timestamp as arXiv writes them ("2016-05-26T17:59:46Z")."""
    return datetime.fromisoformat(text.strip().replace("Z", "+00:00"))


def _cap_authors(authors: list[str], most: int) -> list[str]:
    authors = [a for a in authors if a]
    return authors if len(authors) <= most else authors[:most] + ["et al."]


_FIELD = re.compile(r"\b(?:ti|au|abs|co|jr|cat|rn|all|id):")
_OPERATOR = re.compile(r"\b(?:AND|OR|ANDNOT)\b")


def arxiv_query(text: str) -> str:
    """The API's search_query for what a model wrote: its own syntax (``ti:``, ``au:``, AND/OR) as
    written; plain words as ``all:word AND all:word …`` (the API's manual gives space no AND meaning)."""
    if _FIELD.search(text) or _OPERATOR.search(text):
        return text
    words = [w for w in re.findall(r"\w[\w\-.]*", text) if len(w) > 1][:16]
    return " AND ".join(f"all:{w}" for w in words) if words else text


