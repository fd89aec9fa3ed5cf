"""Hostile text made safe to show a model, and cut into passages a role can quote.

Everything the literature tools fetch or read (titles, abstracts, LaTeX, PDF text, notes) is hostile:
it is capped, its control characters (and the Unicode controls that reorder or hide text) are
removed, and it is only ever shown, never executed. Passages are ranked against a query with SQLite
FTS5's bm25, the same ranking the local corpus uses.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence

# Bidirectional overrides and isolates, zero-width and BOM characters: they can make shown text read
# differently from what it is (format characters, Unicode category Cf).
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                    "\u2060\u2066\u2067\u2068\u2069\ufeff"))
_WS = re.compile(r"[ \t\f\v\r]+")
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")  # terminal escape sequences, whole


def clean_text(text: str | None, limit: int | None = None, *, one_line: bool = False) -> str:
    """Text with control characters removed (newlines and tabs kept unless ``one_line``), runs of
    spaces collapsed, at most ``limit`` characters (cut at a word, with '…')."""
    if not text:
        return ""
    if limit is not None:
        text = text[: limit * 2 + 64]  # never normalise megabytes to keep a few hundred characters
    text = _ANSI.sub("", unicodedata.normalize("NFC", text).translate(_INVISIBLE))
    text = "".join(ch if ch in "\n\t" or unicodedata.category(ch) != "Cc" else " " for ch in text)
    if one_line:
        text = " ".join(text.split())
    else:
        text = "\n".join(_WS.sub(" ", line).strip() for line in text.split("\n"))
        text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return clip(text, limit) if limit is not None else text


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 0)]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"


def split_passages(text: str, size: int) -> list[str]:
    """Paragraphs joined into passages of at most ``size`` characters (a longer paragraph is cut at
    sentence or word boundaries), in reading order."""
    out: list[str] = []
    current = ""
    for para in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not para:
            continue
        pieces = [para] if len(para) <= size else _cut(para, size)
        for piece in pieces:
            if current and len(current) + 2 + len(piece) > size:
                out.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _cut(para: str, size: int) -> list[str]:
    pieces: list[str] = []
    while len(para) > size:
        window = para[:size]
        at = max(window.rfind(". "), window.rfind("\n"))
        if at < size // 2:
            at = window.rfind(" ")
        if at < size // 4:
            at = size - 1
        pieces.append(para[: at + 1].strip())
        para = para[at + 1:].strip()
    if para:
        pieces.append(para)
    return pieces


def fts_query(text: str) -> tuple[str, str] | None:
    """A user's query as two FTS5 match expressions (all words, then any word), every word quoted so
    nothing in the query is read as FTS5 syntax; None when it has no words."""
    words = re.findall(r"\w+", text.lower())[:32]
    if not words:
        return None
    quoted = [f'"{w}"' for w in dict.fromkeys(words)]
    return " AND ".join(quoted), " OR ".join(quoted)


def rank_passages(passages: Sequence[str], query: str, k: int) -> list[int]:
    """Indices of the ``k`` passages that best match ``query`` (bm25, all words first, then any)."""
    q = fts_query(query)
    if q is None:
        return []
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE p USING fts5(body, tokenize='porter unicode61')")
        db.executemany("INSERT INTO p(rowid, body) VALUES (?, ?)", enumerate(passages))
        found: list[int] = []
        for expr in q:
            for (rowid,) in db.execute("SELECT rowid FROM p WHERE p MATCH ? ORDER BY rank LIMIT ?", (expr, k)):
                if rowid not in found:
                    found.append(rowid)
            if len(found) >= k:
                break
        return found[:k]
    finally:
        db.close()


# --- LaTeX ---------------------------------------------------------------------------------------
# Every pattern here runs in time linear in its input, whatever the input: bounded repetitions inside
# a match, and environments dropped by one scan (a lazy ``.*?`` to a closing that never comes would
# rescan the rest of the text once per opening).

_COMMENT = re.compile(r"(?<!\\)%.*")
_INPUT = re.compile(r"\\(?:input|include)\s*\{([^{}\n]{1,200})\}")
_DROP_ENVS = ("figure", "figure*", "table", "table*", "thebibliography", "comment", "tikzpicture")
_DROP_BEGIN = re.compile(r"\\begin\{(" + "|".join(re.escape(e) for e in sorted(_DROP_ENVS, key=len, reverse=True))
                         + r")\}")
_SECTION = re.compile(r"\\(?:sub){0,2}section\*?\s*\{([^{}]{0,500})\}")
_DROP_COMMANDS = re.compile(r"\\(?:maketitle|bibliographystyle\{[^{}]{0,200}\}|bibliography\{[^{}]{0,200}\}"
                            r"|label\{[^{}]{0,200}\})")
INPUT_DEPTH = 2


def latex_main(files: dict[str, str], max_chars: int | None = None) -> str:
    """The paper's LaTeX from an e-print's .tex files: the file with ``\\documentclass`` (the longest
    if several), its ``\\input``/``\\include`` files inlined by name from the same archive (two
    levels, nothing outside it), comments removed. Each file is inlined once at most -- a file that
    inputs itself, or two that input each other, add nothing more -- so the text is never longer
    than the archive's files together, and at most ``max_chars``. Never compiled, never run."""
    if not files:
        return ""
    mains = [n for n, t in files.items() if "\\documentclass" in t] or list(files)
    main = max(mains, key=lambda n: len(files[n]))
    by_stem = {n.removesuffix(".tex"): t for n, t in files.items()}
    inlined = {main.removesuffix(".tex")}
    room = [max_chars if max_chars is not None else sum(map(len, files.values()))]

    def inline(text: str, depth: int) -> str:
        text = _strip_comments(text[: max(room[0], 0)])
        room[0] -= len(text)
        if depth >= INPUT_DEPTH:
            return text

        def one(m: re.Match[str]) -> str:
            stem = m.group(1).strip().removesuffix(".tex")
            if stem in inlined or stem not in by_stem or room[0] <= 0:
                return ""
            inlined.add(stem)
            return inline(by_stem[stem], depth + 1)

        return _INPUT.sub(one, text)

    out = inline(files[main], 0)
    return out[:max_chars] if max_chars is not None else out


def _strip_comments(text: str) -> str:
    return "\n".join(_COMMENT.sub("", line) for line in text.split("\n"))


def drop_environments(body: str) -> str:
    """``body`` without the figures, tables, bibliography, comments and TikZ pictures, in one scan:
    an environment opened and never closed loses its opening only (the text after it is kept)."""
    out: list[str] = []
    kept_from = at = 0
    unclosed: set[str] = set()  # no closing after some point: none after any later opening either
    while (m := _DROP_BEGIN.search(body, at)) is not None:
        env = m.group(1)
        end = -1 if env in unclosed else body.find(f"\\end{{{env}}}", m.end())
        if end < 0:
            unclosed.add(env)
            out.append(body[kept_from: m.start()])
            kept_from = at = m.end()
            continue
        out.append(body[kept_from: m.start()] + "\n")
        kept_from = at = end + len(f"\\end{{{env}}}")
    out.append(body[kept_from:])
    return "".join(out)


def latex_body(tex: str) -> tuple[str, str | None]:
    """(the document's body as readable LaTeX, its title if given): the preamble and figures, tables and
    the bibliography dropped; sections become lines of their own; the mathematics is kept as written."""
    title = _command_arg(tex, "title")
    begin, end = tex.find("\\begin{document}"), tex.rfind("\\end{document}")
    body = tex[begin + len("\\begin{document}"): end if end > begin else None] if begin >= 0 else tex
    body = drop_environments(body)
    body = body.replace("\\begin{abstract}", "\n\nAbstract.\n").replace("\\end{abstract}", "\n\n")
    body = _SECTION.sub(lambda m: f"\n\n{m.group(1).strip()}\n", body)
    body = _DROP_COMMANDS.sub("", body)
    return body, (clean_text(title, 300, one_line=True) if title else None)


def _command_arg(tex: str, name: str) -> str | None:
    m = re.search(rf"\\{name}\s*(?:\[[^\]]{{0,300}}\]\s*)?\{{", tex)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(tex) and depth and i - m.end() < 2000:
        depth += {"{": 1, "}": -1}.get(tex[i], 0) if tex[i - 1] != "\\" else 0
        i += 1
    return tex[m.end(): i - 1] if depth == 0 else None


def markdown_sections(text: str) -> Iterable[tuple[str | None, str]]:
    """(heading, text) for each section of a Markdown note, in order."""
    heading: str | None = None
    lines: list[str] = []
    for line in text.split("\n"):
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            if any(x.strip() for x in lines):
                yield heading, "\n".join(lines)
            heading, lines = m.group(1).strip(), []
        else:
            lines.append(line)
    if any(x.strip() for x in lines):
        yield heading, "\n".join(lines)
