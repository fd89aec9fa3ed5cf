"""The lab's judgement at work, counted as the seed counts it (seed §5: 234 critiques over the 70
CritPt problems, 15 % of them on an established result, 60 % of those upheld; output tokens on
review and critique against the work itself, 37 % and 36 %). A pure function of the state and the
output tokens by role, so a user can see whether review actually bites with their model; every
lab run writes it into metrics.json (``details.judgement``) and the bench report pools it per
sweep group (``physlab.bench.judgement``)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from physlab.lab.state.models import ResearchState

REVIEW_ROLES = ("reviewer", "critic", "adjudicator")     # the seed's "review and critique"
WORK_ROLES = ("computer", "researcher")                   # the seed's "doing the work itself"


class Judgement(BaseModel):
    critiques_raised: int = Field(description="Critiques the senior critic filed.")
    on_established: int = Field(description="Of those, critiques of an established result (to the adjudicator).")
    share_on_established: float | None = Field(description="on_established / critiques_raised (seed: 15 %).")
    ruled: int = Field(description="Critiques of an established result the adjudicator ruled on (any source).")
    upheld: int
    dismissed: int
    needs_evidence: int = Field(description="Rulings that sent the result back for specific evidence.")
    share_upheld: float | None = Field(description="upheld / ruled (seed: 60 %).")
    to_planner: int = Field(description="Critiques of the strategy, coordination or a check (any source).")
    accepted: int
    declined: int
    rejected: int
    expired: int
    from_physicist: int = Field(description="Critiques the physicist filed (challenges, redirects).")
    stalls_escalated: int = Field(description="Hypotheses the loop controls escalated to the planner.")
    demotions: int = Field(description="Established results demoted (with their dependents).")
    review_output_tokens: int
    work_output_tokens: int
    output_tokens: int
    review_output_share: float | None = Field(description="Share of output tokens on review and critique "
                                                          "(reviewer, critic, adjudicator; seed: 37 %).")
    work_output_share: float | None = Field(description="Share on the work (computer, researcher; seed: 36 %).")


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def judgement(s: ResearchState, output_tokens: Mapping[str, int]) -> Judgement:
    """``output_tokens``: output tokens by role over the whole run."""
    critic = [c for c in s.critiques if c.source == "critic"]
    on_er = [c for c in critic if c.target_type == "ER"]
    ruled = [c for c in s.critiques if c.target_type == "ER" and c.status in ("upheld", "dismissed", "needs_evidence")
             and not c.ruling.endswith("was already demoted")]
    planner = [c for c in s.critiques if c.target_type != "ER"]
    review = sum(output_tokens.get(r, 0) for r in REVIEW_ROLES)
    work = sum(output_tokens.get(r, 0) for r in WORK_ROLES)
    total = sum(output_tokens.values())
    upheld = sum(c.status == "upheld" for c in ruled)
    return Judgement(
        critiques_raised=len(critic), on_established=len(on_er), share_on_established=_share(len(on_er), len(critic)),
        ruled=len(ruled), upheld=upheld, dismissed=sum(c.status == "dismissed" for c in ruled),
        needs_evidence=sum(c.status == "needs_evidence" for c in ruled), share_upheld=_share(upheld, len(ruled)),
        to_planner=len(planner), accepted=sum(c.status == "accepted" for c in planner),
        declined=sum(c.status == "declined" for c in planner), rejected=sum(c.status == "rejected" for c in planner),
        expired=sum(c.status == "expired" for c in s.critiques),
        from_physicist=sum(c.source == "human" for c in s.critiques),
        stalls_escalated=sum(c.source == "lab" and c.kind == "stall" for c in s.critiques),
        demotions=sum(e.status == "demoted" for e in s.ers),
        review_output_tokens=review, work_output_tokens=work, output_tokens=total,
        review_output_share=_share(review, total), work_output_share=_share(work, total))
