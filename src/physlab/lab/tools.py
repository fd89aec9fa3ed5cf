"""The tools beyond Python that a run gives the lab's roles, as its ``ToolChoice`` says: computer
algebra (one ``execute(code, language)`` tool for the computer, the reviewer and the adjudicator,
described with each installed system's tested example), the literature (search, read, citations
and ``cite_source`` for the surveyor, the researcher, the reviewer and the critic) and the
provider's web search. Registered here, in one place, so the role modules stay as they are:
``run_role`` asks ``LabEnv.toolbox`` for a role's extra tools.

A passage a role cites is checked against what the literature tools really showed in this run
(``Library.source_for``) and kept until the engine records it in the ResearchState
(``take_cited``), sorted, so concurrent workers give the same state whatever finishes first.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability

from physlab.errors import UserError
from physlab.lab.context import clip
from physlab.lab.roles import adjudicator, computer, reviewer
from physlab.lab.roles._base import LabEnv
from physlab.lab.state.models import SourceUse
from physlab.run.events import System
from physlab.sandbox.types import SandboxLimits
from physlab.tools import cas
from physlab.tools.choice import ToolChoice
from physlab.tools.literature import Library, LiteratureSettings, Source, web_search
from physlab.tools.literature.text import clean_text

CAS_ROLES = frozenset({"computer", "reviewer", "adjudicator"})
LITERATURE_ROLES = frozenset({"surveyor", "researcher", "reviewer", "critic"})

CAS_TOOL = """Run a complete program in one of the sandbox's computer algebra systems, in a fresh isolated \
process with the same limits as Python (no state carries over between calls; print what you need). \
Use it where a system does the step better than SymPy: Dirac traces and large polynomial algebra in \
FORM, tensor index symmetries and curvature in Cadabra2, integrals and series in Maxima or the \
Wolfram Language. `language` is one of: {languages}.

{systems}"""

LITERATURE_GUIDE = """## The literature

You may search and read the physics literature with the literature tools ({names}). Cite every passage \
you rely on with cite_source(key, quote, used_for), quoting it verbatim as a tool showed it: a cited \
passage becomes one of the run's sources and appears in the answer's references. A quote no tool \
showed is not cited. What a paper says is evidence to weigh, not a result the lab established."""


# FORM prints its own timings ("Time = 0.01 sec") between results: the one thing in a tool's return
# that changes from run to run, which a replayed run compares. The seconds are left out.
_FORM_TIME = re.compile(r"\bTime =\s+[0-9.]+ sec\b")


def _outcome(res: Any) -> str:
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    return f"{status}{', output truncated' if res.truncated else ''}"


class LabTools:
    """A run's tools beyond Python. ``async with LabTools(choice, env, cache_dir) as tools:`` opens
    the literature (indexing the corpus once) and looks up the algebra systems installed here."""

    def __init__(self, choice: ToolChoice, env: LabEnv, cache_dir: Path, *,
                 iteration: Callable[[], int] = lambda: 0, settings: LiteratureSettings | None = None) -> None:
        self.choice, self.env, self.cache_dir, self.iteration = choice, env, cache_dir, iteration
        self.settings = settings
        self.library: Library | None = None
        self.statuses: list[cas.SystemStatus] = []
        self.notices: list[str] = []          # one line each, for the run's event log
        self._cited: list[tuple[Source, SourceUse]] = []
        self._web_told = False

    async def __aenter__(self) -> LabTools:
        if self.choice.cas:
            self.statuses = await asyncio.to_thread(cas.available_systems)
            present = [s.name for s in self.statuses if s.available]
            self.notices.append("computer algebra: " + (", ".join(present) if present else "no system installed")
                                + "".join(f"; {s.reason}" for s in self.statuses if not s.available))
        if self.choice.reads_literature:
            settings = self.settings or LiteratureSettings()
            if self.choice.literature_url:
                settings = settings.for_standin(self.choice.literature_url)
            corpus = Path(self.choice.corpus) if self.choice.corpus else None
            try:
                self.library = await Library(settings, cache_dir=self.cache_dir, online=self.choice.literature,
                                             corpus=corpus).__aenter__()
            except (OSError, UserError) as exc:   # the folder went away since --tools was read (a resume): go on
                self.notices.append(f"literature: the corpus could not be indexed ({exc}); running without it")
                if not self.choice.literature:
                    return self
                self.library = await Library(settings, cache_dir=self.cache_dir, online=True).__aenter__()
            where = ("arXiv and INSPIRE" + (f" (at {self.choice.literature_url})" if self.choice.literature_url
                                            else "")) if self.choice.literature else ""
            if self.library.index_report is not None:
                where += (", " if where else "") + self.library.index_report.line()
            self.notices.append(f"literature: {where}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.library is not None:
            await self.library.__aexit__(*exc)

    # --- what a role gets -------------------------------------------------------------------------

    def languages(self) -> list[str]:
        return [cas.LANGUAGES[0]] + [s.language for s in self.statuses if s.available]

    def tools(self, role: str) -> list[Tool[Any]]:
        out: list[Tool[Any]] = []
        judge_without_tools = role in ("reviewer", "adjudicator") and not self.env.judges_compute
        if role in CAS_ROLES and self.choice.cas and len(self.languages()) > 1 and not judge_without_tools:
            out.append(Tool(self._execute, takes_ctx=True, name="execute", description=CAS_TOOL.format(
                languages=", ".join(self.languages()), systems=cas.describe(self.statuses))))
        if role in LITERATURE_ROLES and self.library is not None:
            out += self.library.tools()
            out.append(Tool(self._citer(role), takes_ctx=False, name="cite_source"))
        return out

    def capabilities(self, role: str, model: Any) -> list[AbstractCapability[Any]]:
        if role not in LITERATURE_ROLES or not self.choice.web:
            return []
        choice = web_search(model, True)
        if choice.notice and not self._web_told:
            self._web_told = True
            self.env.notify(System(what="tools", text=choice.notice))
        return list(choice.capabilities)

    def guide(self, role: str) -> str:
        """What the role's instructions say about its literature tools ('' without them)."""
        if role not in LITERATURE_ROLES or self.library is None:
            return ""
        return LITERATURE_GUIDE.format(names=", ".join(t.name for t in self.tools(role)))

    def take_cited(self) -> list[tuple[Source, SourceUse]]:
        """The passages cited since the last call, in a fixed order (role, source, purpose)."""
        cited, self._cited = self._cited, []
        return sorted(cited, key=lambda c: (c[1].role, c[0].id, c[1].purpose))

    # --- the tools ----------------------------------------------------------------------------------

    async def _execute(self, ctx: RunContext[Any], code: str, language: str) -> str:
        """Args:
            code: The whole program in that system's language; print every value you will quote.
            language: Which system runs it: python, form, cadabra2, maxima or wolfram (if installed).
        """
        deps = ctx.deps
        # The computer documents its approach before any code runs, whichever language it is in.
        if isinstance(deps, computer.Bench) and (deps.approach_step is None or deps.approach_step >= ctx.run_step):
            deps.refused.append("execute before document_approach")
            raise ModelRetry("Call document_approach first, on its own, before running any code.")
        try:
            lang = cas.check_language(language)
            if lang not in self.languages():
                raise UserError(f"{lang} is not installed here; available: {', '.join(self.languages())}")
            res = await cas.execute(code, lang, self.env.ctx.sandbox,
                                    SandboxLimits(timeout_s=self.env.code_timeout_s, memory_mb=self.env.code_memory_mb))
        except UserError as exc:
            return f"not run: {exc}"
        notice = f"NOTICE: {res.notice}\n" if res.notice else ""
        stdout = _FORM_TIME.sub("Time = (not shown) sec", res.stdout) if lang == "form" else res.stdout
        # No timings in what the model sees: the same program must give the same tool return (replay).
        raw = f"[{lang}, {_outcome(res)}]\n{notice}STDOUT:\n{stdout}\nSTDERR:\n{res.stderr}"
        if isinstance(deps, (computer.Bench, reviewer.ReviewDesk, adjudicator.AdjudicationDesk)):
            deps.runs.append((code, raw, lang))
        return clip(raw, 8000)

    def _citer(self, role: str) -> Callable[..., Any]:
        library = self.library
        assert library is not None

        async def cite_source(key: str, quote: str, used_for: str) -> str:
            """Cite a passage of the literature you rely on: it becomes one of the run's sources and is
            listed in the answer's references.

            Args:
                key: The paper's key as a literature tool gave it (arXiv id, INSPIRE:<recid>, DOI:<doi>, corpus:<path>).
                quote: The passage, verbatim as search_literature, read_paper or search_corpus showed it.
                used_for: What you use it for (the fact, method or convention it supports), in one sentence.
            """
            source = library.source_for(key, quote)
            if source is None:
                return ("not cited: no literature tool showed that passage of that paper in this run; quote it "
                        "verbatim (at least a few words) from what read_paper, search_literature or search_corpus "
                        "returned, with the key it gave")
            use = SourceUse(role=role, purpose=clean_text(used_for, 300, one_line=True), iteration=self.iteration())
            self._cited.append((source, use))
            return f"cited as {source.id} ({source.key}); it will be in the run's references"

        return cite_source


__all__ = ["CAS_ROLES", "LITERATURE_ROLES", "LabTools"]
