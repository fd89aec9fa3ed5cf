"""arXiv's API replies are held to the same bounds as every other reply: at most
``max_response_bytes`` read (a 250 MB feed once took 561 MB of the host), and redirects followed only
within the API's own host (a 302 elsewhere once sent the query to whoever the Location named)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from physlab.tools.literature import Library
from physlab.tools.literature.settings import LiteratureSettings
from tests.capped import run_capped

FEED_HEAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
             b'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">'
             b"<opensearch:totalResults>1</opensearch:totalResults><entry><id>http://arxiv.org/abs/2101.00001v1</id>"
             b"<published>2021-01-01T00:00:00Z</published><updated>2021-01-01T00:00:00Z</updated>"
             b"<title>Padding</title><summary>")
FEED_TAIL = b"</summary><author><name>A. Author</name></author></entry></feed>\n"
EMPTY_FEED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
              b'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
              b"<opensearch:totalResults>0</opensearch:totalResults></feed>\n")


class Server:
    """A server on 127.0.0.1 answering every GET with ``answer(handler)``; it records the paths asked."""

    def __init__(self, answer) -> None:
        self.asked: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                outer.asked.append(self.path)
                try:
                    answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what a cap does

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def huge_feed(handler: BaseHTTPRequestHandler, megabytes: int = 300) -> None:
    """A feed of ``megabytes`` MB (one entry whose abstract never ends), no Content-Length."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/atom+xml")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(FEED_HEAD)
    block = b"lorem ipsum " * (1 << 16)
    for _ in range(megabytes * (1 << 20) // len(block)):
        handler.wfile.write(block)
    handler.wfile.write(FEED_TAIL)


VICTIM = """
import asyncio, json, sys
from physlab.tools.literature import Library
from physlab.tools.literature.settings import LiteratureSettings
settings = LiteratureSettings().for_standin(sys.argv[1])
async def main():
    async with Library(settings) as lib:
        res = await lib.search_literature("toric code", source="arxiv")
    print(json.dumps({"hits": len(res.hits), "unavailable": res.unavailable}))
asyncio.run(main())
"""


def test_a_300_mb_feed_is_refused_at_the_reply_cap_within_the_memory_cap():
    with Server(huge_feed) as srv:
        done = run_capped(VICTIM, f"http://127.0.0.1:{srv.port}", memory_mb=512, timeout=240)
    assert done.returncode == 0, done.stderr.decode()[-800:]
    got = json.loads(done.stdout)
    assert got["hits"] == 0
    (said,) = got["unavailable"]
    assert said.startswith("unavailable: arXiv:") and "4,000,000-byte cap" in said


async def test_a_redirect_to_another_host_is_not_followed():
    def elsewhere(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/atom+xml")
        handler.send_header("Content-Length", str(len(EMPTY_FEED)))
        handler.end_headers()
        handler.wfile.write(EMPTY_FEED)

    with Server(elsewhere) as other:
        def redirect(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(302)
            handler.send_header("Location", f"http://localhost:{other.port}{handler.path}")
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        with Server(redirect) as api:
            settings = LiteratureSettings().for_standin(f"http://127.0.0.1:{api.port}").model_copy(
                update={"arxiv_retries": 0})
            async with Library(settings) as lib:
                res = await lib.search_literature("toric code", source="arxiv")
    assert api.asked and other.asked == []                   # the query never reached the other host
    (said,) = res.unavailable
    assert "redirected to another host (localhost)" in said and res.hits == []
