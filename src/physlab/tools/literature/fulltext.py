"""A paper's text from what arXiv (or a corpus folder) holds: an e-print source or a PDF.

Why both: arXiv's e-print is usually the authors' LaTeX, whose equations a model reads exactly as
written; a PDF's extracted text garbles them. So the LaTeX source is preferred and the PDF is the
fallback (PDF-only submissions, or ``fulltext="pdf"``). Both are hostile data: archives are read in
memory only (never unpacked to disk, member names never used as paths), with caps on members and
bytes; both are then parsed in a child process with CPU, memory and wall-time limits
(``parse_worker.py``: pypdf for a PDF, ``text.latex_main``/``latex_body`` for LaTeX), so a paper made
to be slow or huge never holds the event loop that runs the lab's roles.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from physlab.tools.literature.text import clean_text

_WORKER = Path(__file__).with_name("parse_worker.py")
MAX_MEMBERS = 2000


class FulltextError(Exception):
    """The bytes are not a paper this module can read (one line)."""


@dataclass
class Fulltext:
    text: str
    kind: Literal["latex source", "pdf"]
    title: str | None = None


@dataclass(frozen=True)
class PdfLimits:
    """The limits of the child process that parses a paper: pages of a PDF, characters kept, CPU
    seconds and address space (a LaTeX source is parsed under the same CPU and memory limits)."""

    max_pages: int = 60
    max_chars: int = 400_000
    cpu_s: int = 30
    memory_mb: int = 768


def is_pdf(data: bytes) -> bool:
    return data.lstrip()[:5].startswith(b"%PDF-")


def latex_files(data: bytes, max_unpacked: int) -> dict[str, str]:
    """The .tex files of an e-print (a gzipped tar, a gzipped single .tex, a plain tar or plain TeX),
    by member name; at most ``max_unpacked`` bytes are decompressed. Empty when it holds no LaTeX."""
    raw = data
    if data[:2] == b"\x1f\x8b":
        raw = _gunzip(data, max_unpacked)
    if _looks_like_tar(raw):
        return _tar_tex(raw, max_unpacked)
    text = raw.decode("utf-8", errors="replace")
    return {"main.tex": text} if ("\\begin{document}" in text or "\\documentclass" in text) else {}


def _gunzip(data: bytes, cap: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, cap + 1)
    except zlib.error as exc:
        raise FulltextError(f"damaged gzip data ({exc})") from None
    if len(out) > cap:
        raise FulltextError(f"the source unpacks to more than {cap:,} bytes")
    return out


def _looks_like_tar(raw: bytes) -> bool:
    return len(raw) >= 512 and raw[257:262] == b"ustar"


def _tar_tex(raw: bytes, cap: int) -> dict[str, str]:
    files: dict[str, str] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            for n, member in enumerate(tar):
                if n >= MAX_MEMBERS:
                    break
                if not member.isfile() or not member.name.lower().endswith((".tex", ".ltx")):
                    continue
                total += member.size
                if total > cap:
                    break
                fh = tar.extractfile(member)
                if fh is not None:
                    files[member.name.lstrip("./")] = fh.read(member.size).decode("utf-8", errors="replace")
    except (tarfile.TarError, EOFError, OSError) as exc:
        if not files:
            raise FulltextError(f"damaged tar archive ({exc})") from None
    return files


async def latex_text(files: dict[str, str], max_chars: int, limits: PdfLimits | None = None) -> Fulltext:
    """The text of an e-print's LaTeX files (see :func:`physlab.tools.literature.text.latex_main`),
    extracted in the limited child process; :class:`FulltextError` with one line if it cannot be."""
    payload = json.dumps({"files": files}).encode()
    result = await _in_worker(["latex", str(max_chars)], payload, limits or PdfLimits(), "LaTeX")
    return Fulltext(text=clean_text(result.get("text"), max_chars), kind="latex source",
                    title=clean_text(result.get("title"), 300, one_line=True) or None)


async def pdf_text(data: bytes, limits: PdfLimits) -> Fulltext:
    """The PDF's text (pypdf in a limited child process); :class:`FulltextError` with one line if it
    cannot be read within the limits."""
    if not is_pdf(data):
        raise FulltextError("not a PDF (no %PDF- header)")
    result = await _in_worker(["pdf", str(limits.max_pages), str(limits.max_chars)], data, limits, "PDF")
    text = clean_text(result["text"], limits.max_chars)
    if not text.strip():
        raise FulltextError(f"no text in the PDF's first {result['pages_read']} pages (scanned images?)")
    return Fulltext(text=text, kind="pdf", title=clean_text(result.get("title"), 300, one_line=True) or None)


async def _in_worker(args: list[str], data: bytes, limits: PdfLimits, what: str) -> dict:
    """What ``parse_worker.py`` said of ``data``: run with ``limits``, killed past its wall time."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", str(_WORKER), *args, str(limits.cpu_s), str(limits.memory_mb),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    wall = limits.cpu_s * 2 + 5
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), timeout=wall)
    except TimeoutError:
        raise FulltextError(f"the {what} took longer than {wall} s to parse") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.returncode != 0 or not out:
        why = "CPU limit" if proc.returncode in (-9, -24) else f"exit {proc.returncode}"
        said = clean_text(err.decode(errors="replace"), 160, one_line=True)
        raise FulltextError(f"the {what} parser stopped ({why}): {said}")
    result = json.loads(out)
    if "error" in result:
        raise FulltextError(str(result["error"])[:300])
    return result


async def paper_text(data: bytes, *, max_unpacked: int, max_chars: int, pdf: PdfLimits) -> Fulltext:
    """The text of an e-print or a PDF, whichever ``data`` is."""
    if is_pdf(data):
        return await pdf_text(data, pdf)
    files = latex_files(data, max_unpacked)
    if not files:
        raise FulltextError("no LaTeX and no PDF in the download")
    return await latex_text(files, max_chars, pdf)

