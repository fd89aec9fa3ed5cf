"""The lab's checks and balances, in code: what must hold before the research may complete and
what a final answer may rest on. Pure functions of the state: the engine enforces them, the
orchestrator is shown them (``<completion-gates>``), docs/lab.md lists them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from physlab.lab.routing import route_of
from physlab.lab.state.models import Critique, ResearchState, WorkingHypothesis
from physlab.lab.state.transitions import pending_reviews

SHOWN = 6    # undecided hypotheses named one per line among the blockers; the older ones by id


def needs_audit(s: ResearchState) -> bool:
    """The established results changed (a promotion or a demotion) since the critic's last audit."""
    return s.er_changes != s.er_changes_audited


def completion_blockers(s: ResearchState, *, audit: bool = True) -> list[str]:
    """Why the research may not complete now (empty: it may). With ``audit=False`` the missing
    audit is left out: the engine runs the critic itself when that is all that is missing."""
    out: list[str] = []
    if not s.active_ers():
        out.append("nothing is established yet")
    if pending := pending_reviews(s):
        out.append(f"{', '.join(pending)} await{'s' if len(pending) == 1 else ''} review")
    for c in s.open_critiques():
        out.append(f"{c.id} ({c.target or c.target_type}) is open: the {route_of(c)} has not resolved it")
    if opened := [r.id for r in s.rqs if r.status == "open"]:
        out.append(f"{', '.join(opened)} still open: close each as answered or dropped")
    unresolved = unresolved_hypotheses(s)
    older, newest = unresolved[:-SHOWN], unresolved[-SHOWN:]
    if older:          # bounded: a long run can leave many undecided claims behind
        ids = [w.id for w in older]
        out.append(f"{len(ids)} more hypotheses are neither established nor abandoned: "
                   + ", ".join(ids[-20:]) + (", ..." if len(ids) > 20 else ""))
    for w in newest:
        value = f" (value {w.value.strip()[:120]})" if w.value.strip() else ""
        out.append(f"{w.id}{value} is {w.status}, neither established nor abandoned: a competing claim left "
                   f"standing; settle it with new evidence or abandon it (abandon_hypothesis, with the reason)")
    if audit and needs_audit(s):
        out.append("the senior critic has not audited the results since they last changed "
                   "(it is run before the formatter)")
    return out


def in_play(s: ResearchState) -> list[WorkingHypothesis]:
    """Hypotheses neither established nor abandoned: physics-intern's working hypotheses."""
    return [w for w in s.whs if w.status not in ("established", "abandoned")]


def paper_completion_blockers(s: ResearchState) -> list[str]:
    """physics-intern's completion gates (control/validation.py ``can_terminate``): a critic pass
    once something passed review, every question closed, and every hypothesis established or
    abandoned — a refuted one too. Nothing else: it needs no established result and no closed
    critique (its critiques are routed in the iteration they are filed)."""
    out: list[str] = []
    if s.audits == 0 and any(r.verdict == "VERIFIED" for r in s.reviews):
        out.append("no critic pass has occurred yet (one runs after every VERIFIED review)")
    out += [f"{r.id} is still open: close it (answered or dropped) before completing" for r in s.rqs
            if r.status == "open"]
    for w in in_play(s):
        if w.status == "verified":
            out.append(f"{w.id} is VERIFIED but not promoted: it builds on {', '.join(unestablished(s, w.depends_on))};"
                       f" establish that or abandon {w.id} (abandon_hypothesis)")
        else:
            out.append(f"{w.id} has no VERIFIED review ({w.status}): settle it with new evidence or abandon it "
                       "(abandon_hypothesis)")
    return out


def unestablished(s: ResearchState, ids: Iterable[str]) -> list[str]:
    """The ids among ``ids`` (ER-n or WH-n) that are not established now, each with its status."""
    out = []
    for i in ids:
        e, w = s.er(i), s.wh(i)
        if e is not None and e.status != "active":
            out.append(f"{i} (demoted)")
        elif w is not None and not s.is_established(i):
            out.append(f"{i} ({w.status})")
        elif e is None and w is None:
            out.append(f"{i} (unknown)")
    return out


def unresolved_hypotheses(s: ResearchState) -> list[WorkingHypothesis]:
    """Hypotheses that were reviewed and neither established nor given up: verified but waiting on
    what they build on, inconclusive, demoted. Each is a claim the lab has not decided; completing
    beside it would answer while a competing value may be the right one (upstream blocks on every
    working hypothesis too). A refuted one has a verdict against it; one awaiting review is
    counted among the pending reviews."""
    return [w for w in s.whs if w.status in ("verified", "inconclusive", "demoted")]


def stalled(s: ResearchState, limit: int) -> dict[str, int]:
    """Hypotheses still in play whose last ``limit`` verdicts or more were all short of VERIFIED (a
    demotion counts as one): id -> how many in a row. More of the same evidence will not decide
    them (upstream's ``stall_recompute_limit``)."""
    if limit <= 0:
        return {}
    out: dict[str, int] = {}
    demotions = {e.wh: e.iteration for e in s.ers if e.status == "demoted"}
    for w in s.whs:
        if w.status in ("established", "abandoned", "verified"):
            continue
        run = 0
        for rid in reversed(w.reviews):
            r = next((x for x in s.reviews if x.id == rid), None)
            if r is None or r.verdict == "VERIFIED":
                break
            run += 1
        if w.id in demotions and w.status in ("demoted", "proposed", "inconclusive", "refuted"):
            run += 1
        if run >= limit:
            out[w.id] = run
    return out


def cites_sanity_checks(c: Critique, s: ResearchState) -> list[str]:
    """The sanity checks a critique invokes: those it names (SC-n), or every active one when it is
    filed as a sanity-check critique without naming one. The adjudicator may not dismiss such a
    critique on theory alone (upstream's sanity-check rule)."""
    active = [x.id for x in s.sanity_checks if x.status == "active"]
    named = [i for i in dict.fromkeys(re.findall(r"\bSC-\d+\b", c.text)) if i in active]
    if named:
        return named
    return active if c.kind == "sanity_check" else []


def forced_sources(s: ResearchState, ids: Iterable[str]) -> list[str]:
    """The ids among ``ids`` a forced answer may rest on: an ER (active or demoted), or a
    hypothesis that was reviewed and neither refuted nor abandoned. Anything else is nothing to
    rest on."""
    out = []
    for i in dict.fromkeys(ids):
        if s.er(i) is not None:
            out.append(i)
        elif (w := s.wh(i)) is not None and w.reviews and w.status not in ("refuted", "abandoned"):
            out.append(i)
    return out
