"""Extract the text of one paper, in a child process that limits itself first (run as a script).

A PDF or an e-print from the internet or a corpus is hostile data: it is parsed here, in a process
with a CPU limit, an address-space limit and no right to write files, which the parent also kills
after a wall time -- so a paper made to be slow or huge stops here, never in the process whose
event loop runs the lab. Imports nothing from PhysLab's package: PDFs need the standard library and
pypdf; LaTeX needs ``text.py`` beside this file (standard library only), loaded by its path.

    python -I parse_worker.py pdf MAX_PAGES MAX_CHARS CPU_S MEMORY_MB < paper.pdf
    python -I parse_worker.py latex MAX_CHARS CPU_S MEMORY_MB < {"files": {name: text}}

Writes one JSON object to stdout: ``{"text", "title", ...}`` or ``{"error"}``.
"""

import importlib.util
import io
import json
import resource
import sys
from pathlib import Path


def limit(cpu_s: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def extract_pdf(data: bytes, max_pages: int, max_chars: int) -> dict:
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


def extract_latex(data: bytes, max_chars: int) -> dict:
    spec = importlib.util.spec_from_file_location("physlab_literature_text", Path(__file__).with_name("text.py"))
    assert spec is not None and spec.loader is not None
    text = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(text)
    try:
        files = json.loads(data)["files"]
    except (ValueError, KeyError, TypeError):
        return {"error": "the parent sent no files"}
    body, title = text.latex_body(text.latex_main(files))  # inlined once each: no longer than the files
    return {"text": text.clean_text(body, max_chars), "title": title}


def main() -> int:
    mode, args = sys.argv[1], [int(a) for a in sys.argv[2:]]
    *sizes, cpu_s, memory_mb = args
    limit(cpu_s, memory_mb)
    data = sys.stdin.buffer.read()
    try:
        result = extract_pdf(data, *sizes) if mode == "pdf" else extract_latex(data, *sizes)
    except MemoryError:
        result = {"error": f"the {'PDF' if mode == 'pdf' else 'LaTeX'} needs more than {memory_mb} MB to parse"}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
