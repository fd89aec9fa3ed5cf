"""arXiv's API asked through PhysLab's own bounded client, its Atom feed read with lxml's public API
(the parser the `arxiv` package itself uses, with its hardened settings): every arXiv request says it
is PhysLab's, no library's private member is touched, and a hostile feed (entity bombs, an external
entity naming a local file, nesting a million deep) gives no paper and no secret."""

from __future__ import annotations

import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from physlab.tools.literature import Library
from physlab.tools.literature.settings import LiteratureSettings
from tests.capped import run_capped
from tests.tools.literature.test_arxiv_bounds import FEED_HEAD, FEED_TAIL, Server

LITERATURE = Path(__file__).resolve().parents[3] / "src" / "physlab" / "tools" / "literature"


def feed(body: bytes, status: int = 200):
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/atom+xml")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return answer


def settings_for(port: int) -> LiteratureSettings:
    return LiteratureSettings().for_standin(f"http://127.0.0.1:{port}").model_copy(update={"arxiv_retries": 0})


async def test_every_arxiv_request_the_api_included_says_it_is_physlabs():
    agents: list[str] = []

    def answer(handler: BaseHTTPRequestHandler) -> None:
        agents.append(handler.headers.get("User-Agent", ""))
        feed(FEED_HEAD + b"An abstract." + FEED_TAIL)(handler)

    with Server(answer) as srv:
        settings = settings_for(srv.port)
        async with Library(settings) as lib:
            res = await lib.search_literature("toric code", source="arxiv")
    assert res.unavailable == [] and [h.key for h in res.hits] == ["arXiv:2101.00001"]
    assert agents == [settings.user_agent]


def test_no_private_member_of_a_library_is_touched():
    # the arXiv client once had its private `_session` replaced to bound its requests
    files = [str(p) for p in LITERATURE.glob("*.py") if p.name != "standin.py"]  # the stand-in is our own server
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "SLF001", "--output-format", "concise",
                           "--no-cache", *files], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


async def test_an_entity_bomb_in_the_feed_is_not_expanded():
    lol = b"".join(b'<!ENTITY l%d "&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;">' % ((i,) + (i - 1,) * 10)
                   for i in range(1, 10))
    bomb = (b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY l0 "lol">' + lol + b"]>"
            + FEED_HEAD.split(b"?>", 1)[1] + b"&l9;" + FEED_TAIL)
    with Server(feed(bomb)) as srv:
        async with Library(settings_for(srv.port)) as lib:
            res = await lib.search_literature("toric code", source="arxiv")
    assert all("lollol" not in h.summary for h in res.hits)
    assert len(res.hits) + len(res.unavailable) == 1


async def test_an_external_entity_never_reads_a_local_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LOCAL-FILE")
    xxe = (b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY x SYSTEM "' + secret.as_uri().encode() + b'">]>'
           + FEED_HEAD.split(b"?>", 1)[1] + b"&x;" + FEED_TAIL)
    with Server(feed(xxe)) as srv:
        async with Library(settings_for(srv.port)) as lib:
            res = await lib.search_literature("toric code", source="arxiv")
    assert "TOP-SECRET" not in repr(res)


DEEP = """
import asyncio, json, sys
from physlab.tools.literature import Library
from physlab.tools.literature.settings import LiteratureSettings
settings = LiteratureSettings().for_standin(sys.argv[1]).model_copy(update={"arxiv_retries": 0})
async def main():
    async with Library(settings) as lib:
        res = await lib.search_literature("toric code", source="arxiv")
    print(json.dumps({"hits": len(res.hits), "unavailable": res.unavailable}))
asyncio.run(main())
"""


def test_a_feed_nested_a_million_deep_is_read_within_the_memory_cap():
    deep = FEED_HEAD + b"<a>" * 1_000_000 + b"</a>" * 1_000_000 + FEED_TAIL  # 7 MB: over the reply cap too
    with Server(feed(deep[:3_900_000] + FEED_TAIL)) as srv:  # within the cap: the parser's own bound holds it
        done = run_capped(DEEP, f"http://127.0.0.1:{srv.port}", memory_mb=512, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-800:]
