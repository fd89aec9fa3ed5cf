"""The physicist's own library: a folder of PDFs, LaTeX, Markdown notes and BibTeX, searchable offline.

The folder is indexed once into SQLite FTS5 (in the run's cache directory) and kept up to date
incrementally: a file whose size and modification time are unchanged is not read again; a changed
one is re-read, and re-indexed only if its contents changed; a deleted one leaves the index.
Searches are ranked by bm25 (titles weigh more than bodies) and return FTS5 ``snippet()``s. Files are
hostile data like anything fetched: capped, cleaned, PDFs parsed in a limited child process, and no
path leaves the folder (symlinks out of it are skipped). Only regular files are read (a FIFO or a
device could block or never end), opened without following links or blocking, at most their cap, in a
thread off the event loop.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path

from physlab.errors import UserError
from physlab.tools.literature.bibtex import BibEntry, parse_bibtex
from physlab.tools.literature.fulltext import FulltextError, PdfLimits, latex_text, pdf_text
from physlab.tools.literature.keys import ARXIV_ID, DOI, corpus_path
from physlab.tools.literature.models import PaperMeta, SearchHit
from physlab.tools.literature.text import clean_text, fts_query, markdown_sections, split_passages

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE files (
    path     TEXT PRIMARY KEY,               -- relative to the corpus folder, POSIX separators
    size     INTEGER NOT NULL CHECK (size >= 0),
    mtime_ns INTEGER NOT NULL,
    sha256   TEXT NOT NULL CHECK (length(sha256) = 64),
    kind     TEXT NOT NULL CHECK (kind IN ('pdf', 'latex', 'markdown', 'bibtex', 'text')),
    error    TEXT                             -- why nothing could be indexed from it, if so
);
CREATE TABLE docs (                           -- a paper or note; a .bib file gives one per entry
    id       INTEGER PRIMARY KEY,
    path     TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
    key      TEXT NOT NULL UNIQUE,            -- corpus:<path> or corpus:<path>#<bibkey>
    title    TEXT NOT NULL,
    authors  TEXT NOT NULL DEFAULT '[]',      -- JSON list
    year     INTEGER,
    arxiv_id TEXT,
    doi      TEXT
);
CREATE INDEX docs_path ON docs(path);
CREATE VIRTUAL TABLE passages USING fts5(title, body, doc UNINDEXED, seq UNINDEXED,
                                         tokenize = 'porter unicode61');
"""
KINDS = {".pdf": "pdf", ".tex": "latex", ".ltx": "latex", ".md": "markdown", ".markdown": "markdown",
         ".bib": "bibtex", ".txt": "text"}
MAX_FILES = 5000
MAX_TEXT_FILE_BYTES = 8_000_000
READERS = 2  # files read at once on a first index (a PDF is a child process of its own)
TITLE_WEIGHT = 4.0  # bm25 column weights: a word in a title says more than one in a paragraph


@dataclass
class IndexReport:
    """What one update of the index did."""

    read: list[str] = field(default_factory=list)       # files whose bytes were read
    indexed: list[str] = field(default_factory=list)    # files (re)indexed because their contents changed
    unchanged: int = 0                                   # files not read at all
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)     # 'path: why' for files with nothing indexable
    skipped: list[str] = field(default_factory=list)    # 'path: why' for files not considered

    def line(self) -> str:
        return (f"corpus: {len(self.indexed)} indexed, {self.unchanged} unchanged, {len(self.removed)} removed"
                + (f", {len(self.failed)} unreadable" if self.failed else ""))


@dataclass
class _Loaded:
    """One changed file after reading: its new documents, or why it has none."""

    rel: str
    st: os.stat_result
    kind: str
    digest: str | None = None
    read: bool = False
    same: bool = False           # read, but its contents are those already indexed
    docs: list[_Doc] = field(default_factory=list)
    error: str | None = None


@dataclass
class _Doc:
    key: str
    title: str
    passages: list[str]
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    arxiv_id: str | None = None
    doi: str | None = None


class CorpusIndex:
    """One corpus folder and its index database (``db_path``, in the run's cache directory)."""

    def __init__(self, folder: Path, db_path: Path, *, passage_chars: int = 1500, summary_chars: int = 900,
                 max_text_chars: int = 400_000, max_pdf_bytes: int = 40_000_000, pdf: PdfLimits | None = None):
        self.folder = Path(folder).resolve()
        if not self.folder.is_dir():
            raise UserError("the corpus folder does not exist or is not a folder", path=folder)
        self.passage_chars, self.summary_chars, self.max_text_chars = passage_chars, summary_chars, max_text_chars
        self.pdf = pdf or PdfLimits()
        self.pdf_cap = max_pdf_bytes
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db_path)
        self.db.execute("PRAGMA foreign_keys = ON")
        # A cache, rebuilt if lost: no fsync per file indexed (WAL survives a crash of this process).
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self._schema()

    def close(self) -> None:
        self.db.close()

    def _schema(self) -> None:
        (version,) = self.db.execute("PRAGMA user_version").fetchone()
        if version == SCHEMA_VERSION:
            return
        # An index is a cache: one from another version is rebuilt, never migrated.
        for (name, kind) in self.db.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
                                             " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'passages_%'").fetchall():
            self.db.execute(f'DROP {"VIEW" if kind == "view" else "TABLE"} IF EXISTS "{name}"')
        with self.db:
            self.db.executescript(SCHEMA)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # --- indexing --------------------------------------------------------------------------------

    def _walk(self, report: IndexReport) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for root, dirs, files in os.walk(self.folder, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith(".") or Path(name).suffix.lower() not in KINDS:
                    continue
                path = Path(root) / name
                rel = path.relative_to(self.folder).as_posix()
                target, why = _regular_file(path, self.folder)
                if target is None:
                    report.skipped.append(f"{rel}: {why}")
                    continue
                path = target
                if len(found) >= MAX_FILES:
                    report.skipped.append(f"{rel}: more than {MAX_FILES} files in the corpus")
                    continue
                found[rel] = path
        return found

    async def update(self) -> IndexReport:
        """Bring the index up to date with the folder; unchanged files are not read. Changed files are
        read a few at a time (each PDF is a child process), and each is written as soon as it is read."""
        report = IndexReport()
        found = self._walk(report)
        known = {row[0]: row[1:] for row in self.db.execute("SELECT path, size, mtime_ns, sha256 FROM files")}
        for rel in sorted(set(known) - set(found)):
            with self.db:
                self._forget(rel)
                self.db.execute("DELETE FROM files WHERE path = ?", (rel,))
            report.removed.append(rel)
        todo: list[tuple[str, Path, os.stat_result, str | None]] = []
        for rel, path in found.items():
            try:
                st = path.stat()
            except OSError as exc:
                report.failed.append(f"{rel}: {exc.strerror}")
                continue
            old = known.get(rel)
            if old is not None and old[0] == st.st_size and old[1] == st.st_mtime_ns:
                report.unchanged += 1
                continue
            todo.append((rel, path, st, old[2] if old is not None else None))
        slots = asyncio.Semaphore(READERS)
        for done in asyncio.as_completed([self._load(item, slots) for item in todo]):
            self._store(await done, report)
        for listed in (report.read, report.indexed, report.failed):
            listed.sort()
        return report

    async def _load(self, item: tuple[str, Path, os.stat_result, str | None],
                    slots: asyncio.Semaphore) -> _Loaded:
        rel, path, st, old_digest = item
        kind = KINDS[Path(rel).suffix.lower()]
        cap = self.pdf_cap if kind == "pdf" else MAX_TEXT_FILE_BYTES
        if st.st_size > cap:
            return _Loaded(rel, st, kind, error=f"larger than {cap:,} bytes")
        async with slots:
            try:
                data = await asyncio.to_thread(read_regular, path, cap)
            except OSError as exc:
                return _Loaded(rel, st, kind, error=exc.strerror or "unreadable")
            digest = hashlib.sha256(data).hexdigest()
            if digest == old_digest:
                return _Loaded(rel, st, kind, digest=digest, read=True, same=True)
            docs, error = await self._read(rel, kind, data)
        return _Loaded(rel, st, kind, digest=digest, read=True, docs=docs, error=error)

    def _store(self, got: _Loaded, report: IndexReport) -> None:
        if got.read:
            report.read.append(got.rel)
        if got.digest is None:  # not read: nothing to index, the old entry (if any) stays as it was
            report.failed.append(f"{got.rel}: {got.error}")
            return
        with self.db:
            if got.same:
                self.db.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                                (got.st.st_size, got.st.st_mtime_ns, got.rel))
                return
            self._forget(got.rel)
            self.db.execute("INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, kind, error) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            (got.rel, got.st.st_size, got.st.st_mtime_ns, got.digest, got.kind, got.error))
            for doc in got.docs:
                self._insert(got.rel, doc)
        if got.error:
            report.failed.append(f"{got.rel}: {got.error}")
        else:
            report.indexed.append(got.rel)

    def _forget(self, rel: str) -> None:
        ids = [r[0] for r in self.db.execute("SELECT id FROM docs WHERE path = ?", (rel,))]
        self.db.executemany("DELETE FROM passages WHERE doc = ?", [(i,) for i in ids])
        self.db.execute("DELETE FROM docs WHERE path = ?", (rel,))

    def _insert(self, rel: str, doc: _Doc) -> None:
        cur = self.db.execute("INSERT OR IGNORE INTO docs(path, key, title, authors, year, arxiv_id, doi) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?)", (rel, doc.key, doc.title, json.dumps(doc.authors),
                                                             doc.year, doc.arxiv_id, doc.doi))
        if not cur.rowcount:
            return  # two BibTeX entries with one key in one file: the first is kept
        doc_id = cur.lastrowid
        self.db.executemany("INSERT INTO passages(title, body, doc, seq) VALUES (?, ?, ?, ?)",
                            [(doc.title if i == 0 else "", body, doc_id, i) for i, body in enumerate(doc.passages)])

    async def _read(self, rel: str, kind: str, data: bytes) -> tuple[list[_Doc], str | None]:
        key = f"corpus:{corpus_path(rel)}"
        stem = Path(rel).stem.replace("_", " ")
        if kind == "pdf":
            try:
                pdf = await pdf_text(data, self.pdf)
            except FulltextError as exc:
                return [], str(exc)
            title = pdf.title or _first_line(pdf.text) or stem
            return [_Doc(key, title, split_passages(pdf.text, self.passage_chars))], None
        raw = data.decode("utf-8", errors="replace")
        if kind == "bibtex":
            docs = [self._bib_doc(rel, e) for e in parse_bibtex(raw)]
            return docs, (None if docs else "no BibTeX entries")
        if kind == "latex":
            try:
                tex = await latex_text({rel: raw}, self.max_text_chars, self.pdf)
            except FulltextError as exc:
                return [], str(exc)
            return [_Doc(key, tex.title or stem, split_passages(tex.text, self.passage_chars))], None
        text = clean_text(raw, self.max_text_chars)
        title = stem
        sections = list(markdown_sections(text)) if kind == "markdown" else [(None, text)]
        passages: list[str] = []
        for heading, body in sections:
            if heading and title == stem and not passages:
                title = clean_text(heading, 300, one_line=True)
            passages += split_passages(f"{heading}\n\n{body}" if heading else body, self.passage_chars)
        return [_Doc(key, title, passages)], (None if passages else "empty")

    def _bib_doc(self, rel: str, e: BibEntry) -> _Doc:
        title = clean_text(e.get("title"), 300, one_line=True) or e.key
        authors = [clean_text(a, 120, one_line=True) for a in e.authors]
        eprint = e.get("eprint").removeprefix("arXiv:")
        doi = e.get("doi").removeprefix("https://doi.org/")
        body = clean_text("\n\n".join(x for x in (title, " and ".join(authors), e.get("journal"), e.get("abstract"),
                                                  e.get("note"), e.get("keywords")) if x), self.max_text_chars)
        return _Doc(key=f"corpus:{corpus_path(rel)}#{clean_text(e.key, 200, one_line=True)}", title=title,
                    passages=split_passages(body, self.passage_chars), authors=authors, year=e.year,
                    arxiv_id=eprint if ARXIV_ID.fullmatch(eprint) else None,
                    doi=doi if DOI.fullmatch(doi) else None)

    # --- reading ---------------------------------------------------------------------------------

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """The ``k`` best documents for ``query`` (bm25; all words first, then any), each with the
        snippet of its best passage."""
        q = fts_query(query)
        if q is None:
            return []
        hits: dict[int, SearchHit] = {}
        for expr in q:
            rows = self.db.execute(
                "SELECT d.id, d.key, d.title, d.authors, d.year, d.arxiv_id, d.doi, "
                "       snippet(passages, 1, '', '', ' … ', 48) "
                "FROM passages JOIN docs d ON d.id = passages.doc "
                f"WHERE passages MATCH ? ORDER BY bm25(passages, {TITLE_WEIGHT}, 1.0) LIMIT ?", (expr, k * 4))
            for doc_id, key, title, authors, year, arxiv_id, doi, snip in rows:
                if doc_id not in hits and len(hits) < k:
                    hits[doc_id] = SearchHit(key=key, title=title, authors=json.loads(authors), year=year,
                                             arxiv_id=arxiv_id, doi=doi, origin="corpus",
                                             summary=clean_text(snip, self.summary_chars, one_line=True))
            if len(hits) >= k:
                break
        return list(hits.values())

    def document(self, key: str) -> tuple[PaperMeta, list[str]] | None:
        """A document's metadata and its passages in reading order, or None if the key is not indexed."""
        row = self.db.execute("SELECT id, key, title, authors, year, arxiv_id, doi FROM docs WHERE key = ?",
                              (key,)).fetchone()
        if row is None:
            return None
        doc_id, key, title, authors, year, arxiv_id, doi = row
        passages = [r[0] for r in self.db.execute("SELECT body FROM passages WHERE doc = ? ORDER BY seq", (doc_id,))]
        return PaperMeta(key=key, title=title, authors=json.loads(authors), year=year, arxiv_id=arxiv_id, doi=doi,
                         origin="corpus"), passages


def _regular_file(path: Path, folder: Path) -> tuple[Path | None, str]:
    """(the regular file inside ``folder`` that ``path`` is, or a link inside the folder leads to;
    None and why not). FIFOs, devices and sockets are no papers: reading one could wait forever or
    never end."""
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):  # a loop (RuntimeError before Python 3.13), or a dangling link
            return None, "a link that leads to no file (a loop, or its target is gone)"
        if not target.is_relative_to(folder):
            return None, "a link to outside the corpus folder"
        path = target
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return None, exc.strerror or "cannot be read"
    return (path, "") if stat.S_ISREG(mode) else (None, "not a regular file")


def read_regular(path: Path, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of the regular file ``path``: opened without following a link and
    without blocking (a FIFO put in its place since the walk opens at once), and refused unless the
    opened file is a regular one. Blocking I/O: run it in a thread."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _first_line(text: str) -> str | None:
    for line in text.split("\n"):
        if len(line.strip()) > 3:
            return clean_text(line, 200, one_line=True)
    return None
