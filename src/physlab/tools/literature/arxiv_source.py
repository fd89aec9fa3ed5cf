"""arXiv: search and abstracts through the `arxiv` package's client, full text from arxiv.org.

The `arxiv` package (lukasschwab/arxiv.py) is used as its authors intend: a ``Client`` whose
``query_url_format`` names the API endpoint (our ``arxiv_api_url`` setting), ``Search`` objects, and
``Client.results``. It paces its own pages (``delay_seconds``) but sets no timeout on its requests
(arxiv.py issue: a stalled connection blocks forever), so each call runs in a daemon thread that is
abandoned after ``timeout_s``, and a client that timed out is replaced (its pooled connection may
be the stalled one). Its requests go through a requests transport adapter of ours (requests'
public ``HTTPAdapter`` seam) that holds them to the bounds of every other reply: the API's own host
only (a redirect elsewhere is refused), a timeout per phase, at most ``max_response_bytes`` read.
The PDF and e-print URLs are built from the ``arxiv_site_url`` setting and the checked id, never
taken from the feed.
"""

from __future__ import annotations

import asyncio
import io
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import arxiv
import httpx
import requests
from pydantic import TypeAdapter
from requests.adapters import HTTPAdapter

from physlab.tools.literature.fetch import get_bytes, short_reason
from physlab.tools.literature.fulltext import Fulltext, FulltextError, is_pdf, paper_text
from physlab.tools.literature.keys import BadKey, parse_key, without_version
from physlab.tools.literature.models import SearchHit
from physlab.tools.literature.polite import Pace, Pacer, SourceUnavailable
from physlab.tools.literature.settings import LiteratureSettings
from physlab.tools.literature.text import clean_text

T = TypeVar("T")
NAME = "arXiv"
_FULLTEXT = TypeAdapter(Fulltext)


class ArxivSource:
    """arXiv for one run: one client, one connection, requests spaced by ``arxiv_delay_s``."""

    name = NAME

    def __init__(self, settings: LiteratureSettings, http: httpx.AsyncClient, cache_dir: Path | None = None):
        self.settings, self._http = settings, http
        self._pacer = Pacer(Pace(min_interval_s=settings.arxiv_delay_s))
        self._client = self._new_client()
        self._cache = cache_dir / "arxiv" if cache_dir is not None else None

    def _new_client(self) -> arxiv.Client:
        s = self.settings
        client = arxiv.Client(page_size=s.max_results, delay_seconds=s.arxiv_delay_s, num_retries=s.arxiv_retries)
        client.query_url_format = s.arxiv_api_url + "?{}"
        session = requests.Session()
        adapter = BoundedAdapter(urlsplit(s.arxiv_api_url).netloc, s.max_response_bytes, s.timeout_s)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        # The package takes no session parameter; its client sends every request through this one.
        client._session = session
        return client

    @property
    def host(self) -> str:
        return urlsplit(self.settings.arxiv_api_url).netloc

    async def _results(self, search: arxiv.Search) -> list[arxiv.Result]:
        client = self._client
        # The package's retries each wait delay_seconds; a stalled request never returns at all.
        bound = self.settings.timeout_s + self.settings.arxiv_retries * self.settings.arxiv_delay_s
        async with self._pacer.turn():
            try:
                results = await _in_daemon_thread(lambda: list(client.results(search)), bound)
            except TimeoutError:
                self._client = self._new_client()
                raise SourceUnavailable(NAME, f"no answer from {self.host} within {bound:g} s") from None
            except arxiv.HTTPError as exc:
                raise SourceUnavailable(NAME, f"{self.host} answered HTTP {exc.status}") from None
            except arxiv.ArxivError as exc:
                raise SourceUnavailable(NAME, f"{self.host}: {exc.message}") from None
            except RefusedReply as exc:
                raise SourceUnavailable(NAME, str(exc)) from None
            except requests.Timeout:  # the adapter's own timeout, before the thread's bound
                self._client = self._new_client()
                raise SourceUnavailable(NAME, f"no answer from {self.host} within {self.settings.timeout_s:g} s"
                                        ) from None
            except requests.RequestException as exc:
                raise SourceUnavailable(NAME, f"cannot reach {self.host}: {short_reason(exc)}") from None
            except Exception as exc:  # a feed the package's parser could not turn into results
                raise SourceUnavailable(NAME, f"{self.host} sent a feed that cannot be read "
                                              f"({type(exc).__name__})") from None
        return results

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        search = arxiv.Search(query=arxiv_query(query), max_results=max_results)
        return [self._hit(r) for r in await self._results(search)]

    async def metadata(self, arxiv_id: str) -> SearchHit:
        results = await self._results(arxiv.Search(id_list=[arxiv_id], max_results=1))
        if not results:
            raise SourceUnavailable(NAME, f"no paper arXiv:{arxiv_id}")
        return self._hit(results[0])

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

    def _hit(self, r: arxiv.Result) -> SearchHit:
        s = self.settings
        short = r.get_short_id()
        try:
            key = parse_key(f"arXiv:{without_version(short)}")
        except BadKey:
            raise SourceUnavailable(NAME, f"the feed gave an entry with an unexpected id {short[:40]!r}") from None
        authors = [clean_text(a.name, 120, one_line=True) for a in r.authors]
        doi = clean_text(r.doi, 200, one_line=True) or None
        return SearchHit(key=str(key), title=clean_text(r.title, 300, one_line=True) or "(untitled)",
                         authors=_cap_authors(authors, s.max_authors), year=r.published.year if r.published else None,
                         url=f"{s.arxiv_site_url.rstrip('/')}/abs/{key.value}", arxiv_id=key.value,
                         doi=doi if doi and doi.startswith("10.") else None, origin="arxiv",
                         summary=clean_text(r.summary, s.summary_chars, one_line=True))


class RefusedReply(requests.RequestException):
    """A reply the API's adapter would not take: from another host, or larger than the cap (one line)."""


class BoundedAdapter(HTTPAdapter):
    """requests' transport for the arXiv API: talks to ``host`` only (so a redirect elsewhere stops
    here), with ``timeout_s`` per phase when the caller set none, and reads at most ``max_bytes``
    of a body (decompressed), refusing a larger one without reading it whole."""

    def __init__(self, host: str, max_bytes: int, timeout_s: float) -> None:
        super().__init__(max_retries=0)
        self.host, self.max_bytes, self.timeout_s = host, max_bytes, timeout_s

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):  # type: ignore[override]
        target = urlsplit(request.url or "")
        if target.netloc != self.host:
            raise RefusedReply(f"redirected to another host ({target.hostname})")
        resp = super().send(request, stream=True, timeout=timeout or self.timeout_s, verify=verify, cert=cert,
                            proxies=proxies)
        raw, cap = resp.raw, self.max_bytes
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            resp.close()
            raise RefusedReply(f"reply of {int(declared):,} bytes is larger than the {cap:,}-byte cap")
        chunks, size = [], 0
        while size <= cap and (chunk := raw.read(min(1 << 16, cap + 1 - size), decode_content=True)):
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            resp.close()
            raise RefusedReply(f"reply larger than the {cap:,}-byte cap")
        raw.release_conn()
        resp.raw = io.BytesIO(b"".join(chunks))  # what the client reads: the capped, decoded body
        return resp


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


async def _in_daemon_thread(fn: Callable[[], T], timeout: float) -> T:
    """``fn()`` in a daemon thread, awaited for at most ``timeout`` seconds. A daemon thread, not the
    loop's executor: a request that never returns must not keep the process from exiting."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if fut.done():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = fn()
        except BaseException as exc:  # handed to the awaiting task, which decides
            error = exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is gone: nobody is waiting
            pass

    threading.Thread(target=run, name="arxiv-api", daemon=True).start()
    return await asyncio.wait_for(fut, timeout)

