"""Invariants of a ResearchState. ``check`` returns the list of violations (empty when sound), one
small check per kind of entry, in a fixed order: ids first, then what each entry points at and
what its status promises."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from physlab.lab.state.models import ResearchState

_ID = re.compile(r"^([A-Z]{2})-(\d+)$")

# Whether an id (None: no reference) names an entry of the state.
Exists = Callable[[str | None], bool]


def check(s: ResearchState) -> list[str]:
    bad, seen = _ids(s)

    def exists(i: str | None) -> bool:
        return i is None or i in seen

    for part in (_evidence, _hypotheses, _results, _audits, _reviews, _critiques, _dead_ends, _references):
        bad += part(s, exists)
    return bad


def _ids(s: ResearchState) -> tuple[list[str], set[str]]:
    """Every id well formed, under its own prefix, unique and within its counter (ids are never reused)."""
    bad: list[str] = []
    seen: set[str] = set()
    colls: dict[str, Sequence[Any]] = {"RQ": s.rqs, "EV": s.evidence, "WH": s.whs, "RV": s.reviews, "ER": s.ers,
                                       "DE": s.dead_ends, "NT": s.notes, "CR": s.critiques, "SC": s.sanity_checks,
                                       "HM": s.human_messages, "DS": s.dispatches}
    for prefix, coll in colls.items():
        for item in coll:
            m = _ID.match(item.id)
            if not m or m.group(1) != prefix:
                bad.append(f"malformed id {item.id!r} in {prefix}")
                continue
            if item.id in seen:
                bad.append(f"duplicate id {item.id}")
            seen.add(item.id)
            if int(m.group(2)) > s.counters.get(prefix, 0):
                bad.append(f"{item.id} beyond counter {s.counters.get(prefix, 0)} (ids could be reused)")
    return bad, seen


def _evidence(s: ResearchState, exists: Exists) -> list[str]:
    return [f"{ev.id} targets missing {ev.target}" for ev in s.evidence if not exists(ev.target)]


def _hypotheses(s: ResearchState, exists: Exists) -> list[str]:
    """A working hypothesis is established exactly when an active ER of its own says so; abandoned
    with a dead end saying why."""
    bad: list[str] = []
    for w in s.whs:
        bad += [f"{w.id} references missing {ref}" for ref in [*w.evidence, *w.depends_on, *w.reviews, w.er]
                if not exists(ref)]
        if w.status == "established":
            er = s.er(w.er) if w.er else None
            if er is None or er.status != "active" or er.wh != w.id:
                bad.append(f"{w.id} established without an active ER of its own")
        elif w.er is not None:
            bad.append(f"{w.id} is {w.status} but points at {w.er}")
        if w.status == "abandoned" and not any(w.id in d.related for d in s.dead_ends):
            bad.append(f"{w.id} abandoned without a dead end saying why")
        if w.evidence_mark > s.counters.get("EV", 0):
            bad.append(f"{w.id} evidence mark beyond the EV counter")
    return bad


def _results(s: ResearchState, exists: Exists) -> list[str]:
    """An established result passed review; an active one is its hypothesis's one, on established
    dependencies; a demoted one says why."""
    bad: list[str] = []
    active_by_wh: dict[str, str] = {}
    for e in s.ers:
        bad += [f"{e.id} references missing {ref}" for ref in [e.wh, e.review, *e.evidence, *e.depends_on]
                if not exists(ref)]
        rv = next((r for r in s.reviews if r.id == e.review), None)
        if rv is None or rv.verdict != "VERIFIED" or rv.wh != e.wh:
            bad.append(f"{e.id} did not pass review")
        if e.status != "active":
            if not e.demotion_reason:
                bad.append(f"{e.id} demoted without a reason")
            continue
        if e.wh in active_by_wh:
            bad.append(f"{e.wh} has two active ERs ({active_by_wh[e.wh]}, {e.id})")
        active_by_wh[e.wh] = e.id
        owner = s.wh(e.wh)
        if owner is None or owner.er != e.id or owner.status != "established":
            bad.append(f"{e.id} active but {e.wh} does not point at it")
        unmet = [d for d in e.depends_on if not s.is_established(d)]
        if unmet:
            bad.append(f"{e.id} active but its dependencies {unmet} are not established")
    return bad


def _audits(s: ResearchState, exists: Exists) -> list[str]:
    if s.er_changes_audited > s.er_changes:
        return ["the critic audited more result changes than happened"]
    return []


def _reviews(s: ResearchState, exists: Exists) -> list[str]:
    return [f"{r.id} reviews missing {r.wh}" for r in s.reviews if not exists(r.wh)]


def _critiques(s: ResearchState, exists: Exists) -> list[str]:
    """A critique targets what exists; one that needs evidence says which; one upheld (or needing
    evidence) has demoted the result it targets."""
    bad: list[str] = []
    for c in s.critiques:
        if c.target_type == "ER" and (c.target is None or s.er(c.target) is None):
            bad.append(f"{c.id} targets missing ER {c.target}")
        elif not exists(c.target):
            bad.append(f"{c.id} targets missing {c.target}")
        if c.status == "needs_evidence" and not c.scope.strip():
            bad.append(f"{c.id} needs evidence without saying which")
        er = s.er(c.target) if c.target_type == "ER" and c.target is not None else None
        if c.status in ("upheld", "needs_evidence") and er is not None and er.status == "active":
            bad.append(f"{c.id} is {c.status} but {c.target} is still active")
    return bad


def _dead_ends(s: ResearchState, exists: Exists) -> list[str]:
    return [f"{d.id} references missing {ref}" for d in s.dead_ends for ref in d.related if not exists(ref)]


def _references(s: ResearchState, exists: Exists) -> list[str]:
    """The dispatches' and the human messages' references."""
    bad = [f"{ds.id} references a missing id" for ds in s.dispatches
           if not exists(ds.target) or not exists(ds.evidence)]
    return bad + [f"{h.id} references a missing id" for h in s.human_messages
                  if not exists(h.on) or not exists(h.critique)]


def assert_sound(s: ResearchState) -> None:
    problems = check(s)
    if problems:
        raise AssertionError("ResearchState invariants violated: " + "; ".join(problems))
