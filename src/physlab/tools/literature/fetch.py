"""Bounded HTTP GETs: a timeout on every phase, a cap on the bytes read, one line when it fails.

httpx (already a dependency) streams the body so a reply larger than its cap is refused without being
read whole; redirects are followed only to the same host; every failure becomes
:class:`~physlab.tools.literature.polite.SourceUnavailable`.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx

from physlab.tools.literature.polite import SourceUnavailable


def make_client(timeout_s: float, user_agent: str) -> httpx.AsyncClient:
    """One connection per service (arXiv's terms ask for one; requests are paced one at a time anyway)."""
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), follow_redirects=False,
                             headers={"User-Agent": user_agent},
                             limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))


async def get_bytes(client: httpx.AsyncClient, url: str, *, source: str, max_bytes: int,
                    params: dict[str, str] | None = None, accept: str | None = None,
                    redirects: int = 3, total_s: float | None = None) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET; the body is at most ``max_bytes`` or the call fails, and
    the whole exchange takes at most ``total_s`` (default: four times the client's timeout, so a
    server trickling bytes cannot hold a role). Statuses are returned, not raised: callers decide
    what 404 or 429 mean for them."""
    total = total_s if total_s is not None else 4 * (client.timeout.read or 30.0)
    try:
        async with asyncio.timeout(total):
            return await _get(client, url, source=source, max_bytes=max_bytes, params=params, accept=accept,
                              redirects=redirects)
    except TimeoutError:
        raise SourceUnavailable(source, f"no complete answer from {urlsplit(url).netloc} within {total:g} s") from None


async def _get(client: httpx.AsyncClient, url: str, *, source: str, max_bytes: int,
               params: dict[str, str] | None, accept: str | None, redirects: int) -> tuple[int, str, bytes]:
    headers = {"Accept": accept} if accept else {}
    host = urlsplit(url).netloc
    for _ in range(redirects + 1):
        try:
            async with client.stream("GET", url, params=params, headers=headers) as resp:
                if resp.is_redirect and "location" in resp.headers:
                    target = resp.url.join(resp.headers["location"])
                    if target.netloc.decode() != host:  # a redirect is followed only within the same host
                        raise SourceUnavailable(source, f"redirected to another host ({target.host})")
                    url, params = str(target), None
                    continue
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise SourceUnavailable(source, f"reply of {int(declared):,} bytes is larger than the "
                                                    f"{max_bytes:,}-byte cap")
                chunks, size = [], 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise SourceUnavailable(source, f"reply larger than the {max_bytes:,}-byte cap")
                    chunks.append(chunk)
                return resp.status_code, resp.headers.get("content-type", ""), b"".join(chunks)
        except httpx.TimeoutException:
            raise SourceUnavailable(source, f"no answer from {host} within {client.timeout.read or 0:g} s") from None
        except httpx.HTTPError as exc:
            raise SourceUnavailable(source, f"cannot reach {host}: {short_reason(exc)}", transient=True) from None
    raise SourceUnavailable(source, "too many redirects")


def short_reason(exc: BaseException) -> str:
    """Why a connection failed, in the words a user knows ('connection refused'), whatever transport
    (httpx, requests, urllib3) wrapped the cause in."""
    chain: list[BaseException] = []
    todo = [exc]
    while todo and len(chain) < 12:
        e = todo.pop()
        if e in chain:
            continue
        chain.append(e)
        todo += [x for x in (e.__cause__, e.__context__, getattr(e, "reason", None), *e.args)
                 if isinstance(x, BaseException)]
    text = " ".join(f"{type(e).__name__} {e}" for e in chain)
    for markers, phrase in ((("ConnectionRefused", "Connection refused", "Connect call failed"), "connection refused"),
                            (("gaierror", "Name or service not known", "name resolution", "Failed to resolve",
                              "NameResolution"), "host name not resolved"),
                            (("RemoteDisconnected", "without response", "Server disconnected", "RemoteProtocolError",
                              "ConnectionReset", "Connection aborted"), "connection closed without an answer"),
                            (("SSLError", "CERTIFICATE"), "TLS error"),
                            (("Timeout", "timed out"), "timed out")):
        if any(m in text for m in markers):
            return phrase
    return " ".join(str(exc).split())[:200] or type(exc).__name__
