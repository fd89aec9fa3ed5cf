"""physics-intern's post-integration checks (control/validation.py), as pure functions of the
state: after each orchestrator turn, a VERIFIED label in a hypothesis's claim next to an id that no
VERIFIED review backs is replaced by ``[unverified]``, and an ``[unverified]`` label next to an id
that has since passed review becomes VERIFIED again. What changed is reported to the orchestrator.

Upstream's other checks have nothing to find in PhysLab's state: an established result always
holds its VERIFIED review (no REFUTED one to demote it for), and ids are never removed (no critique
can point at a vanished target)."""

from __future__ import annotations

import re

from physlab.lab.state.models import ResearchState

_ID = re.compile(r"\b(?:WH|ER)-\d+\b")


def backed(s: ResearchState) -> set[str]:
    """The WH and ER ids a VERIFIED review stands behind (an ER's hypothesis too)."""
    ids = {r.wh for r in s.reviews if r.verdict == "VERIFIED"}
    ids |= {e.id for e in s.ers if e.wh in ids}
    return ids


def check(state: ResearchState) -> tuple[ResearchState, list[str]]:
    """The state with its labels put right, and one line per change (empty: nothing to do)."""
    ok = backed(state)
    found: list[str] = []
    whs = []
    for w in state.whs:
        lines = []
        for line in w.claim.splitlines():
            ids = _ID.findall(line)
            if ids and "VERIFIED" in line and not any(i in ok for i in ids):
                line = line.replace("VERIFIED", "[unverified]")
                found.append(f"{w.id}: a VERIFIED label beside {', '.join(ids)}, which no review verified, "
                             "was replaced by [unverified]")
            elif ids and "[unverified]" in line.lower() and any(i in ok for i in ids):
                line = re.sub(r"\[unverified\]", "VERIFIED", line, flags=re.I)
                found.append(f"{w.id}: an [unverified] label beside {', '.join(ids)}, now verified, became VERIFIED")
            lines.append(line)
        claim = "\n".join(lines)
        whs.append(w if claim == w.claim else w.model_copy(update={"claim": claim}))
    if not found:
        return state, []
    return state.model_copy(update={"whs": whs}), found
