"""ResearchState: everything the lab knows, persisted as state.json after every iteration.

Ids are ``PREFIX-N`` with a per-prefix counter that only grows, so an id is never reused (a
demoted result keeps its id; re-establishing the claim creates a new ER id). Because evidence
ids grow too, "new evidence" for a hypothesis is simply evidence numbered above the mark set at
its last verdict.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from physlab.tools.literature.models import Source

Confidence = Literal["exact", "approximate", "partial"]
ReviewVerdict = Literal["VERIFIED", "REFUTED", "INCONCLUSIVE"]
CritiqueTarget = Literal["ER", "strategy", "coordination", "sanity_check"]
WorkerRole = Literal["researcher", "computer"]
HumanKind = Literal["comment", "hint", "challenge", "redirect", "pause", "stop"]
RQStatus = Literal["open", "answered", "dropped"]

PREFIXES = {"RQ", "EV", "WH", "RV", "ER", "DE", "NT", "CR", "SC", "HM", "DS"}


class SurveyCheck(BaseModel):
    predicate: str = Field(description="A pass/fail statement any candidate answer must satisfy, testable by "
                                       "evaluating the answer (e.g. 'F(0) = 1').")
    rationale: str = Field(default="", description="Why it must hold: the symmetry, limit, bound, dimension or "
                                                   "counting argument, independent of any model of the answer.")


class Survey(BaseModel):
    background: str = Field(default="", description="What the problem asks, restated precisely in its own "
                                                    "notation: system, quantity wanted, inputs, regime.")
    key_insights: list[str] = Field(default_factory=list, description="Structural facts any correct answer "
                                                                      "must reflect.")
    known_methods: list[str] = Field(default_factory=list, description="Techniques that can produce the answer, "
                                                                       "each with when it is reliable.")
    known_pitfalls: list[str] = Field(default_factory=list, description="Mistakes typically made on this kind "
                                                                        "of problem, specifically.")
    conventions: list[str] = Field(default_factory=list, description="Symbols and their meanings, units, signs, "
                                                                     "normalisations and orderings the problem fixes.")
    sanity_checks: list[SurveyCheck] = Field(default_factory=list,
                                             description="Model-independent checks any candidate answer must pass.")
    expected_answer_structure: str = Field(default="", description="The form and richness the answer must have "
                                                                   "(exact or approximate, which variables, how many "
                                                                   "independent pieces), never its value.")


class SanityCheck(BaseModel):
    id: str
    predicate: str = Field(description="A testable pass/fail statement about the final answer.")
    status: Literal["active", "retired"] = "active"
    rationale: str = ""
    source: Literal["surveyor", "planner"] = "planner"


class ResearchQuestion(BaseModel):
    id: str
    question: str
    rationale: str = ""
    status: RQStatus = "open"
    iteration: int = 0


class Script(BaseModel):
    """One script a worker ran in the sandbox, as it ran, with what it really printed."""

    code: str
    output: str = ""
    language: str = Field(default="python", description="python, form, cadabra2, maxima or wolfram "
                                                        "(physlab.tools.cas.LANGUAGES).")


class SourceUse(BaseModel):
    """Who relied on a source, for what, when."""

    role: str
    purpose: str = Field(default="", description="What the role used the passage for, in its words.")
    iteration: int = 0


class CitedSource(Source):
    """A passage of the literature a role relied on (a literature tool really showed it in this
    run), with every use made of it: the run's references."""

    uses: list[SourceUse] = Field(default_factory=list)


class Evidence(BaseModel):
    id: str
    target: str = Field(description="The RQ or WH this evidence answers.")
    role: WorkerRole
    findings: str
    method: str = ""
    derivation: str = Field(default="", description="The researcher's derivation, Markdown with LaTeX.")
    checks: list[str] = Field(default_factory=list, description="Routine checks the worker made, with outcomes.")
    confidence: Confidence = "partial"
    approach: str = ""
    code: str = ""
    output: str = ""
    scripts: list[Script] = Field(default_factory=list, description="Every script the computer ran, in order "
                                                                    "(bounded: the first and the newest when many).")
    iteration: int = 0


class Review(BaseModel):
    id: str
    wh: str
    verdict: ReviewVerdict
    reasoning: str = ""
    iteration: int = 0


WHStatus = Literal["proposed", "verified", "refuted", "inconclusive", "established", "demoted", "abandoned"]
# proposed: awaiting review. verified: passed review, waits for its dependencies to be established.
# refuted / inconclusive / demoted (lost its ER to an upheld critique): reviewed again only with
# new evidence. abandoned: refuted too often; a dead end, never reviewed again.


class WorkingHypothesis(BaseModel):
    id: str
    claim: str
    value: str = Field(default="", description="The concrete value/expression claimed.")
    evidence: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list, description="WH ids this claim builds on.")
    status: WHStatus = "proposed"
    reviews: list[str] = Field(default_factory=list)
    er: str | None = Field(default=None, description="The active ER holding this claim, if any.")
    evidence_mark: int = Field(default=0, description="EV counter at the last verdict on this claim "
                                                      "(review or demotion): only evidence above it is new.")
    iteration: int = 0


class EstablishedResult(BaseModel):
    id: str
    wh: str
    claim: str
    value: str = ""
    evidence: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list, description="WH ids (all established while active).")
    review: str
    status: Literal["active", "demoted"] = "active"
    demotion_reason: str = ""
    obsolete: str = Field(default="", description="Why the planner flagged it superseded or no longer central "
                                                  "(it stays established); empty when it is not.")
    iteration: int = 0


class DeadEnd(BaseModel):
    id: str
    description: str
    related: list[str] = Field(default_factory=list)
    iteration: int = 0


class Note(BaseModel):
    id: str
    text: str
    iteration: int = 0


CritiqueStatus = Literal["open", "upheld", "dismissed", "needs_evidence", "accepted", "declined", "rejected",
                         "expired"]
# Adjudicator (ER critiques): upheld (the ER is demoted), dismissed, needs_evidence (a soft demotion
# with a scope of investigation). Planner (the others): accepted, declined (right but not worth
# acting on), rejected (wrong, with a counter-argument). expired: low or medium severity, left
# unresolved for ``critique_expiry`` iterations.
Severity = Literal["HIGH", "MEDIUM", "LOW"]
CritiqueSource = Literal["critic", "human", "lab"]


class Critique(BaseModel):
    id: str
    target_type: CritiqueTarget
    target: str | None = Field(default=None, description="ER id when target_type is ER.")
    kind: str = Field(default="general", description="e.g. coherence, staleness, missing_validation, termination.")
    text: str
    source: CritiqueSource = Field(default="critic", description="lab: filed by the loop controls (a stalled "
                                                                "hypothesis).")
    severity: Severity = "MEDIUM"
    test: str = Field(default="", description="How to test whether the objection holds.")
    status: CritiqueStatus = "open"
    ruling: str = ""
    scope: str = Field(default="", description="needs_evidence: the evidence that would settle it.")
    iteration: int = 0
    resolved_iteration: int | None = None


class Dispatch(BaseModel):
    id: str
    iteration: int
    role: WorkerRole
    target: str
    task: str
    evidence: str | None = None
    outcome: str = ""


class HumanMessage(BaseModel):
    id: str
    kind: HumanKind
    text: str = ""
    on: str | None = None
    received_iteration: int = 0
    routed_to: str = ""
    critique: str | None = None


class CleanAudit(BaseModel):
    """An audit of the senior critic that filed nothing: what it checked."""

    iteration: int
    assessment: str = ""


class SystemEvent(BaseModel):
    iteration: int
    kind: str
    text: str


RunStatus = Literal["running", "paused", "stopped", "complete", "partially_complete", "no_answer", "error"]

Standing = Literal["established", "verified", "inconclusive", "demoted"]


class BestAnswer(BaseModel):
    """The answer the run would give if it ended now, kept at every iteration boundary: the newest
    established result nothing else builds on, else the strongest reviewed hypothesis."""

    iteration: int
    source: str = Field(description="The ER-n or WH-n it comes from.")
    wh: str
    standing: Standing
    claim: str
    value: str = ""
    rests_on: list[str] = Field(default_factory=list, description="WH ids it depends on.")


class ResearchState(BaseModel):
    schema_version: int = 2
    problem_id: str = ""
    iteration: int = 0
    status: RunStatus = "running"
    counters: dict[str, int] = Field(default_factory=dict)
    survey: Survey | None = None
    strategy: str = ""
    strategy_version: int = 0
    conventions: list[str] = Field(default_factory=list)
    sanity_checks: list[SanityCheck] = Field(default_factory=list)
    rqs: list[ResearchQuestion] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    whs: list[WorkingHypothesis] = Field(default_factory=list)
    reviews: list[Review] = Field(default_factory=list)
    ers: list[EstablishedResult] = Field(default_factory=list)
    dead_ends: list[DeadEnd] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)
    critiques: list[Critique] = Field(default_factory=list)
    dispatches: list[Dispatch] = Field(default_factory=list)
    human_messages: list[HumanMessage] = Field(default_factory=list)
    events: list[SystemEvent] = Field(default_factory=list)
    sources: list[CitedSource] = Field(default_factory=list, description="The literature the roles cited, in "
                                                                         "order of first use.")
    inbox_consumed: list[str] = Field(default_factory=list, description="Inbox message ids already taken in.")
    completion_requested: bool = False
    answer_results: list[str] = Field(default_factory=list, description="The ERs the orchestrator named as making "
                                                                        "up the answer at its last completion.")
    refused_completions: int = Field(default=0, description="Completions refused in a row (the circuit breaker).")
    planner_seen_rulings: list[str] = Field(default_factory=list, description="Demoting rulings (CR ids) the "
                                                                              "planner has been consulted on.")
    er_changes: int = Field(default=0, description="Promotions and demotions so far.")
    er_changes_audited: int = Field(default=0, description="er_changes at the senior critic's last audit.")
    audits: int = Field(default=0, description="Audits the senior critic made so far.")
    clean_audits: list[CleanAudit] = Field(default_factory=list, description="Audits that filed no critique, with "
                                                                           "what the critic checked.")
    last_audit_iteration: int = Field(default=0, description="The iteration of the critic's last audit (0: none).")
    format_bounces: int = Field(default=0, description="Completions the formatter sent back.")
    best_answer: BestAnswer | None = None
    seen_evidence: int = Field(default=0, description="Evidence already shown to the orchestrator.")
    seen_reviews: int = Field(default=0, description="Reviews already shown to the orchestrator.")
    seen_events: int = Field(default=0, description="Events already shown to the orchestrator.")
    seen_humans: int = Field(default=0, description="Human messages already shown to the orchestrator.")
    final_answer_code: str | None = None
    final_answer_text: str | None = None
    stop_reason: str = ""

    # ---- lookups (read-only helpers) ----
    def find(self, id_: str) -> Any:
        """The entry with this id, its own model whatever its kind (a WorkingHypothesis, an
        EstablishedResult, ...; None: no such id)."""
        for coll in (self.rqs, self.evidence, self.whs, self.reviews, self.ers, self.dead_ends,
                     self.notes, self.critiques, self.sanity_checks, self.human_messages,
                     self.dispatches):
            for item in coll:
                if item.id == id_:
                    return item
        return None

    def wh(self, id_: str) -> WorkingHypothesis | None:
        return next((w for w in self.whs if w.id == id_), None)

    def er(self, id_: str) -> EstablishedResult | None:
        return next((e for e in self.ers if e.id == id_), None)

    def rq(self, id_: str) -> ResearchQuestion | None:
        return next((r for r in self.rqs if r.id == id_), None)

    def critique(self, id_: str) -> Critique | None:
        return next((c for c in self.critiques if c.id == id_), None)

    def active_ers(self) -> list[EstablishedResult]:
        return [e for e in self.ers if e.status == "active"]

    def is_established(self, wh_id: str) -> bool:
        w = self.wh(wh_id)
        return bool(w and w.status == "established" and w.er and (e := self.er(w.er)) and e.status == "active")

    def open_critiques(self) -> list[Critique]:
        return [c for c in self.critiques if c.status == "open"]

    def refutations(self, wh_id: str) -> int:
        return sum(r.wh == wh_id and r.verdict == "REFUTED" for r in self.reviews)

    def ev_number(self, ev_id: str) -> int:
        return int(ev_id.rsplit("-", 1)[1])
