"""A stand-in for arXiv and INSPIRE-HEP on 127.0.0.1, for tests and offline demos.

The standard library's threading HTTP server, answering in the public formats the real services use
(written here, not recorded from them): arXiv's Atom feed at ``/api/query`` (``search_query``,
``id_list``, ``start``, ``max_results``; a malformed id gets arXiv's one-entry error feed), papers
at ``/pdf/ID`` and ``/e-print/ID`` (a gzipped tar of LaTeX, a gzipped .tex or a PDF, as arXiv
serves them), and INSPIRE's JSON at ``/api/literature`` (``q`` as free words, ``recid:N``,
``arxiv:ID``, ``doi:"…"``, ``refersto:recid:N``, ``citedby:recid:N``; ``size``, ``sort=mostcited``,
``fields``). Point a library at it with ``LiteratureSettings().for_standin(srv.base_url)``.

    with LiteratureStandin([StandinPaper(...)], inspire_limit=(15, 5.0)) as srv:
        srv.inject("stall", path="/api/query")      # the next arXiv API request gets no answer
        ... srv.served, srv.max_in_flight["arxiv"]

Faults (``inject(kind, times=1, path=prefix)``): stall (no answer until the server stops), drop
(connection closed), server_error (500), rate_limit (429), not_json (INSPIRE's HTML maintenance page).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

from physlab.tools.literature.keys import ARXIV_ID
from physlab.tools.literature.settings import LiteratureSettings

FAULTS = ("stall", "drop", "server_error", "rate_limit", "not_json")


@dataclass
class StandinPaper:
    """One paper as both services know it, and the files arXiv serves for it."""

    arxiv_id: str
    title: str
    authors: list[str]
    abstract: str
    published: str = "2020-01-01"
    recid: int | None = None
    doi: str | None = None
    references: list[int] = field(default_factory=list)   # INSPIRE recids this paper cites
    eprint: bytes | None = None                           # what /e-print/ID serves
    pdf: bytes | None = None                              # what /pdf/ID serves
    primary_category: str = "hep-th"


@dataclass
class Served:
    path: str
    query: dict[str, str]
    service: str
    started: float
    finished: float = 0.0
    status: int = 0


def eprint_tar(files: dict[str, str]) -> bytes:
    """A gzipped tar of LaTeX files: the shape most arXiv e-prints have."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_600_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def eprint_gzip(tex: str) -> bytes:
    """A single gzipped .tex: the shape of a one-file e-print."""
    return gzip.compress(tex.encode(), mtime=0)


def minimal_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A small valid PDF (Helvetica text, one line per string), written by hand: nothing here can
    write a PDF with text, and the format's core is a page of bytes."""
    def pdf_string(s: str) -> str:
        return "(" + s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"

    objects: list[str] = []
    n_pages = len(pages)
    page_ids = [3 + 2 * i for i in range(n_pages)]
    font_id = 3 + 2 * n_pages
    info_id = font_id + 1
    objects.append("<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] /Count {n_pages} >>")
    for i, lines in enumerate(pages):
        body = "BT /F1 11 Tf 14 TL 72 720 Td " + " ".join(f"{pdf_string(x)} Tj T*" for x in lines) + " ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {page_ids[i] + 1} 0 R "
                       f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>")
        objects.append(f"<< /Length {len(body.encode('latin-1'))} >>\nstream\n{body}\nendstream")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(f"<< /Title {pdf_string(title or '')} /Producer (PhysLab stand-in) >>")
    return pdf_document([o.encode("latin-1") for o in objects], info=info_id)


def pdf_document(objects: list[bytes], info: int | None = None) -> bytes:
    """A PDF of these objects (numbered from 1, the first the catalogue), with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    info_ref = f" /Info {info} 0 R" if info else ""
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info_ref} >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


# A default catalogue for `python -m physlab.tools.literature.standin`: identifiers and titles of
# real papers, abstracts and LaTeX written here as short stand-ins.
def default_papers() -> list[StandinPaper]:
    toric = r"""\documentclass{article}
\title{Fault-tolerant quantum computation by anyons}
\begin{document}
\maketitle
\begin{abstract}
A two-dimensional lattice of spins with local stabilizer checks stores qubits topologically.
\end{abstract}
\section{The toric code}
On a torus the code has $k=2$ logical qubits and distance $d=L$; the stabilizers are
$A_v = \prod_{j \in \mathrm{star}(v)} \sigma^x_j$ and $B_p = \prod_{j \in \partial p} \sigma^z_j$.
\section{Anyons}
Violated checks are quasiparticles with mutual statistics $e^{i\pi}$.
\end{document}
"""
    return [
        StandinPaper("quant-ph/9707021", "Fault-tolerant quantum computation by anyons", ["A. Yu. Kitaev"],
                     "A two-dimensional quantum system with anyonic excitations can be considered as a quantum "
                     "computer; unitary transformations are performed by braiding.", "1997-07-09", recid=448893,
                     doi="10.1016/S0003-4916(02)00018-0", eprint=eprint_tar({"toric.tex": toric}),
                     primary_category="quant-ph"),
        StandinPaper("hep-th/9711200", "The Large N limit of superconformal field theories and supergravity",
                     ["Juan Martin Maldacena"],
                     "We show that the large N limit of certain conformal field theories in various dimensions "
                     "includes in its Hilbert space a sector describing supergravity on anti-de Sitter space.",
                     "1997-11-27", recid=451647, doi="10.1023/A:1026654312961", references=[448893],
                     pdf=minimal_pdf([["The Large N limit of superconformal field theories and supergravity",
                                       "The near-horizon geometry of N D3-branes is AdS5 x S5."]],
                                     title="The Large N limit"),
                     eprint=None),
    ]


class LiteratureStandin:
    """arXiv and INSPIRE on one base URL (127.0.0.1, a free port); stops itself on ``stop()``."""

    def __init__(self, papers: list[StandinPaper] | None = None, *, port: int = 0,
                 inspire_limit: tuple[int, float] | None = None, stall_s: float = 60.0):
        self.papers = list(default_papers() if papers is None else papers)
        self.inspire_limit, self.stall_s = inspire_limit, stall_s
        self.served: list[Served] = []
        self.in_flight = {"arxiv": 0, "inspire": 0, "other": 0}
        self.max_in_flight = {"arxiv": 0, "inspire": 0, "other": 0}
        self._faults: list[tuple[str, str]] = []
        self._inspire_times: list[float] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._port = port
        self._server: ThreadingHTTPServer | None = None

    # --- control ---------------------------------------------------------------------------------

    def start(self) -> LiteratureStandin:
        owner = self

        class Handler(_Handler):
            standin = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="literature-standin",
                         daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LiteratureStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the stand-in is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def settings(self, base: LiteratureSettings | None = None, **changes: Any) -> LiteratureSettings:
        """Library settings pointed at this stand-in (no waits unless ``changes`` say so)."""
        s = (base or LiteratureSettings()).for_standin(self.base_url)
        return s.model_copy(update=changes) if changes else s

    def inject(self, kind: str, times: int = 1, path: str = "/") -> None:
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {', '.join(FAULTS)}")
        with self._lock:
            self._faults += [(kind, path)] * times

    def requests_to(self, service: str) -> list[Served]:
        return [s for s in self.served if s.service == service]

    def _take_fault(self, path: str) -> str | None:
        with self._lock:
            for i, (kind, prefix) in enumerate(self._faults):
                if path.startswith(prefix):
                    del self._faults[i]
                    return kind
        return None

    # --- the services ----------------------------------------------------------------------------

    def by_arxiv(self, arxiv_id: str) -> StandinPaper | None:
        base = re.sub(r"v\d+$", "", arxiv_id)
        return next((p for p in self.papers if p.arxiv_id == base), None)

    def by_recid(self, recid: int) -> StandinPaper | None:
        return next((p for p in self.papers if p.recid == recid), None)

    def arxiv_feed(self, q: dict[str, str]) -> str:
        start, size = int(q.get("start", "0") or 0), int(q.get("max_results", "10") or 10)
        ids = [i for i in q.get("id_list", "").split(",") if i]
        bad = [i for i in ids if not ARXIV_ID.fullmatch(i)]
        if bad:
            return _atom([], total=1, error=f"incorrect id format for {bad[0]}")
        if ids:
            found = [p for i in ids if (p := self.by_arxiv(i)) is not None]
        else:
            words = [w for w in re.findall(r"[\w\-]+", re.sub(r"\b\w+:", " ", q.get("search_query", "")))
                     if w not in ("AND", "OR", "ANDNOT")]
            found = _match(self.papers, words)
        return _atom(found[start:start + size], total=len(found))

    def inspire_search(self, q: dict[str, str]) -> dict[str, Any]:
        query = q.get("q", "").strip()
        size = int(q.get("size", "10") or 10)
        found: list[StandinPaper]
        m = re.fullmatch(r"(refersto|citedby):recid:(\d+)", query)
        if m:
            recid = int(m.group(2))
            if m.group(1) == "refersto":
                found = [p for p in self.papers if recid in p.references]
            else:
                cited = self.by_recid(recid)
                found = [p for r in (cited.references if cited else []) if (p := self.by_recid(r)) is not None]
        elif (m := re.fullmatch(r"recid:(\d+)", query)):
            found = [p for p in [self.by_recid(int(m.group(1)))] if p is not None]
        elif (m := re.fullmatch(r"arxiv:(\S+)", query)):
            found = [p for p in [self.by_arxiv(m.group(1))] if p is not None]
        elif (m := re.fullmatch(r'doi:"?([^"]+)"?', query)):
            found = [p for p in self.papers if p.doi and p.doi.lower() == m.group(1).lower()]
        else:
            found = _match([p for p in self.papers if p.recid is not None], re.findall(r"[\w\-]+", query))
        found = [p for p in found if p.recid is not None]
        if q.get("sort") == "mostcited":
            found.sort(key=lambda p: -self.citation_count(p))
        wanted = {f.split(".")[0] for f in q.get("fields", "").split(",") if f}
        return {"hits": {"total": len(found), "hits": [self._inspire_hit(p, wanted) for p in found[:size]]},
                "links": {"self": f"{self.base_url}/api/literature?q={query}"}, "sort_options": []}

    def citation_count(self, paper: StandinPaper) -> int:
        return sum(paper.recid in p.references for p in self.papers)

    def _inspire_hit(self, p: StandinPaper, wanted: set[str]) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "$schema": "https://inspirehep.net/schemas/records/hep.json",
            "control_number": p.recid,
            "titles": [{"title": p.title, "source": "arXiv"}],
            "authors": [{"full_name": _inspire_name(a)} for a in p.authors],
            "abstracts": [{"value": p.abstract, "source": "arXiv"}],
            "arxiv_eprints": [{"value": p.arxiv_id, "categories": [p.primary_category]}],
            "dois": [{"value": p.doi}] if p.doi else [],
            "earliest_date": p.published,
            "citation_count": self.citation_count(p),
            "document_type": ["article"],
        }
        if wanted:
            meta = {k: v for k, v in meta.items() if k in wanted or k == "control_number"}
        return {"id": str(p.recid), "created": "2020-01-01T00:00:00+00:00", "updated": "2020-01-01T00:00:00+00:00",
                "links": {"json": f"{self.base_url}/api/literature/{p.recid}?format=json"}, "metadata": meta}

    def inspire_rate_ok(self) -> bool:
        """INSPIRE's documented limit; refused requests count towards it too."""
        if self.inspire_limit is None:
            return True
        most, window = self.inspire_limit
        now = time.monotonic()
        with self._lock:
            self._inspire_times = [t for t in self._inspire_times if t > now - window]
            self._inspire_times.append(now)
            return len(self._inspire_times) <= most


def _match(papers: list[StandinPaper], words: list[str]) -> list[StandinPaper]:
    words = [w.lower() for w in words]
    if not words:
        return []

    def score(p: StandinPaper) -> int:
        text = f"{p.title} {p.abstract} {' '.join(p.authors)}".lower()
        return sum(w in text for w in words)

    scored = sorted(((score(p), i, p) for i, p in enumerate(papers)), key=lambda t: (-t[0], t[1]))
    return [p for s, _, p in scored if s == len(words)] or [p for s, _, p in scored if s > 0]


def _inspire_name(name: str) -> str:
    parts = name.split()
    return f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else name


def _atom(papers: list[StandinPaper], *, total: int, error: str | None = None) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries = []
    if error:
        entries.append(f"""  <entry>
    <id>http://arxiv.org/api/errors#{escape(error.replace(' ', '_'))}</id>
    <title>Error</title>
    <summary>{escape(error)}</summary>
    <updated>{now}</updated>
    <link href="http://arxiv.org/api/errors#{escape(error.replace(' ', '_'))}" rel="alternate" type="text/html"/>
    <author><name>arXiv api core</name></author>
  </entry>""")
    for p in papers:
        # arXiv's feed wraps titles and abstracts across lines with indentation, as here.
        summary = "\n  ".join(re.findall(r".{1,70}(?:\s|$)", p.abstract)) or p.abstract
        authors = "\n    ".join(f"<author><name>{escape(a)}</name></author>" for a in p.authors)
        doi = f"\n    <arxiv:doi>{escape(p.doi)}</arxiv:doi>" if p.doi else ""
        entries.append(f"""  <entry>
    <id>http://arxiv.org/abs/{p.arxiv_id}v1</id>
    <updated>{p.published}T12:00:00Z</updated>
    <published>{p.published}T12:00:00Z</published>
    <title>{escape(p.title)}</title>
    <summary>  {escape(summary)}
</summary>
    {authors}{doi}
    <link href="http://arxiv.org/abs/{p.arxiv_id}v1" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/{p.arxiv_id}v1" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="{p.primary_category}" scheme="http://arxiv.org/schemas/atom"/>
    <category term="{p.primary_category}" scheme="http://arxiv.org/schemas/atom"/>
  </entry>""")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query</title>
  <id>http://arxiv.org/api/stand-in</id>
  <updated>{now}</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{total}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{len(papers)}</opensearch:itemsPerPage>
{chr(10).join(entries)}
</feed>
"""


class _Handler(BaseHTTPRequestHandler):
    standin: LiteratureStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet: tests read `served`
        pass

    def do_GET(self) -> None:
        sd = self.standin
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        service = ("arxiv" if url.path.startswith(("/api/query", "/pdf/", "/e-print/", "/abs/"))
                   else "inspire" if url.path.startswith("/api/literature") else "other")
        rec = Served(path=url.path, query=q, service=service, started=time.monotonic())
        with sd._lock:
            sd.served.append(rec)
            sd.in_flight[service] += 1
            sd.max_in_flight[service] = max(sd.max_in_flight[service], sd.in_flight[service])
        try:
            self._answer(sd, url.path, q, rec)
        finally:
            with sd._lock:
                sd.in_flight[service] -= 1
            rec.finished = time.monotonic()

    def _answer(self, sd: LiteratureStandin, path: str, q: dict[str, str], rec: Served) -> None:
        fault = sd._take_fault(path)
        if fault == "stall":
            sd._stop.wait(sd.stall_s)
            self.close_connection = True
            return
        if fault == "drop":
            self.close_connection = True
            return
        if fault == "server_error":
            return self._send(rec, 500, "text/plain", b"Internal Server Error")
        if fault == "rate_limit" or (rec.service == "inspire" and not sd.inspire_rate_ok()):
            return self._send(rec, 429, "application/json", b'{"message": "Too many requests", "status": 429}')
        if fault == "not_json":
            return self._send(rec, 200, "text/html", b"<html><body>INSPIRE is under maintenance</body></html>")
        if path == "/api/query":
            return self._send(rec, 200, "application/atom+xml; charset=utf-8", sd.arxiv_feed(q).encode())
        m = re.fullmatch(r"/(pdf|e-print)/(.+?)(?:\.pdf)?", path)
        if m:
            paper = sd.by_arxiv(m.group(2))
            data = None if paper is None else (paper.pdf if m.group(1) == "pdf" else paper.eprint or paper.pdf)
            if data is None:
                return self._send(rec, 404, "text/plain", b"not found")
            kind = ("application/pdf" if data[:5] == b"%PDF-" else "application/x-eprint-tar")
            return self._send(rec, 200, kind, data)
        if path == "/api/literature":
            return self._send(rec, 200, "application/json", json.dumps(sd.inspire_search(q)).encode())
        m = re.fullmatch(r"/api/literature/(\d+)", path)
        if m and (paper := sd.by_recid(int(m.group(1)))) is not None:
            return self._send(rec, 200, "application/json", json.dumps(sd._inspire_hit(paper, set())).encode())
        return self._send(rec, 404, "application/json", b'{"message": "PID does not exist.", "status": 404}')

    def _send(self, rec: Served, status: int, ctype: str, body: bytes) -> None:
        rec.status = status
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    """``python -m physlab.tools.literature.standin [--port N] [--inspire-limit 15/5]``: prints the base
    URL on the first line, serves the default catalogue until stdin closes or it is interrupted, then
    prints one JSON line of what it served."""
    import argparse
    import signal
    import sys

    ap = argparse.ArgumentParser(prog="python -m physlab.tools.literature.standin",
                                 description="arXiv and INSPIRE-HEP stand-in on 127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="Port on 127.0.0.1 (default: any free port).")
    ap.add_argument("--inspire-limit", default=None, help="N/S: answer 429 beyond N INSPIRE requests in S seconds "
                    "(INSPIRE's documented limit is 15/5).")
    args = ap.parse_args(argv)
    limit = None
    if args.inspire_limit:
        try:
            n, s = args.inspire_limit.split("/")
            limit = (int(n), float(s))
        except ValueError:
            ap.error("--inspire-limit takes N/SECONDS, e.g. 15/5")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        srv = LiteratureStandin(port=args.port, inspire_limit=limit).start()
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    print(srv.base_url, flush=True)
    def wait_for_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_stdin, daemon=True).start()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    srv.stop()
    by_service = {s: len(srv.requests_to(s)) for s in ("arxiv", "inspire", "other")}
    try:
        print(json.dumps({"requests": by_service, "max_in_flight": srv.max_in_flight}), flush=True)
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
