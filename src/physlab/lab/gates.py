"""The lab's checks and balances, in code: what must hold before the research may complete and
what a final answer may rest on. Pure functions of the state: the engine enforces them, the
orchestrator is shown them (``<completion-gates>``), docs/lab.md lists them."""

from __future__ import annotations

from typing import Iterable

from physlab.lab.routing import route_of
from physlab.lab.state.models import ResearchState
from physlab.lab.state.transitions import pending_reviews


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
    if audit and needs_audit(s):
        out.append("the senior critic has not audited the results since they last changed "
                   "(it is run before the formatter)")
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
