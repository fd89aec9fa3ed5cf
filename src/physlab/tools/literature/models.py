"""The typed results of the literature tools, and the source record a role cites.

A tool call returns one of these (always small: capped hits, passages and characters); a passage a
role relies on becomes a :class:`Source` (its key in arXiv, INSPIRE, a DOI or the local corpus, its
title, authors and year, and the quoted passage). :func:`format_reference` writes a source as one
entry of a reference list.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, Field

Origin = Literal["arxiv", "inspire", "corpus", "web"]


class Source(BaseModel):
    """A passage a role can cite: what it says, where it is, and how to find it again."""

    id: str = Field(description="src-<10 hex digits> of key and passage: the same quote is the same source.")
    key: str = Field(description="The paper's key: arXiv:<id>, INSPIRE:<recid>, DOI:<doi> or corpus:<path>.")
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    passage: str = Field("", description="The quoted passage, verbatim as the tool returned it.")
    url: str | None = None
    arxiv_id: str | None = None
    inspire_recid: int | None = None
    doi: str | None = None
    origin: Origin

    @staticmethod
    def make_id(key: str, passage: str) -> str:
        return "src-" + hashlib.sha256(f"{key}\n{passage}".encode()).hexdigest()[:10]


class PaperMeta(BaseModel):
    """What every result says about a paper: its key and how to cite it."""

    key: str
    title: str
    authors: list[str] = Field(default_factory=list, description="At most a few; 'et al.' when there were more.")
    year: int | None = None
    url: str | None = None
    arxiv_id: str | None = None
    inspire_recid: int | None = None
    doi: str | None = None
    origin: Origin

    def source(self, passage: str) -> Source:
        """This paper, citing ``passage``."""
        fields = self.model_dump(include={"key", "title", "authors", "year", "url", "arxiv_id", "inspire_recid",
                                          "doi", "origin"})
        return Source(id=Source.make_id(self.key, passage), passage=passage, **fields)


class SearchHit(PaperMeta):
    """One paper found by a search: its metadata and a short summary (abstract, or the matching snippet)."""

    summary: str = ""
    citation_count: int | None = None

    def cite(self) -> Source:
        """The hit as a source, its summary as the passage."""
        return self.source(self.summary)


class SearchResults(BaseModel):
    """Hits of one search, best first; ``unavailable`` names each source that could not be asked."""

    query: str
    hits: list[SearchHit] = Field(default_factory=list)
    unavailable: list[str] = Field(default_factory=list, description="'unavailable: <source>: <why>' lines.")


class Passage(BaseModel):
    index: int = Field(description="Position of the passage in the paper (0 is the first).")
    text: str


class PaperText(PaperMeta):
    """Passages of a paper (the best matches of a query, or the next ones in reading order)."""

    text_from: Literal["latex source", "pdf", "abstract", "corpus", "none"] = "none"
    passages: list[Passage] = Field(default_factory=list)
    total_passages: int = 0
    unavailable: list[str] = Field(default_factory=list)

    def cite(self, index: int) -> Source:
        """The passage with this index as a source."""
        for p in self.passages:
            if p.index == index:
                return self.source(p.text)
        raise ValueError(f"{self.key}: no passage {index} in this reading (have {[p.index for p in self.passages]})")


class CitationList(BaseModel):
    """Papers citing a record (``direction='citations'``) or cited by it (``'references'``)."""

    key: str
    direction: Literal["citations", "references"]
    total: int = 0
    hits: list[SearchHit] = Field(default_factory=list)
    unavailable: list[str] = Field(default_factory=list)


def format_authors(authors: list[str], most: int = 3) -> str:
    names = [a for a in authors if a and a != "et al."]
    if not names:
        return ""
    if len(names) > most or "et al." in authors:
        return f"{names[0]} et al."
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def format_reference(source: Source | PaperMeta, number: int | None = None) -> str:
    """One entry of a reference list (Markdown): ``[n] Authors, "Title" (year), key. <url>``."""
    parts = []
    who = format_authors(source.authors)
    if who:
        parts.append(who + ",")
    title = " ".join(source.title.split()).replace("*", "\\*").replace("_", "\\_").replace("[", "\\[")
    parts.append(f"“{title}”" + (f" ({source.year})" if source.year else "") + ",")
    ids = [source.key]
    if source.arxiv_id and f"arXiv:{source.arxiv_id}" != source.key:
        ids.append(f"arXiv:{source.arxiv_id}")
    if source.doi and f"DOI:{source.doi}" != source.key:
        ids.append(f"doi:{source.doi}")
    parts.append(", ".join(ids) + ".")
    if source.url and source.url.startswith(("https://", "http://")):
        parts.append(f"<{source.url}>")
    line = " ".join(parts)
    return f"[{number}] {line}" if number is not None else line
