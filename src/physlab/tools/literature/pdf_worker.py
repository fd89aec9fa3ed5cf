"""Extract the text of one PDF, in a child process that limits itself first (run as a script).

A PDF from the internet or a corpus is hostile data: pypdf parses it here, in a process with a CPU
limit, an address-space limit and no right to write files, which the parent also kills after a wall
time. Reads the PDF from stdin; writes one JSON object to stdout:
``{"text", "pages", "pages_read", "title"}`` or ``{"error"}``. Imports nothing from PhysLab, so the
child starts with only the standard library and pypdf.

    python -I pdf_worker.py MAX_PAGES MAX_CHARS CPU_S MEMORY_MB < paper.pdf
"""

import io
import json
import resource
import sys


def limit(cpu_s: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def extract(data: bytes, max_pages: int, max_chars: int) -> dict:
    if not data.lstrip()[:5].startswith(b"%PDF-"):
        return {"error": "not a PDF (no %PDF- header)"}
    import logging

    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PyPdfError

    logging.disable(logging.WARNING)  # pypdf warns about every damaged object; the parent wants one line
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            return {"error": "the PDF is encrypted"}
        pages = len(reader.pages)
        out, size, read = [], 0, 0
        for page in reader.pages[:max_pages]:
            text = page.extract_text() or ""
            read += 1
            out.append(text)
            size += len(text)
            if size >= max_chars:
                break
        meta = reader.metadata
        title = str(meta.title) if meta is not None and meta.title else None
        return {"text": "\n\n".join(out)[:max_chars], "pages": pages, "pages_read": read, "title": title}
    except LimitReachedError as exc:  # pypdf's own caps on decompressed streams (a zip bomb)
        return {"error": f"the PDF exceeds pypdf's limits: {str(exc)[:200]}"}
    except PyPdfError as exc:
        return {"error": f"unreadable PDF: {type(exc).__name__}: {str(exc)[:200]}"}
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError, AssertionError) as exc:
        # a damaged file can reach pypdf paths that fail with plain Python errors
        return {"error": f"unreadable PDF: {type(exc).__name__}: {str(exc)[:200]}"}


def main() -> int:
    max_pages, max_chars, cpu_s, memory_mb = (int(a) for a in sys.argv[1:5])
    limit(cpu_s, memory_mb)
    data = sys.stdin.buffer.read()
    try:
        result = extract(data, max_pages, max_chars)
    except MemoryError:
        result = {"error": f"the PDF needs more than {memory_mb} MB to parse"}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
