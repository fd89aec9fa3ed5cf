"""Which tools a run gives the lab beyond Python: computer algebra, the online literature (arXiv and
INSPIRE), a local corpus, the provider's web search. Parsed once from ``--tools`` into a typed
``ToolChoice`` that the run records, so a resume and a sweep's cell run with the same tools; a
benchmark number with literature search is another experiment (another arm of a sweep)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from physlab.errors import UserError

NAMES = ("cas", "literature", "corpus=DIR", "web", "none")


class ToolChoice(BaseModel):
    """The tools of one run. Written on the command line as ``cas,literature,corpus=DIR,web``
    (``str()`` gives that form back; ``none``: Python only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cas: bool = Field(default=True, description="The computer algebra systems installed here (FORM, Cadabra2, "
                                                "Maxima, the Wolfram Language) as an execute(code, language) tool.")
    literature: bool = Field(default=False, description="arXiv and INSPIRE-HEP: search, read, citations.")
    corpus: str | None = Field(default=None, description="A folder of the physicist's own papers and notes "
                                                         "(absolute), indexed into the run's cache.")
    web: bool = Field(default=False, description="The provider's own web search, where it has one.")
    literature_url: str | None = Field(
        default=None, description="Where arXiv's and INSPIRE's APIs are asked instead of the real services: a "
                                  "stand-in's base URL (tests, offline demos). Real users leave it unset.")

    @classmethod
    def default(cls, *, open_question: bool) -> ToolChoice:
        """Computer algebra on (it only computes); the literature on for a physicist's own Markdown
        question and off for a benchmark problem, where searching could find the answer key."""
        return cls(cas=True, literature=open_question)

    @classmethod
    def parse(cls, value: str, flag: str = "--tools") -> ToolChoice:
        """``cas,literature,corpus=DIR,web`` (any subset), ``literature=URL`` for a stand-in, or ``none``."""
        items = [x.strip() for x in (value or "").split(",") if x.strip()]
        if not items:
            raise UserError(f"expected a comma-separated list of {', '.join(NAMES)}, got {value!r}", field=flag)
        got: dict[str, object] = {"cas": False}
        for item in items:
            name, sep, arg = item.partition("=")
            name = name.strip().lower()
            if name == "none" and not sep:
                if len(items) > 1:
                    raise UserError("'none' cannot be combined with other tools", field=flag)
            elif name in ("cas", "web") and not sep:
                got[name] = True
            elif name == "literature":
                got["literature"] = True
                if sep:
                    url = arg.strip()
                    if not url.startswith(("http://", "https://")):
                        raise UserError(f"literature=URL needs an http(s) URL, got {arg!r}", field=flag)
                    got["literature_url"] = url.rstrip("/")
            elif name == "corpus":
                folder = Path(arg.strip()).expanduser()
                if not sep or not arg.strip():
                    raise UserError("corpus needs a folder: corpus=DIR", field=flag)
                if not folder.is_dir():
                    raise UserError(f"corpus={arg}: no such folder", field=flag)
                got["corpus"] = str(folder.resolve())
            else:
                raise UserError(f"unknown tool {item!r}: expected {', '.join(NAMES)}", field=flag)
        return cls.model_validate(got)

    def __str__(self) -> str:
        parts = ["cas"] if self.cas else []
        if self.literature:
            parts.append(f"literature={self.literature_url}" if self.literature_url else "literature")
        if self.corpus:
            parts.append(f"corpus={self.corpus}")
        if self.web:
            parts.append("web")
        return ",".join(parts) or "none"

    @property
    def reads_literature(self) -> bool:
        """Whether any literature tool is on (online sources or a corpus)."""
        return self.literature or self.corpus is not None


__all__ = ["NAMES", "ToolChoice"]
