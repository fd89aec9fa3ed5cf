"""INSPIRE-HEP: literature search, a record's citations and references, through its public REST API.

Read from the API's documented JSON (github.com/inspirehep/rest-api-doc; field meanings in the
inspire-schemas `hep` schema): a search is ``GET /api/literature?q=…&size=…&fields=…`` answering
``{"hits": {"total", "hits": [{"id", "metadata": {...}}]}}``. Citations are the search
``refersto:recid:N`` and references ``citedby:recid:N``; an arXiv id or DOI is first resolved to its
record. Requests are paced to INSPIRE's limit (15 per 5 s per IP) and a 429 is waited out once.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from physlab.tools.literature.fetch import get_bytes
from physlab.tools.literature.keys import ARXIV_ID, DOI, PaperKey
from physlab.tools.literature.models import SearchHit
from physlab.tools.literature.polite import Pace, Pacer, SourceUnavailable
from physlab.tools.literature.settings import LiteratureSettings
from physlab.tools.literature.text import clean_text

NAME = "INSPIRE"
# Only what a hit shows (the API's `fields` filter: a collaboration paper's full record runs to MBs).
FIELDS = ("control_number,titles.title,authors.full_name,abstracts.value,arxiv_eprints.value,dois.value,"
          "earliest_date,citation_count")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Value(_Lenient):
    value: str | None = None


class _Title(_Lenient):
    title: str | None = None


class _Author(_Lenient):
    full_name: str | None = None


class _Literature(_Lenient):
    """The fields of a `hep` record that a hit uses (inspire-schemas hep.json, plus the search-only
    `earliest_date` and `citation_count` the API documents)."""

    control_number: int
    titles: list[_Title] = []
    authors: list[_Author] = []
    abstracts: list[_Value] = []
    arxiv_eprints: list[_Value] = []
    dois: list[_Value] = []
    earliest_date: str | None = None
    citation_count: int | None = None


class _Hit(_Lenient):
    metadata: _Literature


class _Hits(_Lenient):
    total: int = 0
    hits: list[_Hit] = []


class _Search(_Lenient):
    hits: _Hits


class InspireSource:
    """INSPIRE-HEP for one run, paced to its documented rate limit."""

    name = NAME

    def __init__(self, settings: LiteratureSettings, http: httpx.AsyncClient):
        self.settings, self._http = settings, http
        # 10% more than the window: INSPIRE counts requests when they arrive, we when they leave.
        self._pacer = Pacer(Pace(max_requests=settings.inspire_max_requests, window_s=settings.inspire_window_s * 1.1))

    @property
    def host(self) -> str:
        return urlsplit(self.settings.inspire_api_url).netloc

    @property
    def site(self) -> str:
        """The website beside the API (https://inspirehep.net for https://inspirehep.net/api)."""
        return self.settings.inspire_api_url.rstrip("/").removesuffix("/api")

    async def _search(self, q: str, size: int, sort: str | None = None) -> tuple[int, list[SearchHit]]:
        params = {"q": q, "size": str(size), "fields": FIELDS}
        if sort:
            params["sort"] = sort
        url = self.settings.inspire_api_url.rstrip("/") + "/literature"
        async with self._pacer.turn():
            status, _, body = await self._get(url, params)
            if status == 429:  # "wait at least 5s when receiving a 429 response before trying again"
                await asyncio.sleep(self.settings.inspire_window_s)
                status, _, body = await self._get(url, params)
        if status == 429:
            raise SourceUnavailable(NAME, f"{self.host} is rate-limiting this address (HTTP 429)")
        if status != 200:
            raise SourceUnavailable(NAME, f"{self.host} answered HTTP {status}")
        try:
            parsed = _Search.model_validate(json.loads(body))
        except (ValueError, RecursionError, ValidationError) as exc:
            what = "not JSON" if isinstance(exc, (json.JSONDecodeError, RecursionError)) else "not a search reply"
            raise SourceUnavailable(NAME, f"{self.host} sent a reply that is {what}") from None
        return parsed.hits.total, [self._hit(h.metadata) for h in parsed.hits.hits[:size]]

    async def _get(self, url: str, params: dict[str, str]) -> tuple[int, str, bytes]:
        return await get_bytes(self._http, url, source=NAME, params=params, accept="application/json",
                               max_bytes=self.settings.max_response_bytes)

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        return (await self._search(query, max_results))[1]

    async def record(self, key: PaperKey) -> SearchHit:
        """The INSPIRE record for an INSPIRE, arXiv or DOI key."""
        q = {"inspire": lambda v: f"recid:{v}", "arxiv": lambda v: f"arxiv:{v}",
             "doi": lambda v: f'doi:"{v}"'}[key.kind](key.value)
        _, hits = await self._search(q, 1)
        if not hits:
            raise SourceUnavailable(NAME, f"no record for {key}")
        return hits[0]

    async def citing(self, recid: int, max_results: int, direction: str) -> tuple[int, list[SearchHit]]:
        op = "refersto" if direction == "citations" else "citedby"
        return await self._search(f"{op}:recid:{recid}", max_results, sort="mostcited")

    def _hit(self, m: _Literature) -> SearchHit:
        s = self.settings
        title = next((t.title for t in m.titles if t.title), None)
        authors = [clean_text(a.full_name, 120, one_line=True) for a in m.authors[: s.max_authors + 1] if a.full_name]
        if len(m.authors) > s.max_authors:
            authors = authors[: s.max_authors] + ["et al."]
        arxiv_id = next((e.value for e in m.arxiv_eprints if e.value and ARXIV_ID.fullmatch(e.value)), None)
        doi = next((d.value for d in m.dois if d.value and DOI.fullmatch(d.value)), None)
        year = _year(m.earliest_date)
        return SearchHit(key=f"INSPIRE:{m.control_number}", title=clean_text(title, 300, one_line=True) or "(untitled)",
                         authors=authors, year=year, url=f"{self.site}/literature/{m.control_number}",
                         arxiv_id=arxiv_id, inspire_recid=m.control_number, doi=doi, origin="inspire",
                         summary=clean_text(next((a.value for a in m.abstracts if a.value), ""), s.summary_chars,
                                            one_line=True),
                         citation_count=m.citation_count)


def _year(date: str | None) -> int | None:
    if date and len(date) >= 4 and date[:4].isdigit():
        return int(date[:4])
    return None
