"""BibTeX entries read as data: key, type and fields, nothing else.

The corpus needs only each entry's key, title, authors, year, eprint, DOI and abstract; a small
brace-matching reader does that without a dependency (and without any of BibTeX's macros or
string concatenation being evaluated: ``@string`` and ``@preamble`` are skipped, values are kept as
written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ENTRY = re.compile(r"@\s*([A-Za-z]+)\s*[{(]")
_FIELD = re.compile(r"\s*([A-Za-z][\w\-:.]*)\s*=\s*")
MAX_ENTRIES = 20_000


@dataclass
class BibEntry:
    type: str
    key: str
    fields: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str:
        return self.fields.get(name, "")

    @property
    def authors(self) -> list[str]:
        return [a.strip() for a in re.split(r"\s+and\s+", self.get("author")) if a.strip()]

    @property
    def year(self) -> int | None:
        m = re.search(r"\b(1[5-9]\d\d|20\d\d)\b", self.get("year") or self.get("date"))
        return int(m.group(1)) if m else None


def parse_bibtex(text: str) -> list[BibEntry]:
    """Every ``@type{key, field = {...} | "..." | number, ...}`` entry; damaged entries are skipped."""
    out: list[BibEntry] = []
    pos = 0
    while len(out) < MAX_ENTRIES:
        m = _ENTRY.search(text, pos)
        if not m:
            break
        kind = m.group(1).lower()
        close = "}" if text[m.end() - 1] == "{" else ")"
        end = _matching(text, m.end() - 1, close)
        if end < 0:
            break
        pos = end + 1
        if kind in ("string", "preamble", "comment"):
            continue
        entry = _entry(kind, text[m.end(): end])
        if entry is not None:
            out.append(entry)
    return out


def _matching(text: str, start: int, close: str) -> int:
    """Index of the delimiter closing the one at ``start`` (braces nest; a backslash escapes), or -1."""
    depth, i = 0, start
    opener = text[start]
    end = min(len(text), start + 200_000)
    while i < end:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{" or (c == opener == "("):
            depth += 1
        elif c == "}" or (c == close == ")"):
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _entry(kind: str, body: str) -> BibEntry | None:
    key, sep, rest = body.partition(",")
    key = key.strip()
    if not sep or not key or len(key) > 200:
        return None
    entry = BibEntry(type=kind, key=key)
    pos = 0
    while pos < len(rest):
        m = _FIELD.match(rest, pos)
        if not m:
            break
        name, pos = m.group(1).lower(), m.end()
        value, pos = _value(rest, pos)
        entry.fields[name] = " ".join(value.replace("{", "").replace("}", "").split())
        pos = rest.find(",", pos)
        if pos < 0:
            break
        pos += 1
    return entry


def _value(s: str, pos: int) -> tuple[str, int]:
    if pos >= len(s):
        return "", pos
    if s[pos] == "{":
        end = _matching(s, pos, "}")
        return (s[pos + 1: end], end + 1) if end >= 0 else (s[pos + 1:], len(s))
    if s[pos] == '"':
        depth, i = 0, pos + 1
        while i < len(s):
            c = s[i]
            depth += 1 if c == "{" else -1 if c == "}" else 0
            if c == '"' and depth == 0 and s[i - 1] != "\\":
                return s[pos + 1: i], i + 1
            i += 1
        return s[pos + 1:], len(s)
    m = re.match(r"[^,}]*", s[pos:])
    word = m.group(0) if m else ""
    return word.strip(), pos + len(word)
