"""The literature as tools for the lab: arXiv, INSPIRE-HEP and the physicist's own corpus.

``Library`` is a run's bibliography (one seam over arXiv's Atom API and site, INSPIRE's REST
API, and a local folder indexed into SQLite FTS5); its methods ``search_literature``, ``read_paper``,
``citations`` and ``search_corpus`` are the tools a role's agent gets (``Library.tools()``), each
returning a small typed result. A passage a role relies on becomes a ``Source``
(``Library.source_for``), written in a reference list by ``format_reference``. ``web_search`` gives a
role's agent its provider's own web search, off unless asked. docs/tools.md says what each sends where.
"""

from physlab.tools.literature.keys import BadKey, PaperKey, parse_key
from physlab.tools.literature.library import Library
from physlab.tools.literature.models import (
                                             CitationList,
                                             PaperMeta,
                                             PaperText,
                                             Passage,
                                             SearchHit,
                                             SearchResults,
                                             Source,
                                             format_reference,
)
from physlab.tools.literature.polite import SourceUnavailable
from physlab.tools.literature.settings import LiteratureSettings
from physlab.tools.literature.web import WebSearchChoice, supports_web_search, web_search

__all__ = ["BadKey", "CitationList", "Library", "LiteratureSettings", "PaperKey", "PaperMeta", "PaperText", "Passage",
           "SearchHit", "SearchResults", "Source", "SourceUnavailable", "WebSearchChoice", "format_reference",
           "parse_key", "supports_web_search", "web_search"]
