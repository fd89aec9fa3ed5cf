"""Where the literature tools send requests and how politely: one typed settings model.

Real users leave the base URLs at their defaults (arXiv's export API and INSPIRE-HEP); tests point
them at the stand-in on 127.0.0.1 (`physlab.tools.literature.standin`) and set the waits to 0.
Every default says where it comes from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from physlab.tools.literature.fulltext import PdfLimits


class LiteratureSettings(BaseModel):
    """How the bibliography tool reaches arXiv and INSPIRE, and how much it takes from them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Where requests go. The arXiv API and the arXiv site (PDFs, e-print sources) are separate
    # hosts in the real world, so they are separate settings.
    arxiv_api_url: str = Field(
        default="https://export.arxiv.org/api/query",
        description="arXiv's Atom query API (the `arxiv` package's default endpoint).")
    arxiv_site_url: str = Field(
        default="https://arxiv.org", description="Where /abs/ID, /pdf/ID and /e-print/ID are served.")
    inspire_api_url: str = Field(
        default="https://inspirehep.net/api",
        description="INSPIRE-HEP's REST API (github.com/inspirehep/rest-api-doc).")

    # Politeness.
    arxiv_delay_s: float = Field(
        default=3.0, ge=0,
        description="Seconds between two requests to arXiv (API or download): arXiv's API terms of use ask "
                    "for no more than one request every three seconds, on one connection.")
    arxiv_retries: int = Field(
        default=3, ge=0, le=5,
        description="Retries of a failed arXiv API page (the `arxiv` package's own default, num_retries=3).")
    inspire_max_requests: int = Field(
        default=15, ge=1,
        description="INSPIRE's rate limit: 15 requests per IP in a 5 s window (rest-api-doc, 'Rate limiting').")
    inspire_window_s: float = Field(
        default=5.0, ge=0,
        description="The window of that limit; also the wait after a 429 ('wait at least 5s when receiving a 429').")
    timeout_s: float = Field(
        default=30.0, gt=0,
        description="Longest wait for one reply (connect, read, or a stalled server), PhysLab's choice: a role's "
                    "tool call should fail in seconds, not hang.")

    # What is taken, at most. Everything fetched is hostile text: capped, cleaned, never executed.
    max_response_bytes: int = Field(
        default=4_000_000, gt=0,
        description="An API reply (JSON) larger than this is refused; records of large collaborations run to MBs.")
    max_download_bytes: int = Field(
        default=40_000_000, gt=0,
        description="A PDF or e-print larger than this is refused (arXiv's submission limit is 50 MB with figures).")
    max_source_unpacked_bytes: int = Field(
        default=20_000_000, gt=0, description="Bytes read out of an e-print archive (a gzip bomb stops here).")
    max_text_chars: int = Field(default=400_000, gt=0, description="Characters of one paper's text kept.")
    pdf_max_pages: int = Field(default=60, gt=0, description="Pages of a PDF read.")
    pdf_cpu_s: int = Field(
        default=30, gt=0, description="CPU seconds the PDF parser may use (a child process with rlimits).")
    pdf_memory_mb: int = Field(default=768, gt=0, description="Address space of that child process.")

    # What the tools return to a model: small, so a role's context is not flooded.
    max_results: int = Field(default=5, ge=1, le=25, description="Search hits per source and tool call.")
    summary_chars: int = Field(default=900, ge=100, description="Characters of an abstract or snippet in a hit.")
    passage_chars: int = Field(default=1500, ge=200, description="Characters of one passage of a paper.")
    max_passages: int = Field(default=4, ge=1, le=20, description="Passages returned by one read_paper call.")
    max_authors: int = Field(default=6, ge=1, description="Authors listed in a hit (then 'et al.').")

    fulltext: Literal["source", "pdf"] = Field(
        default="source",
        description="What read_paper downloads from arXiv first: the LaTeX e-print ('source': equations stay "
                    "LaTeX, which a model reads exactly) or the PDF (text extracted by pypdf; equations come out "
                    "mangled). Either falls back to the other when arXiv has only one.")
    user_agent: str = Field(
        default="PhysLab-literature/0.1", description="Sent with every request (arXiv's API and downloads, INSPIRE).")

    def pdf_limits(self) -> PdfLimits:
        from physlab.tools.literature.fulltext import PdfLimits
        return PdfLimits(max_pages=self.pdf_max_pages, max_chars=self.max_text_chars, cpu_s=self.pdf_cpu_s,
                         memory_mb=self.pdf_memory_mb)

    def for_standin(self, base_url: str) -> LiteratureSettings:
        """These settings pointed at a stand-in server (both APIs on one base URL), with no waits."""
        base = base_url.rstrip("/")
        return self.model_copy(update={"arxiv_api_url": f"{base}/api/query", "arxiv_site_url": base,
                                       "inspire_api_url": f"{base}/api", "arxiv_delay_s": 0.0,
                                       "inspire_window_s": 0.0})
