"""The answer the lab would give if it stopped now, and how established it is.

``best_answer`` is recomputed at every iteration boundary and committed with it (state.json and a
provisional ANSWER.md), so a run killed anywhere leaves an answer that says what it rests on.
The final ANSWER.md opens with the same kind of standing, computed here from the state and never
taken from a model's word. Its reference list is the lab's alone: marked verified, each entry with
the source id of a passage a literature tool showed; model text (the formatter's Markdown, claims,
what a role said it used a source for) can open no reference heading and write no entry.
"""

from __future__ import annotations

from collections.abc import Iterable

from physlab.lab.state.model_text import VERIFIED_LIST, inline_text, model_markdown
from physlab.lab.state.models import BestAnswer, ResearchState, WorkingHypothesis
from physlab.tools.literature.models import format_reference

# A hypothesis that is not established, ranked: passed review (waits for what it builds on),
# review undecided, was established and lost it to an upheld critique.
_RANK = {"verified": 3, "inconclusive": 2, "demoted": 1}


def _num(id_: str) -> int:
    return int(id_.rsplit("-", 1)[1])


def standing_of_hypothesis(s: ResearchState, w: WorkingHypothesis) -> str | None:
    """How a reviewed hypothesis that is not established stands (None: it is not a candidate). One
    awaiting a re-review with new evidence stands as its last verdict left it."""
    if w.status in _RANK:
        return w.status if w.reviews else None
    if w.status != "proposed" or not w.reviews:
        return None
    if any(e.wh == w.id and e.status == "demoted" for e in s.ers):
        return "demoted"
    last = next((r.verdict for r in s.reviews if r.id == w.reviews[-1]), None)
    return {"VERIFIED": "verified", "INCONCLUSIVE": "inconclusive"}.get(last or "")


def best_hypotheses(s: ResearchState, n: int = 5) -> list[WorkingHypothesis]:
    """The strongest reviewed hypotheses that are not established, best first."""
    cands = [(w, st) for w in s.whs if (st := standing_of_hypothesis(s, w)) is not None]
    ranked = sorted(cands, key=lambda x: (_RANK[x[1]], x[0].status != "proposed", bool(x[0].value), _num(x[0].id)),
                    reverse=True)
    return [w for w, _ in ranked[:n]]


def best_answer(s: ResearchState) -> BestAnswer | None:
    """The newest established result nothing else builds on (preferring one with a value), else
    the strongest reviewed hypothesis, else None."""
    ers = s.active_ers()
    if ers:
        built_on = {d for e in ers for d in e.depends_on}
        leaves = [e for e in ers if e.wh not in built_on] or ers
        e = max(leaves, key=lambda e: (bool(e.value), _num(e.id)))
        return BestAnswer(iteration=s.iteration, source=e.id, wh=e.wh, standing="established", claim=e.claim,
                          value=e.value, rests_on=list(e.depends_on))
    for w in best_hypotheses(s, 1):
        return BestAnswer(iteration=s.iteration, source=w.id, wh=w.id,
                          standing=standing_of_hypothesis(s, w),  # type: ignore[arg-type]
                          claim=w.claim, value=w.value, rests_on=list(w.depends_on))
    return None


def _dep(s: ResearchState, wh_id: str) -> str:
    w = s.wh(wh_id)
    if s.is_established(wh_id):
        return f"{wh_id} (established as {w.er})"
    return f"{wh_id} ({w.status if w else 'unknown'}, not established)"


def standing_of(s: ResearchState, id_: str) -> str:
    """One line: how established the claim behind ``id_`` (ER-n or WH-n) is, and why."""
    e = s.er(id_)
    w = s.wh(e.wh if e else id_)
    if w is None:
        return f"{id_}: unknown"
    deps = f"; it builds on {', '.join(_dep(s, d) for d in w.depends_on)}" if w.depends_on else ""
    last = next((r for r in reversed(s.reviews) if r.wh == w.id), None)
    if e is not None and e.status == "active":
        return f"{e.id} (from {w.id}): established — reviewed VERIFIED ({e.review}){deps}"
    if s.is_established(w.id):
        return f"{id_} (from {w.id}): established as {w.er}{deps}"
    demoted = next((x for x in reversed(s.ers) if x.wh == w.id and x.status == "demoted"), None)
    why = {"verified": f"passed review ({last.id if last else '?'}) but what it builds on is not established",
           "inconclusive": f"the reviewer found the evidence insufficient ({last.id if last else '?'})",
           "demoted": f"was established as {demoted.id if demoted else '?'}, then demoted: "
                      f"{(demoted.demotion_reason if demoted else '')[:300]}",
           "proposed": "awaiting review", "refuted": f"refuted ({last.id if last else '?'})",
           "abandoned": "abandoned as a dead end"}.get(w.status, w.status)
    return f"{id_}{f' (from {w.id})' if e else ''}: NOT established — {why}{deps}"


def standing_text(s: ResearchState, best: BestAnswer) -> str:
    audit = ("The senior critic has audited the results since they last changed." if s.er_changes == s.er_changes_audited
             else "The senior critic has not yet audited the results since they last changed.")
    value = f"\nvalue: {best.value}" if best.value else ""
    return f"{best.claim}{value}\n{standing_of(s, best.source)}.\n{audit}"


REFERENCES_HEADING = "## References (verified)"


def references_markdown(s: ResearchState) -> str:
    """The literature the run's roles cited (each passage really shown by a tool), as a numbered
    reference list, marked verified, each entry with its source id (as in state.json) and what each
    role used it for; '' when nothing was cited."""
    if not s.sources:
        return ""
    lines = [REFERENCES_HEADING, "", VERIFIED_LIST, ""]
    for n, src in enumerate(s.sources, 1):
        uses = "; ".join(dict.fromkeys(f"{u.role} ({inline_text(u.purpose, 200)})" if u.purpose.strip() else u.role
                                       for u in src.uses))
        passage = " ".join(src.passage.split())
        lines.append(f"[{n}] `{src.id}` {format_reference(src)}")
        lines.append(f"   > “{passage[:400]}{'…' if len(passage) > 400 else ''}”")
        if uses:  # a paragraph of its own: a role's words never run on inside the quoted passage
            lines += ["", f"   used by: {uses}"]
        lines.append("")
    return "\n".join(lines)


def provisional_markdown(s: ResearchState, best: BestAnswer, *, note: str = "") -> str:
    """ANSWER.md while the run is going (or after it stopped without a final answer)."""
    lines = [f"# Provisional answer (iteration {best.iteration})", "",
             note or "The research is still running; this is what the lab would answer if it stopped now.", "",
             f"**{best.claim}**", ""]
    if best.value:
        lines += ["```", best.value, "```", ""]
    lines += [f"Standing: {standing_of(s, best.source)}.", ""]
    others = [e for e in s.active_ers() if e.id != best.source]
    if others:
        lines += ["Other established results:", ""] + [f"- {e.id}: {e.claim[:300]}" for e in others] + [""]
    refs = references_markdown(s)
    return model_markdown("\n".join(lines)) + ("\n" + refs if refs else "")


def final_markdown(s: ResearchState, body: str, *, sources: Iterable[str], complete: bool, reason: str = "") -> str:
    """The formatter's answer under a standing header computed from the state."""
    ids = list(dict.fromkeys(sources))
    if complete:
        head = ("> **Standing: complete.** Every result this answer rests on is established (passed adversarial "
                "review, dependencies established) and the senior critic audited them with no critique left open.")
    else:
        head = (f"> **Standing: partial** — the run ended ({reason or 'stopped'}) before the research was complete. "
                "Read each source's standing below.")
    if not ids and s.best_answer is not None:
        ids = [s.best_answer.source]
    lines = [head, ">"] + [f"> - {standing_of(s, i)}" for i in ids]
    refs = references_markdown(s)
    return model_markdown("\n".join(lines) + "\n\n" + body.strip()) + "\n" + ("\n" + refs if refs else "")


def fallback_markdown(s: ResearchState, best: BestAnswer, reason: str) -> str:
    """The final answer when even the forced formatter failed: the best current answer as recorded."""
    body = (f"**{best.claim}**\n\n" + (f"```\n{best.value}\n```\n\n" if best.value else "")
            + "The formatter could not write the answer; this is the lab's best current answer as recorded.")
    return final_markdown(s, body, sources=[best.source], complete=False, reason=reason)
