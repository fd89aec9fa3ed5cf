"""Pure transitions on ResearchState: each takes a state and returns a NEW state (the input is
never mutated), or raises TransitionError and leaves nothing changed. The engine turns a
TransitionError from model-supplied arguments into a corrective message; tests check that the
invariants (``invariants.check``) hold after every transition.

Lifecycle: RQ -> evidence -> WH -> review -> ER (VERIFIED and every dependency established).
Backwards: an upheld critique demotes an ER; its WH becomes ``demoted`` and is reviewed again only
with new evidence (evidence a worker returns on it is attached and sent to review automatically).
Every ER that builds on it is demoted with it; their hypotheses keep their VERIFIED review and are
promoted again (under new ER ids) once what they rest on is established again. A hypothesis
refuted ``abandon_after`` times is abandoned: a dead end, with the reviewer's reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar, get_args

from physlab.lab.state.models import (
    BestAnswer,
    CitedSource,
    CleanAudit,
    Confidence,
    Critique,
    CritiqueSource,
    CritiqueStatus,
    CritiqueTarget,
    DeadEnd,
    Dispatch,
    EstablishedResult,
    Evidence,
    HumanKind,
    HumanMessage,
    Note,
    ResearchQuestion,
    ResearchState,
    Review,
    ReviewVerdict,
    RQStatus,
    RunStatus,
    SanityCheck,
    Script,
    Severity,
    SourceUse,
    Survey,
    SystemEvent,
    WHStatus,
    WorkerRole,
    WorkingHypothesis,
)
from physlab.tools.literature.models import Source


class TransitionError(ValueError):
    """A transition was asked for something impossible (unknown id, wrong status, ...)."""


_Item = TypeVar("_Item")


def _found(item: _Item | None, msg: str) -> _Item:
    """A lookup's result, or the TransitionError saying what was not found."""
    if item is None:
        raise TransitionError(msg)
    return item


def _copy(state: ResearchState) -> ResearchState:
    # A JSON round trip through pydantic-core is ~3x faster than copy.deepcopy of the models.
    return ResearchState.model_validate_json(state.model_dump_json())


def _new_id(s: ResearchState, prefix: str) -> str:
    n = s.counters.get(prefix, 0) + 1
    s.counters[prefix] = n
    return f"{prefix}-{n}"


def _event(s: ResearchState, kind: str, text: str) -> None:
    s.events.append(SystemEvent(iteration=s.iteration, kind=kind, text=text))


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise TransitionError(msg)


_Choice = TypeVar("_Choice", bound=str)


def _one_of(value: str, allowed: tuple[_Choice, ...], msg: str) -> _Choice:
    """``value`` as the one of ``allowed`` it is (typed so), or the TransitionError ``msg``."""
    for choice in allowed:
        if value == choice:
            return choice
    raise TransitionError(msg)


_RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
_RQ_CLOSED: tuple[RQStatus, ...] = ("answered", "dropped")
_HUMAN_KINDS: tuple[HumanKind, ...] = get_args(HumanKind)
_AFTER_REVIEW: dict[str, WHStatus] = {"VERIFIED": "verified", "REFUTED": "refuted", "INCONCLUSIVE": "inconclusive"}
_RULED: dict[str, CritiqueStatus] = {"uphold": "upheld", "dismiss": "dismissed", "needs_evidence": "needs_evidence"}
_ANSWERED: dict[str, CritiqueStatus] = {"accept": "accepted", "decline": "declined", "dismiss": "rejected"}


def _known(s: ResearchState, ids: Iterable[str], kinds: tuple[str, ...], what: str) -> None:
    for i in ids:
        _need(isinstance(i, str) and i.split("-")[0] in kinds and s.find(i) is not None,
              f"unknown {what} id {i!r}")


# ---------------------------------------------------------------- setup
def begin_iteration(state: ResearchState) -> ResearchState:
    s = _copy(state)
    s.iteration += 1
    return s


def set_survey(state: ResearchState, survey: Survey) -> ResearchState:
    """The survey, and what it seeds: its conventions (when the lab has none yet) and its
    model-independent sanity checks (SC-n, source ``surveyor``), which the planner may retire."""
    s = _copy(state)
    s.survey = survey.model_copy(deep=True)
    if not s.conventions:
        s.conventions = [c.strip() for c in survey.conventions if c.strip()]
    known = {c.predicate for c in s.sanity_checks}
    for chk in survey.sanity_checks:
        if chk.predicate.strip() and chk.predicate.strip() not in known:
            s.sanity_checks.append(SanityCheck(id=_new_id(s, "SC"), predicate=chk.predicate.strip(),
                                               rationale=chk.rationale.strip(), source="surveyor"))
            known.add(chk.predicate.strip())
    return s


def set_strategy(state: ResearchState, strategy: str, *, add_checks: Iterable[str] = (),
                 retire_checks: Iterable[str] = (), conventions: Iterable[str] | None = None
                 ) -> tuple[ResearchState, list[str]]:
    s = _copy(state)
    _need(bool(strategy.strip()), "the strategy is empty")
    retire = list(dict.fromkeys(retire_checks))
    for cid in retire:
        sc = _found(next((c for c in s.sanity_checks if c.id == cid), None), f"unknown sanity check id {cid!r}")
        sc.status = "retired"
    new_ids = []
    active = {c.predicate for c in s.sanity_checks if c.status == "active"}
    for pred in add_checks:
        if pred.strip() and pred.strip() not in active:     # the same check twice is one check
            sid = _new_id(s, "SC")
            s.sanity_checks.append(SanityCheck(id=sid, predicate=pred.strip()))
            new_ids.append(sid)
    if conventions is not None:
        s.conventions = [c for c in conventions if c.strip()]
    s.strategy = strategy.strip()
    s.strategy_version += 1
    _event(s, "strategy", f"strategy v{s.strategy_version} set" +
           (f"; checks added {', '.join(new_ids)}" if new_ids else "") +
           (f"; retired {', '.join(retire)}" if retire else ""))
    return s, new_ids


# ---------------------------------------------------------------- questions and evidence
def create_rq(state: ResearchState, question: str, rationale: str = "") -> tuple[ResearchState, str]:
    _need(bool(question.strip()), "the research question is empty")
    s = _copy(state)
    rid = _new_id(s, "RQ")
    s.rqs.append(ResearchQuestion(id=rid, question=question.strip(), rationale=rationale,
                                  iteration=s.iteration))
    return s, rid


def close_rq(state: ResearchState, rq_id: str, status: str = "answered") -> ResearchState:
    s = _copy(state)
    rq = _found(s.rq(rq_id), f"unknown research question id {rq_id!r}")
    rq.status = _one_of(status, _RQ_CLOSED, f"status must be answered or dropped, not {status!r}")
    return s


def record_dispatch(state: ResearchState, role: WorkerRole, target: str, task: str
                    ) -> tuple[ResearchState, str]:
    s = _copy(state)
    _known(s, [target], ("RQ", "WH"), "dispatch target")
    did = _new_id(s, "DS")
    s.dispatches.append(Dispatch(id=did, iteration=s.iteration, role=role, target=target, task=task))
    return s, did


def add_evidence(state: ResearchState, *, target: str, role: WorkerRole, findings: str,
                 method: str = "", derivation: str = "", checks: Iterable[str] = (),
                 confidence: Confidence = "partial", approach: str = "",
                 code: str = "", output: str = "", scripts: Iterable[Script] = (), dispatch: str | None = None,
                 drop_refuted: bool = False) -> tuple[ResearchState, str]:
    """Record a worker's evidence. Evidence on a hypothesis that is not established is attached
    to it and sends it (back) to review: a refuted, inconclusive or demoted claim is re-reviewed
    exactly when something new arrives for it, and never without. ``drop_refuted``: on a refuted
    hypothesis, the evidence its refutation judged is detached and the new evidence replaces it
    (physics-intern's evidence store; the items stay in the record)."""
    s = _copy(state)
    _known(s, [target], ("RQ", "WH"), "evidence target")
    eid = _new_id(s, "EV")
    s.evidence.append(Evidence(id=eid, target=target, role=role, findings=findings, method=method,
                               derivation=derivation, checks=[c for c in checks if c.strip()],
                               confidence=confidence, approach=approach, code=code, output=output,
                               scripts=[x.model_copy() for x in scripts], iteration=s.iteration))
    if dispatch is not None:
        d = _found(next((d for d in s.dispatches if d.id == dispatch), None), f"unknown dispatch id {dispatch!r}")
        d.evidence = eid
        d.outcome = "evidence"
    w = s.wh(target)
    if w is not None and w.status in ("established", "abandoned"):
        _event(s, "evidence", f"{eid} on {w.id} recorded; {w.id} is {w.status}"
               + (f" ({w.er}) and its review stands" if w.er else " and is not reviewed again"))
    elif w is not None:
        if drop_refuted and w.status == "refuted":
            judged = [e for e in w.evidence if s.ev_number(e) <= w.evidence_mark]
            if judged:
                w.evidence = [e for e in w.evidence if e not in judged]
                _event(s, "evidence", f"{', '.join(judged)} detached from {w.id}: refuted, replaced by {eid}")
        w.evidence.append(eid)
        if w.status != "proposed":
            _event(s, "wh", f"{eid} attached to {w.id} (was {w.status}); {w.id} goes back to review")
        w.status = "proposed"
    return s, eid


def dispatch_failed(state: ResearchState, dispatch: str, reason: str) -> ResearchState:
    s = _copy(state)
    d = _found(next((d for d in s.dispatches if d.id == dispatch), None), f"unknown dispatch id {dispatch!r}")
    d.outcome = f"failed: {reason}"[:500]
    _event(s, "worker_failed", f"{d.role} on {d.target} produced no evidence: {reason}"[:500])
    return s


# ---------------------------------------------------------------- hypotheses, review, promotion
def propose_wh(state: ResearchState, *, claim: str, value: str = "", evidence: Iterable[str] = (),
               depends_on: Iterable[str] = ()) -> tuple[ResearchState, str]:
    s = _copy(state)
    ev, deps = list(dict.fromkeys(evidence)), list(dict.fromkeys(depends_on))
    _need(bool(claim.strip()), "the hypothesis claim is empty")
    _need(bool(ev), "a working hypothesis must rest on at least one evidence id (EV-n)")
    _known(s, ev, ("EV",), "evidence")
    _known(s, deps, ("WH",), "dependency (WH)")
    dead = [d for d in deps if _found(s.wh(d), f"unknown dependency (WH) {d!r}").status == "abandoned"]
    _need(not dead, f"{', '.join(dead)} is abandoned (a dead end); nothing can build on it")
    wid = _new_id(s, "WH")
    s.whs.append(WorkingHypothesis(id=wid, claim=claim.strip(), value=value, evidence=ev,
                                   depends_on=deps, iteration=s.iteration))
    _event(s, "wh", f"{wid} proposed (review pending)")
    return s, wid


def new_evidence(s: ResearchState, w: WorkingHypothesis, ids: Iterable[str]) -> list[str]:
    """The ids among ``ids`` that arrived after the last verdict on ``w``."""
    return [i for i in ids if s.ev_number(i) > w.evidence_mark and i not in w.evidence]


def revise_wh(state: ResearchState, wh_id: str, *, claim: str | None = None, value: str | None = None,
              add_evidence: Iterable[str] = ()) -> ResearchState:
    """Restate a hypothesis and/or attach evidence; it goes (back) to review. A claim that already
    had a verdict (verified, refuted, inconclusive, demoted) is reviewed again only with evidence
    newer than that verdict: the same evidence would get the same verdict."""
    s = _copy(state)
    w = _found(s.wh(wh_id), f"unknown working hypothesis id {wh_id!r}")
    _need(w.status != "established", f"{wh_id} is established ({w.er}); it can only be challenged")
    _need(w.status != "abandoned", f"{wh_id} was abandoned as a dead end; propose a new hypothesis instead")
    ev = list(dict.fromkeys(add_evidence))
    _known(s, ev, ("EV",), "evidence")
    fresh = new_evidence(s, w, ev)
    if w.status != "proposed":
        _need(bool(fresh), f"{wh_id} is {w.status} and has no evidence newer than its last verdict "
                           f"(evidence after EV-{w.evidence_mark}); dispatch a worker on {wh_id} for new evidence first")
    changed = bool(claim and claim.strip() != w.claim) or bool(value and value != w.value)
    if claim and claim.strip():
        w.claim = claim.strip()
    if value:
        w.value = value
    w.evidence = list(dict.fromkeys(w.evidence + ev))
    w.status = "proposed"
    if changed:       # what builds on the old statement was verified against it: check it again
        for other in s.whs:
            if wh_id in other.depends_on and other.status == "verified":
                other.status = "proposed"
                _event(s, "wh", f"{other.id} goes back to review: {wh_id}, which it builds on, was restated")
    _event(s, "wh", f"{wh_id} revised (review pending)")
    return s


def pending_reviews(state: ResearchState) -> list[str]:
    return [w.id for w in state.whs if w.status == "proposed"]


def record_review(state: ResearchState, wh_id: str, verdict: ReviewVerdict, reasoning: str = "", *,
                  abandon_after: int = 2) -> tuple[ResearchState, str]:
    s = _copy(state)
    w = _found(s.wh(wh_id), f"unknown working hypothesis id {wh_id!r}")
    _need(w.status == "proposed", f"{wh_id} is {w.status}, not awaiting review")
    _need(verdict in ("VERIFIED", "REFUTED", "INCONCLUSIVE"), f"bad verdict {verdict!r}")
    rid = _new_id(s, "RV")
    s.reviews.append(Review(id=rid, wh=wh_id, verdict=verdict, reasoning=reasoning, iteration=s.iteration))
    w.reviews.append(rid)
    w.evidence_mark = s.counters.get("EV", 0)
    w.status = _AFTER_REVIEW[verdict]
    _event(s, "review", f"{wh_id}: {verdict}")
    n = s.refutations(wh_id)
    if verdict == "REFUTED" and n >= abandon_after:
        w.status = "abandoned"
        did = _new_id(s, "DE")
        s.dead_ends.append(DeadEnd(id=did, related=[wh_id], iteration=s.iteration, description=(
            f"{wh_id} abandoned after {n} refutations ({', '.join(r for r in w.reviews)}): {w.claim}. "
            f"Last reason: {reasoning.strip() or 'none given'}")[:1500]))
        _event(s, "abandoned", f"{wh_id} refuted {n} times: abandoned as a dead end ({did})")
    return settle(s), rid


def settle(state: ResearchState) -> ResearchState:
    """Bring the ERs in line with their dependencies, to a fixpoint: an active ER whose dependency
    is no longer established is demoted (its hypothesis keeps its VERIFIED review and waits), and
    every VERIFIED hypothesis whose dependencies are all established is promoted to a new ER.
    Dependencies name earlier hypotheses only, so this terminates."""
    s = _copy(state)
    changed = True
    while changed:
        changed = False
        for e in s.ers:
            if e.status != "active":
                continue
            lost = [d for d in e.depends_on if not s.is_established(d)]
            if lost:
                w = _found(s.wh(e.wh), f"{e.id} is the result of no hypothesis")
                e.status = "demoted"
                e.demotion_reason = (f"it builds on {', '.join(lost)}, which is no longer established; "
                                     f"{w.id} keeps its review and is promoted again once "
                                     f"{'they are' if len(lost) > 1 else 'it is'} re-established")
                w.status, w.er = "verified", None
                s.er_changes += 1
                _event(s, "demotion", f"{e.id} demoted with {', '.join(lost)}: {e.demotion_reason}"[:600])
                changed = True
        for w in s.whs:
            if w.status == "verified" and all(s.is_established(d) for d in w.depends_on):
                eid = _new_id(s, "ER")
                s.ers.append(EstablishedResult(id=eid, wh=w.id, claim=w.claim, value=w.value,
                                               evidence=list(w.evidence), depends_on=list(w.depends_on),
                                               review=w.reviews[-1], iteration=s.iteration))
                w.status, w.er = "established", eid
                s.er_changes += 1
                _event(s, "promotion", f"{w.id} promoted to {eid}")
                changed = True
    return s


def demote_er(state: ResearchState, er_id: str, reason: str) -> ResearchState:
    s = _copy(state)
    e = _found(s.er(er_id), f"unknown established result id {er_id!r}")
    _need(e.status == "active", f"{er_id} is already demoted")
    e.status, e.demotion_reason = "demoted", reason
    w = _found(s.wh(e.wh), f"{er_id} is the result of no hypothesis")
    w.status, w.er = "demoted", None
    w.evidence_mark = s.counters.get("EV", 0)
    s.er_changes += 1
    _event(s, "demotion", f"{er_id} demoted; {w.id} is a working hypothesis again and is reviewed again "
                          f"only with new evidence: {reason}"[:600])
    return settle(s)


def abandon_wh(state: ResearchState, wh_id: str, reason: str, *, by: str) -> tuple[ResearchState, str]:
    """Give a hypothesis up (the orchestrator, the planner or the circuit breaker ``by``): a dead
    end saying why, and nothing more is built on it. What builds on it is abandoned with it, since
    it could never be established. An established one can only be challenged."""
    s = _copy(state)
    w = _found(s.wh(wh_id), f"unknown working hypothesis id {wh_id!r}")
    _need(w.status != "established", f"{wh_id} is established ({w.er}); challenge it instead of abandoning it")
    _need(w.status != "abandoned", f"{wh_id} is already abandoned")
    _need(bool(reason.strip()), "say why the hypothesis is abandoned")
    gone = [wh_id]
    for other in s.whs:            # dependencies name earlier hypotheses: one pass in order suffices
        if other.status not in ("established", "abandoned") and set(other.depends_on) & set(gone):
            gone.append(other.id)
    for wid in gone:
        _found(s.wh(wid), wid).status = "abandoned"
    did = _new_id(s, "DE")
    dependents = f"; {', '.join(gone[1:])} built on it and {'were' if len(gone) > 2 else 'was'} abandoned too" \
        if len(gone) > 1 else ""
    s.dead_ends.append(DeadEnd(id=did, related=gone, iteration=s.iteration, description=(
        f"{wh_id} abandoned by the {by}: {w.claim}. Reason: {reason.strip()}{dependents}")[:1500]))
    _event(s, "abandoned", f"{', '.join(gone)} abandoned by the {by} ({did}): {reason.strip()}"[:600])
    return s, did


def mark_obsolete(state: ResearchState, er_id: str, reason: str) -> ResearchState:
    """The planner flags an active ER superseded or no longer central: it stays established and
    keeps satisfying what builds on it; the roles that read it are told to give it less weight."""
    s = _copy(state)
    e = _found(s.er(er_id), f"unknown established result id {er_id!r}")
    _need(e.status == "active", f"{er_id} is demoted; only an active result can be marked obsolete")
    e.obsolete = reason.strip() or "superseded"
    _event(s, "obsolete", f"{er_id} marked obsolete by the planner: {e.obsolete}"[:600])
    return s


# ---------------------------------------------------------------- critiques
def file_critique(state: ResearchState, *, target_type: CritiqueTarget, text: str, target: str | None = None,
                  kind: str = "general", source: CritiqueSource = "critic", severity: Severity = "MEDIUM",
                  test: str = "") -> tuple[ResearchState, str]:
    s = _copy(state)
    _need(target_type in ("ER", "strategy", "coordination", "sanity_check"), f"bad target_type {target_type!r}")
    _need(bool(text.strip()), "the critique text is empty")
    if target_type == "ER":
        er = _found(s.er(target) if target is not None else None, f"unknown established result id {target!r}")
        _need(er.status == "active", f"{target} is not an active established result")
    elif target is not None:
        target = target if s.find(target) is not None else None
    _need(severity in ("HIGH", "MEDIUM", "LOW"), f"bad severity {severity!r}")
    cid = _new_id(s, "CR")
    s.critiques.append(Critique(id=cid, target_type=target_type, target=target, kind=kind, text=text.strip(),
                                source=source, severity=severity, test=test.strip(),
                                iteration=s.iteration))
    _event(s, "critique", f"{cid} ({source}, {severity}) on {target or target_type}: {text.strip()}"[:600])
    return s, cid


def rule_on_critique(state: ResearchState, cr_id: str, decision: str | bool, ruling: str,
                     scope: str = "", *, abandon: bool = False) -> ResearchState:
    """The adjudicator's ruling on a critique of an ER. ``uphold``: the critique is right, the ER is
    demoted. ``dismiss``: the ER stands. ``needs_evidence``: the record cannot settle it; the ER is
    demoted softly with ``scope``, the evidence that would settle it, which its hypothesis needs
    before it is reviewed again (and which the workers sent on it are shown). (A bool is the
    earlier two-way ruling: True upholds, False dismisses.) ``abandon``: an upheld critique also
    abandons the result's hypothesis and what builds on it (physics-intern's "valid" ruling)."""
    if isinstance(decision, bool):
        decision = "uphold" if decision else "dismiss"
    s = _copy(state)
    c = _found(s.critique(cr_id), f"unknown critique id {cr_id!r}")
    _need(c.target_type == "ER" and c.status == "open", f"{cr_id} is not an open critique of an ER")
    _need(decision in ("uphold", "dismiss", "needs_evidence"), f"bad ruling {decision!r}")
    _need(decision != "needs_evidence" or bool(scope.strip()), "a needs_evidence ruling must state its scope")
    c.status = _RULED[decision]
    c.ruling, c.resolved_iteration = ruling, s.iteration
    c.scope = scope.strip() if decision == "needs_evidence" else ""
    _event(s, "ruling", f"{cr_id} {c.status} by the adjudicator: {ruling}"
           + (f" Evidence needed: {c.scope}" if c.scope else "")[:600])
    if decision != "dismiss":
        er = _found(s.er(c.target) if c.target is not None else None, f"{cr_id} targets no established result")
        if er.status == "active":
            why = f"{cr_id} upheld: {ruling}" if decision == "uphold" else f"{cr_id} needs evidence: {c.scope}"
            s = demote_er(s, er.id, why)
            if abandon and decision == "uphold":
                s, _ = abandon_wh(s, er.wh, why, by="adjudicator")
    return s


def respond_to_critique(state: ResearchState, cr_id: str, verdict: str | bool, response: str) -> ResearchState:
    """The planner's answer to a strategy/coordination/sanity-check critique: ``accept`` (and revise),
    ``decline`` (right, but not worth acting on) or ``dismiss`` (wrong, with a counter-argument).
    (A bool is the earlier two-way answer: True accepts, False dismisses.)"""
    if isinstance(verdict, bool):
        verdict = "accept" if verdict else "dismiss"
    s = _copy(state)
    c = _found(s.critique(cr_id), f"unknown critique id {cr_id!r}")
    _need(c.target_type != "ER" and c.status == "open", f"{cr_id} is not an open planner critique")
    _need(verdict in ("accept", "decline", "dismiss"), f"bad verdict {verdict!r}")
    c.status = _ANSWERED[verdict]
    c.ruling, c.resolved_iteration = response, s.iteration
    _event(s, "planner", f"{cr_id} {c.status} by the planner: {response}"[:600])
    return s


def expire_critiques(state: ResearchState, after: int) -> ResearchState:
    """Open critiques of MEDIUM or LOW severity filed ``after`` iterations ago or more are closed as
    expired (0: never): the run must not stay blocked on a minor point nobody resolved. A HIGH one
    never expires."""
    if after <= 0:
        return state
    old = [c.id for c in state.critiques
           if c.status == "open" and c.severity != "HIGH" and state.iteration - c.iteration >= after]
    if not old:
        return state
    s = _copy(state)
    for cid in old:
        c = _found(s.critique(cid), cid)
        c.status, c.resolved_iteration = "expired", s.iteration
        c.ruling = f"expired: unresolved for {s.iteration - c.iteration} iterations ({c.severity} severity)"
    _event(s, "expired", f"{', '.join(old)} expired after {after}+ iterations unresolved")
    return s


def dismiss_stale_critique(state: ResearchState, cr_id: str, reason: str) -> ResearchState:
    """Close an ER critique whose target was demoted meanwhile (nothing left to rule on)."""
    s = _copy(state)
    c = _found(s.critique(cr_id), f"{cr_id} is not open")
    _need(c.status == "open", f"{cr_id} is not open")
    c.status, c.ruling, c.resolved_iteration = "dismissed", reason, s.iteration
    return s


def consult_planner(state: ResearchState, rulings: Iterable[str]) -> ResearchState:
    """The planner has been shown these demoting rulings (CR ids)."""
    s = _copy(state)
    s.planner_seen_rulings = list(dict.fromkeys([*s.planner_seen_rulings, *rulings]))
    return s


# ---------------------------------------------------------------- notes, dead ends, humans, end
def add_note(state: ResearchState, text: str) -> tuple[ResearchState, str]:
    _need(bool(text.strip()), "the note is empty")
    s = _copy(state)
    nid = _new_id(s, "NT")
    s.notes.append(Note(id=nid, text=text.strip(), iteration=s.iteration))
    return s, nid


def add_dead_end(state: ResearchState, description: str, related: Iterable[str] = ()) -> tuple[ResearchState, str]:
    _need(bool(description.strip()), "the dead end description is empty")
    s = _copy(state)
    rel = list(dict.fromkeys(related))
    _known(s, rel, tuple(["RQ", "WH", "EV", "ER", "CR"]), "related")
    did = _new_id(s, "DE")
    s.dead_ends.append(DeadEnd(id=did, description=description.strip(), related=rel, iteration=s.iteration))
    return s, did


def receive_human(state: ResearchState, *, kind: str, text: str, on: str | None, inbox_id: str
                  ) -> tuple[ResearchState, str]:
    """Take in one human message (idempotent on the inbox id). Challenges of an ER and redirects
    become critiques (routed like the critic's); the rest are shown to the orchestrator."""
    s = _copy(state)
    human_kind = _one_of(kind, _HUMAN_KINDS, f"bad message kind {kind!r}")
    _need(inbox_id not in s.inbox_consumed, f"inbox message {inbox_id} already received")
    s.inbox_consumed.append(inbox_id)
    hid = _new_id(s, "HM")
    if on is not None and s.find(on) is None:
        _event(s, "human", f"{hid}: unknown target {on!r}; shown to the orchestrator as a comment")
        on = None
    msg = HumanMessage(id=hid, kind=human_kind, text=text, on=on, received_iteration=s.iteration)
    s.human_messages.append(msg)
    if kind == "challenge" and on and on.startswith("ER-") and _found(s.er(on), on).status == "active":
        s, cid = file_critique(s, target_type="ER", target=on, text=text, kind="human_challenge", source="human")
        m = s.human_messages[-1]
        m.routed_to, m.critique = "adjudicator", cid
    elif kind in ("redirect", "challenge"):
        s, cid = file_critique(s, target_type="strategy", target=on, text=text, kind="human_redirect", source="human")
        m = s.human_messages[-1]
        m.routed_to, m.critique = "planner", cid
    elif kind in ("pause", "stop"):
        s.human_messages[-1].routed_to = "engine"
    else:
        s.human_messages[-1].routed_to = "orchestrator"
    _event(s, "human", f"{hid} {kind}{' on ' + on if on else ''}: {text}"[:600])
    return s, hid


def request_completion(state: ResearchState, answer_results: Iterable[str] = ()) -> ResearchState:
    """The orchestrator declares the research complete, naming the ERs that make up the answer
    (those that are not active ERs are left out)."""
    s = _copy(state)
    s.completion_requested = True
    s.answer_results = [i for i in dict.fromkeys(answer_results) if (e := s.er(i)) is not None and e.status == "active"]
    _event(s, "completion", "the orchestrator declared the research complete"
           + (f" (the answer: {', '.join(s.answer_results)})" if s.answer_results else ""))
    return s


def refuse_completion(state: ResearchState, blockers: list[str]) -> ResearchState:
    """The completion gates did not pass: the orchestrator is told why at its next turn."""
    s = _copy(state)
    s.completion_requested = False
    s.refused_completions += 1
    _event(s, "completion_refused", "completion refused: " + "; ".join(blockers)[:900])
    return s


def bounce_completion(state: ResearchState, reason: str) -> ResearchState:
    s = _copy(state)
    s.completion_requested = False
    s.format_bounces += 1
    s.refused_completions += 1
    _event(s, "formatter_bounce", f"the formatter cannot fill the template from the ERs: {reason}"[:600])
    return s


def turn_without_completion(state: ResearchState) -> ResearchState:
    """An orchestrator turn that did not ask to complete: completions are no longer refused in a row."""
    if state.refused_completions == 0:
        return state
    s = _copy(state)
    s.refused_completions = 0
    return s


def break_circuit(state: ResearchState, unresolved: Iterable[str], *, drop_questions: bool = True) -> ResearchState:
    """The circuit breaker: completion was refused again and again while the orchestrator left the
    same things standing. The hypotheses in ``unresolved`` (neither established nor given up) are
    abandoned and the open questions dropped, each on the record, so completion can be judged on
    what is established."""
    s = _copy(state)
    n = s.refused_completions
    for wid in unresolved:
        if (w := s.wh(wid)) is not None and w.status not in ("established", "abandoned"):
            s, _ = abandon_wh(s, wid, f"circuit breaker: completion refused {n} times in a row while it stayed "
                                      f"{w.status}", by="lab")
    dropped = [r.id for r in s.rqs if r.status == "open"] if drop_questions else []
    for rid in dropped:
        _found(s.rq(rid), rid).status = "dropped"
    s.refused_completions = 0
    _event(s, "circuit_breaker", f"completion refused {n} times in a row: unresolved hypotheses abandoned"
           + (f", {', '.join(dropped)} dropped" if dropped else ""))
    return s


def escalate_stalls(state: ResearchState, stalled: dict[str, int]) -> ResearchState:
    """A hypothesis whose last verdicts were all short of VERIFIED (``stalled``: id -> how many) is
    escalated once to the planner, as a critique of the coordination filed by the lab: more of the
    same evidence will not decide it."""
    s = state
    for wid, n in stalled.items():
        if any(c.source == "lab" and c.kind == "stall" and c.target == wid for c in s.critiques):
            continue
        w = _found(s.wh(wid), f"unknown working hypothesis id {wid!r}")
        s, _ = file_critique(s, target_type="coordination", target=wid, kind="stall", source="lab", severity="HIGH",
                             text=f"{wid} has had {n} verdicts in a row short of VERIFIED ({w.status} now): "
                                  f"{w.claim}"[:800],
                             test="Decide whether an independent route (another worker, another method) can settle "
                                  f"it, or abandon {wid} (entity_actions) if its premise is wrong.")
    return s


def record_audit(state: ResearchState, clean: str | None = None) -> ResearchState:
    """The senior critic audited the results as they stand now; ``clean``: it filed nothing, and
    this is its assessment (kept, as physics-intern keeps its critic's clean reviews)."""
    s = _copy(state)
    if clean is not None:
        s.clean_audits.append(CleanAudit(iteration=s.iteration, assessment=clean.strip()))
    s.er_changes_audited = s.er_changes
    s.audits += 1
    s.last_audit_iteration = s.iteration
    return s


def cite_sources(state: ResearchState, cited: Iterable[tuple[Source, SourceUse]]) -> ResearchState:
    """Record the passages roles cited: a new source is appended (its id is derived from key and
    passage, so the same quote is one source), a known one gains the use (once)."""
    s = _copy(state)
    by_id = {x.id: x for x in s.sources}
    for source, use in cited:
        kept = by_id.get(source.id)
        if kept is None:
            kept = CitedSource(**source.model_dump())
            s.sources.append(kept)
            by_id[kept.id] = kept
            _event(s, "source", f"{kept.id} cited by the {use.role}: {kept.key}")
        if use not in kept.uses:
            kept.uses.append(use.model_copy())
    return s


def set_best_answer(state: ResearchState, best: BestAnswer | None) -> ResearchState:
    s = _copy(state)
    s.best_answer = best.model_copy(deep=True) if best is not None else None
    return s


def finish(state: ResearchState, status: str, *, answer_code: str | None, answer_text: str | None,
           reason: str = "") -> ResearchState:
    s = _copy(state)
    s.status = _one_of(status, _RUN_STATUSES, f"bad run status {status!r}")
    s.final_answer_code, s.final_answer_text, s.stop_reason = answer_code, answer_text, reason
    _event(s, "finish", f"run {status}{': ' + reason if reason else ''}")
    return s


def reopen(state: ResearchState, why: str) -> ResearchState:
    """A finished run goes on (e.g. the physicist challenged its result): its final answer no
    longer stands until the formatter writes a new one."""
    s = _copy(state)
    s.status, s.stop_reason, s.completion_requested = "running", "", False
    s.final_answer_code = s.final_answer_text = None
    _event(s, "reopened", why)
    return s


def set_status(state: ResearchState, status: str, reason: str = "") -> ResearchState:
    s = _copy(state)
    s.status, s.stop_reason = _one_of(status, _RUN_STATUSES, f"bad run status {status!r}"), reason
    return s


def system_event(state: ResearchState, kind: str, text: str) -> ResearchState:
    s = _copy(state)
    _event(s, kind, text)
    return s
