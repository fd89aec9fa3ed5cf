"""Paper keys: the one spelling of an arXiv id, an INSPIRE record, a DOI or a corpus file.

A model writes keys in many ways (``arXiv:1207.7214v2``, ``hep-th/9711200``, ``https://arxiv.org/abs/...``,
``inspire:451647``, ``doi:10.1103/...``); :func:`parse_key` reads them all into a :class:`PaperKey` or
says in one line what it expected. Keys are checked here, before they are ever put into a URL.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

# arXiv identifiers (arxiv.org/help/arxiv_identifier): YYMM.NNNN(N) since 2007, archive(.SC)/YYMMNNN before.
ARXIV_NEW = r"\d{4}\.\d{4,5}"
ARXIV_OLD = r"[a-z]+(?:-[a-z]+)?(?:\.[A-Z]{2})?/\d{7}"
ARXIV_ID = re.compile(rf"(?:{ARXIV_NEW}|{ARXIV_OLD})(?:v\d{{1,3}})?")
# DOI syntax (doi.org handbook): 10.<registrant>/<suffix>; the suffix is printable, no whitespace.
DOI = re.compile(r"10\.\d{4,9}(?:\.\d+)*/[^\s\"<>]{1,200}")
_ARXIV_URL = re.compile(r"^https?://(?:export\.)?arxiv\.org/(?:abs|pdf|e-print|src)/(.+?)(?:\.pdf)?/?$", re.IGNORECASE)
_DOI_URL = re.compile(r"^https?://(?:dx\.)?doi\.org/(.+)$", re.IGNORECASE)
_INSPIRE_URL = re.compile(r"^https?://inspirehep\.net/(?:api/)?literature/(\d+)/?$", re.IGNORECASE)

Kind = Literal["arxiv", "inspire", "doi", "corpus"]


class PaperKey(BaseModel):
    """A paper's identity in one source: ``str(key)`` is its canonical spelling."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    value: str

    def __str__(self) -> str:
        prefix = {"arxiv": "arXiv", "inspire": "INSPIRE", "doi": "DOI", "corpus": "corpus"}[self.kind]
        return f"{prefix}:{self.value}"

    def canonical(self) -> str:
        """The key a paper is known by whatever version was asked for (arXiv:1207.7214 for 1207.7214v2)."""
        return f"arXiv:{without_version(self.value)}" if self.kind == "arxiv" else str(self)


class BadKey(ValueError):
    """A key that is none of the kinds above (the message says what was expected)."""


def parse_key(text: str) -> PaperKey:
    """Read a paper key as a model or a person writes it; raise :class:`BadKey` with one line if it is
    none of: an arXiv id, ``INSPIRE:<recid>``, a DOI, ``corpus:<path>`` (or their URLs)."""
    raw = (text or "").strip().strip("<>").strip()
    if not raw or len(raw) > 300:
        raise BadKey(f"not a paper key: {raw[:60]!r} (expected an arXiv id, INSPIRE:<recid>, a DOI or corpus:<path>)")
    for pattern, kind in ((_ARXIV_URL, "arxiv"), (_DOI_URL, "doi"), (_INSPIRE_URL, "inspire")):
        m = pattern.match(raw)
        if m:
            return parse_key(f"{kind}:{m.group(1)}")
    prefix, sep, rest = raw.partition(":")
    p = prefix.lower() if sep else ""
    if p == "corpus":
        return PaperKey(kind="corpus", value=corpus_path(rest))
    if p in ("inspire", "recid", "inspirehep"):
        if not re.fullmatch(r"\d{1,10}", rest.strip()):
            raise BadKey(f"not an INSPIRE record id: {rest[:60]!r} (expected digits, e.g. INSPIRE:451647)")
        return PaperKey(kind="inspire", value=str(int(rest.strip())))
    if p == "doi":
        return _doi(rest.strip())
    if p in ("arxiv", "eprint"):
        return _arxiv(rest.strip())
    if raw.startswith("10."):
        return _doi(raw)
    return _arxiv(raw)


def _arxiv(value: str) -> PaperKey:
    if not ARXIV_ID.fullmatch(value):
        raise BadKey(f"not an arXiv id: {value[:60]!r} (expected e.g. 1207.7214, 2101.01234v2 or hep-th/9711200)")
    return PaperKey(kind="arxiv", value=value)


def _doi(value: str) -> PaperKey:
    if not DOI.fullmatch(value):
        raise BadKey(f"not a DOI: {value[:60]!r} (expected 10.<registrant>/<suffix>)")
    return PaperKey(kind="doi", value=value)


def corpus_path(value: str) -> str:
    """A corpus-relative POSIX path; never absolute, never leaving the corpus folder."""
    v = value.strip().replace("\\", "/")
    parts = [p for p in v.split("/") if p not in ("", ".")]
    if not parts or v.startswith("/") or any(p == ".." for p in parts) or any("\x00" in p for p in parts):
        raise BadKey(f"not a corpus path: {value[:60]!r} (expected a path inside the corpus folder, "
                        "e.g. corpus:notes/lindblad.md)")
    return "/".join(parts)


def without_version(arxiv_id: str) -> str:
    return re.sub(r"v\d+$", "", arxiv_id)
