"""Readable Markdown renderings of a ResearchState (committed beside state.json every iteration).

RESEARCH_STATE.md ends with the lab's list of sources, marked verified: each passage a literature tool
showed, with its source id; the roles' words above it (and what a role said it used a passage for)
cannot open a Sources heading or write an entry (:mod:`physlab.lab.state.model_text`)."""

from __future__ import annotations

from physlab.lab.state.model_text import VERIFIED_LIST, inline_text, model_markdown
from physlab.lab.state.models import ResearchState
from physlab.tools.literature.models import format_reference


def _clip(text: str, n: int = 600) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else text[: n - 1] + "…"


def _item(text: str) -> str:
    """``text`` whole as the rest of a Markdown list item: its later lines indented to stay in it."""
    return "\n  ".join(line.rstrip() for line in (text or "").strip().splitlines())


def render_state(s: ResearchState) -> str:
    out = [f"# Research state — {s.problem_id or 'run'}", "",
           f"Iteration {s.iteration} · status **{s.status}**" + (f" ({s.stop_reason})" if s.stop_reason else ""), ""]
    out += _render_survey(s)
    out += [f"## Strategy (v{s.strategy_version})", "", s.strategy or "_none yet_", ""]
    if s.conventions:
        out += ["## Conventions", ""] + [f"- {c}" for c in s.conventions] + [""]
    if s.sanity_checks:
        out += ["## Sanity checks", ""] + [f"- **{c.id}** [{c.status}, {c.source}] {c.predicate}"
                                           + (f" — {_clip(c.rationale, 300)}" if c.rationale else "")
                                           for c in s.sanity_checks] + [""]
    out += _render_results(s)
    out += ["", "## Working hypotheses", ""]
    for w in s.whs:
        out.append(f"- **{w.id}** [{w.status}] {_clip(w.claim, 400)}"
                   + (f" — value `{_clip(w.value, 300)}`" if w.value else "")
                   + f" (evidence {', '.join(w.evidence)}"
                   + (f"; depends on {', '.join(w.depends_on)}" if w.depends_on else "") + ")")
    out += ["", "## Research questions", ""]
    out += [f"- **{r.id}** [{r.status}] {_clip(r.question, 400)}" for r in s.rqs] or ["_none_"]
    out += ["", "## Evidence", ""]
    for ev in s.evidence:
        out.append(f"- **{ev.id}** ({ev.role}, {ev.confidence}, on {ev.target}, it. {ev.iteration}): "
                   f"{_clip(ev.findings, 500)}")
    out += render_derivations(s)
    out += ["", "## Reviews", ""]
    # reviews and rulings whole: a check cut short ("…") could end before its verdict
    out += [f"- **{r.id}** {r.wh}: {r.verdict} — {_item(r.reasoning)}" for r in s.reviews] or ["_none_"]
    out += ["", "## Critiques", ""]
    out += [f"- **{c.id}** ({c.source}, {c.severity}, {c.target_type}{' ' + c.target if c.target else ''}, {c.kind}) "
            f"[{c.status}] {_clip(c.text, 400)}" + (f" — ruling: {_item(c.ruling)}" if c.ruling else "")
            + (f" — evidence asked for: {_clip(c.scope, 300)}" if c.scope else "")
            for c in s.critiques] or ["_none_"]
    if s.dead_ends:
        out += ["", "## Dead ends", ""] + [f"- **{d.id}** {_clip(d.description, 400)}" for d in s.dead_ends]
    if s.notes:
        out += ["", "## Research notes", ""] + [f"- **{n.id}** {_clip(n.text, 400)}" for n in s.notes]
    if s.human_messages:
        out += ["", "## Messages from the physicist", ""]
        out += [f"- **{h.id}** {h.kind}{' on ' + h.on if h.on else ''} (it. {h.received_iteration}, "
                f"→ {h.routed_to}): {_clip(h.text, 400)}" for h in s.human_messages]
    out += ["", "## Dispatch history", ""]
    out += [f"- it. {d.iteration} {d.id}: {d.role} on {d.target} → {d.evidence or d.outcome or 'pending'}"
            for d in s.dispatches] or ["_none_"]
    return model_markdown("\n".join(out), note=NOT_CHECKED) + "\n" + "\n".join(render_sources(s))


def _render_survey(s: ResearchState) -> list[str]:
    """The surveyor's background, its lists, and the answer's expected structure (none: nothing)."""
    if not s.survey:
        return []
    out = ["## Background survey", "", _clip(s.survey.background, 1500), ""]
    for title, items in (("Key insights", s.survey.key_insights), ("Known methods", s.survey.known_methods),
                         ("Known pitfalls", s.survey.known_pitfalls)):
        if items:
            out += [f"**{title}**", ""] + [f"- {_clip(i, 400)}" for i in items] + [""]
    if s.survey.expected_answer_structure:
        out += ["**Expected structure of the answer**", "", _clip(s.survey.expected_answer_structure, 800), ""]
    return out


def _render_results(s: ResearchState) -> list[str]:
    """The established results, each with its value, evidence, review and what demoted it."""
    out = ["## Established results", ""]
    for e in s.ers:
        out.append(f"- **{e.id}** [{e.status}] from {e.wh}: {_clip(e.claim, 400)}")
        if e.value:
            out.append(f"  - value: `{_clip(e.value, 800)}`")
        out.append(f"  - evidence: {', '.join(e.evidence)}; review {e.review}"
                   + (f"; depends on {', '.join(e.depends_on)}" if e.depends_on else ""))
        if e.demotion_reason:
            out.append(f"  - demoted: {_clip(e.demotion_reason, 400)}")
        if e.obsolete:
            out.append(f"  - obsolete: {_clip(e.obsolete, 300)}")
    if not s.ers:
        out.append("_none yet_")
    return out


SOURCES_HEADING = "## Sources (verified)"
NOT_CHECKED = ("*(written by a role: not checked against what the literature tools showed; the verified "
               "sources are listed at the end)*")


def render_sources(s: ResearchState) -> list[str]:
    """The lab's list of the literature its roles cited (each passage really shown by a tool), last in
    the file: each entry with its source id (as in state.json), the passage on one line, and each use
    on its own line, in the role's words escaped."""
    if not s.sources:
        return []
    out = ["", SOURCES_HEADING, "", VERIFIED_LIST, ""]
    for n, src in enumerate(s.sources, 1):
        out.append(f"- **[{n}]** `{src.id}` {format_reference(src)}")
        out.append(f"  - passage: “{_clip(' '.join(src.passage.split()), 500)}”")
        out += [f"  - used by the {u.role} (it. {u.iteration})" + (f": {inline_text(u.purpose, 300)}" if u.purpose.strip()
                                                                     else "") for u in src.uses]
    return out + [""]


def render_derivations(s: ResearchState) -> list[str]:
    """The researchers' derivations, each whole (Markdown with LaTeX, as written) under the evidence
    it backs: the physics a reader checks, which the one-line findings above only summarise."""
    found = [ev for ev in s.evidence if ev.derivation.strip()]
    if not found:
        return []
    out = ["", "## Derivations"]
    for ev in found:
        out += ["", f"### {ev.id} — {ev.role} on {ev.target} ({ev.confidence}, iteration {ev.iteration})", "",
                f"**Findings.** {ev.findings.strip()}", ""]
        if ev.method.strip():
            out += [f"**Method.** {ev.method.strip()}", ""]
        out.append(ev.derivation.strip())
        if ev.checks:
            out += ["", "**Checks.**", ""] + [f"- {c}" for c in ev.checks]
    return out


def render_log(s: ResearchState, last: int | None = None) -> str:
    events = s.events[-last:] if last else s.events
    return "# Event log\n\n" + "\n".join(f"- it. {e.iteration} [{e.kind}] {e.text}" for e in events) + "\n"
