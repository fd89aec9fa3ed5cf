"""Fresh, per-role context assembled from the ResearchState (no conversation carries over).

Each ``for_<role>`` returns the user prompt for one call. Long histories are windowed so the
orchestrator's prompt stays bounded as a run grows: only the newest dispatches, events, notes,
closed questions and retired hypotheses are shown in full; older ones are counted, not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

from physlab.lab.state.models import Critique, EstablishedResult, Evidence, ResearchState, WorkingHypothesis
from physlab.problems.model import Problem


@dataclass(frozen=True)
class Windows:
    dispatches: int = 8
    events: int = 25
    notes: int = 12
    dead_ends: int = 12
    closed_rqs: int = 6
    old_whs: int = 6
    critiques: int = 10
    ers_full: int = 12          # newest active ERs shown in full; older ones as one clipped line
    ers_short: int = 20         # older ERs listed in short form (the rest by id only)
    open_rqs: int = 12          # newest open questions shown in full; older ones by id only
    humans: int = 8
    field_chars: int = 1500
    output_chars: int = 6000


def clip(text: str | None, n: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else text[: n // 2] + f"\n…[{len(text) - n} characters omitted]…\n" + text[-n // 2:]


def _tag(name: str, body: str) -> str:
    return f"<{name}>\n{body.strip() or '(none)'}\n</{name}>"


def problem_block(p: Problem) -> str:
    parts = [_tag("problem-statement", p.statement)]
    if p.answer_template:
        parts.append(_tag("answer-template", "```python\n" + p.answer_template.strip() + "\n```"))
    else:
        parts.append(_tag("answer-template", "No template: the answer is a Markdown write-up (ANSWER.md)."))
    parts.append(_tag("problem-guidelines",
                      "Give exact closed forms when possible (SymPy expressions). Keep the problem's "
                      "own notation and conventions."))
    return _tag("research-context", "\n".join(parts))


def survey_block(s: ResearchState, w: Windows) -> str:
    if not s.survey:
        return _tag("background-survey", "(no survey)")
    sv = s.survey
    return _tag("background-survey", "\n".join([
        _tag("background", clip(sv.background, w.field_chars)),
        _tag("key-insights", "\n".join(f"- {x}" for x in sv.key_insights)),
        _tag("known-methods", "\n".join(f"- {x}" for x in sv.known_methods)),
        _tag("known-pitfalls", "\n".join(f"- {x}" for x in sv.known_pitfalls)),
    ]))


def _checks(s: ResearchState) -> str:
    return "\n".join(f"{c.id}: {c.predicate}" for c in s.sanity_checks if c.status == "active")


def _er_line(e: EstablishedResult, w: Windows) -> str:
    flag = " [FLAGGED: a dependency is no longer established]" if e.flagged else ""
    deps = f" (depends on {', '.join(e.depends_on)})" if e.depends_on else ""
    val = f"\n  value: {clip(e.value, w.field_chars)}" if e.value else ""
    return f"{e.id} (from {e.wh}){flag}{deps}: {clip(e.claim, w.field_chars)}{val}"


def ers_block(s: ResearchState, w: Windows, *, window: bool = False) -> str:
    ers = s.active_ers()
    if not window or len(ers) <= w.ers_full:
        return _tag("established-results", "\n".join(_er_line(e, w) for e in ers))
    old, new = ers[: -w.ers_full], ers[-w.ers_full:]
    keep = [e for e in old if e.flagged]        # flagged results always in full: they need attention
    short = [e for e in old if not e.flagged]
    lines = [f"{e.id} (from {e.wh}): {clip(e.claim, 160)}" for e in short[-w.ers_short:]]
    if len(short) > w.ers_short:
        lines.insert(0, f"({len(short) - w.ers_short} older results not listed: "
                        f"{', '.join(e.id for e in short[:-w.ers_short])})")
    return _tag("established-results", "Older results (short form):\n" + "\n".join(lines) + "\n"
                + "\n".join(_er_line(e, w) for e in keep + new))


def _wh_line(h: WorkingHypothesis, w: Windows) -> str:
    deps = f"; depends on {', '.join(h.depends_on)}" if h.depends_on else ""
    val = f"\n  value: {clip(h.value, w.field_chars)}" if h.value else ""
    return f"{h.id} [{h.status}] (evidence {', '.join(h.evidence)}{deps}): {clip(h.claim, w.field_chars)}{val}"


def evidence_text(ev: Evidence, w: Windows, *, with_code: bool = True) -> str:
    parts = [f"{ev.id} by the {ev.role} on {ev.target} (confidence: {ev.confidence})",
             _tag("findings", clip(ev.findings, w.field_chars * 2))]
    if ev.method:
        parts.append(_tag("method", clip(ev.method, w.field_chars * 2)))
    if with_code and ev.code:
        parts.append(_tag("code", "```python\n" + clip(ev.code, w.output_chars * 2) + "\n```"))
    if with_code and ev.output:
        parts.append(_tag("output", clip(ev.output, w.output_chars)))
    return _tag("evidence", "\n".join(parts))


def research_state_block(s: ResearchState, w: Windows, *, full: bool = True) -> str:
    whs_live = [h for h in s.whs if h.status in ("proposed", "verified", "inconclusive", "demoted")]
    whs_old = [h for h in s.whs if h.status == "refuted"]
    rq_open = [r for r in s.rqs if r.status == "open"]
    rq_closed = [r for r in s.rqs if r.status != "open"]
    parts = [
        _tag("conventions", "\n".join(f"- {c}" for c in s.conventions)),
        _tag("strategy", s.strategy),
        _tag("sanity-checks", _checks(s)),
        ers_block(s, w, window=full),
        _tag("hypotheses", "\n".join(_wh_line(h, w) for h in whs_live)
             + ("\nRefuted (newest): " + "; ".join(f"{h.id}: {clip(h.claim, 200)}" for h in whs_old[-w.old_whs:])
                if whs_old else "")
             + (f"\n({len(whs_old) - w.old_whs} older refuted hypotheses not shown)" if len(whs_old) > w.old_whs else "")),
        _tag("research-questions", (f"Older open questions: {', '.join(r.id for r in rq_open[:-w.open_rqs])}\n"
                                    if len(rq_open) > w.open_rqs else "")
             + "\n".join(f"{r.id} [open]: {clip(r.question, 600)}" for r in rq_open[-w.open_rqs:])
             + "".join(f"\n{r.id} [{r.status}]: {clip(r.question, 200)}" for r in rq_closed[-w.closed_rqs:])
             + (f"\n({len(rq_closed) - w.closed_rqs} older closed questions not shown)" if len(rq_closed) > w.closed_rqs else "")),
    ]
    if full:
        parts += [
            _tag("dead-ends", "\n".join(f"{d.id}: {clip(d.description, 400)}" for d in s.dead_ends[-w.dead_ends:])),
            _tag("research-notes", "\n".join(f"{n.id}: {clip(n.text, 400)}" for n in s.notes[-w.notes:])
                 + (f"\n({len(s.notes) - w.notes} older notes not shown)" if len(s.notes) > w.notes else "")),
            _tag("dispatch-history", "\n".join(
                f"iteration {d.iteration}: {d.role} on {d.target} -> {d.evidence or d.outcome or 'pending'}"
                for d in s.dispatches[-w.dispatches:])
                + (f"\n({len(s.dispatches) - w.dispatches} older dispatches not shown)" if len(s.dispatches) > w.dispatches else "")),
        ]
    return _tag("research-state", "\n".join(parts))


# ------------------------------------------------------------------------ per-role prompts
def for_surveyor(p: Problem) -> str:
    return problem_block(p) + "\n\nSurvey the background for this problem and submit the survey."


def for_planner(p: Problem, s: ResearchState, critiques: list[Critique], w: Windows) -> str:
    crit = "\n".join(f"{c.id} ({c.source}, {c.target_type}, {c.kind}): {c.text}" for c in critiques)
    return "\n\n".join([problem_block(p), survey_block(s, w), research_state_block(s, w, full=False),
                        _tag("dead-ends", "\n".join(f"{d.id}: {clip(d.description, 300)}" for d in s.dead_ends[-w.dead_ends:])),
                        _tag("critiques-to-answer", crit),
                        "Lay out (or revise) the strategy and the sanity checks. Answer every critique "
                        "listed above by id (accept or reject, with a reason)."])


def for_orchestrator(p: Problem, s: ResearchState, w: Windows, *, new_evidence: list[Evidence],
                     new_reviews: list[str], events: list[str], human: list[str],
                     max_workers: int) -> str:
    parts = [problem_block(p), survey_block(s, w), research_state_block(s, w)]
    if human:
        parts.append(">>> MESSAGES FROM THE PHYSICIST <<<\n" + "\n".join(human[-w.humans:]))
    if new_evidence:
        parts.append(">>> EVIDENCE RESULTS <<<\n" + "\n".join(evidence_text(e, w, with_code=False) for e in new_evidence))
    if new_reviews:
        parts.append(">>> VERIFICATION RESULTS <<<\n" + "\n".join(new_reviews))
    if events:
        shown = events[-w.events:]
        parts.append(">>> SYSTEM EVENTS <<<\n" + "\n".join(shown)
                     + (f"\n({len(events) - len(shown)} earlier events not shown)" if len(events) > len(shown) else ""))
    parts.append(f"Iteration {s.iteration}. Integrate what is new, then either dispatch up to {max_workers} "
                 "independent task(s) or declare the research complete.")
    return "\n\n".join(parts)


def for_worker(p: Problem, s: ResearchState, w: Windows, *, target: str, instructions: str,
               method_hints: str, relevant: list[str]) -> str:
    tgt = s.find(target)
    target_text = getattr(tgt, "question", None) or getattr(tgt, "claim", "")
    rel = [e for e in s.active_ers() if e.id in relevant or e.wh in relevant] or s.active_ers()
    task = "\n".join([
        _tag("target", f"{target}: {target_text}"),
        _tag("background", clip(s.strategy, w.field_chars)
             + ("\nPitfalls: " + "; ".join(s.survey.known_pitfalls) if s.survey and s.survey.known_pitfalls else "")),
        _tag("instructions", instructions),
        _tag("method-hints", method_hints),
        _tag("relevant-results", "\n".join(_er_line(e, w) for e in rel)),
        _tag("recommended-sanity-checks", _checks(s)),
    ])
    state = _tag("research-state", _tag("conventions", "\n".join(f"- {c}" for c in s.conventions)) + "\n" + ers_block(s, w))
    return "\n\n".join([problem_block(p), state, _tag("task", task)])


def for_reviewer(p: Problem, s: ResearchState, w: Windows, wh_id: str) -> str:
    h = s.wh(wh_id)
    evs = [e for e in s.evidence if e.id in h.evidence]
    deps = "\n".join(f"{d} (established): {clip(s.wh(d).claim, 400)}" for d in h.depends_on if s.wh(d))
    claim = _tag("claim", f"{h.id}: {h.claim}" + (f"\nvalue: {h.value}" if h.value else ""))
    return "\n\n".join([problem_block(p),
                        _tag("conventions", "\n".join(f"- {c}" for c in s.conventions)),
                        _tag("sanity-checks", _checks(s)), claim,
                        _tag("builds-on", deps),
                        "\n".join(evidence_text(e, w) for e in evs),
                        "Examine the claim adversarially and give your verdict."])


def for_critic(p: Problem, s: ResearchState, w: Windows) -> str:
    prev = "\n".join(f"{c.id} [{c.status}] ({c.target_type}{' ' + c.target if c.target else ''}): {clip(c.text, 300)}"
                     for c in s.critiques[-w.critiques:])
    return "\n\n".join([problem_block(p), survey_block(s, w), research_state_block(s, w, full=False),
                        _tag("previous-critiques", prev),
                        f"Iteration {s.iteration}. Audit the state; file critiques only where needed."])


def for_adjudicator(p: Problem, s: ResearchState, w: Windows, critique: Critique) -> str:
    e = s.er(critique.target)
    evs = [x for x in s.evidence if x.id in e.evidence]
    return "\n\n".join([problem_block(p), _tag("conventions", "\n".join(f"- {c}" for c in s.conventions)),
                        _tag("established-result", _er_line(e, w)),
                        "\n".join(evidence_text(x, w) for x in evs),
                        _tag("critique", f"{critique.id} ({critique.source}, {critique.kind}): {critique.text}"),
                        "Rule on the critique: uphold (the result is demoted) or dismiss."])


def for_formatter(p: Problem, s: ResearchState, w: Windows, *, forced: bool) -> str:
    usable = [e for e in s.active_ers() if not e.flagged]
    head = ("The run is ending (budget exhausted or stopped). Write the best answer the established results "
            "support; mark what is not established as such." if forced else
            "The orchestrator declared the research complete. Fill the answer from the established results, "
            "or report that they are not enough.")
    extra = ""
    if forced:
        live = [h for h in s.whs if h.status in ("proposed", "verified", "inconclusive", "demoted")]
        extra = _tag("unestablished-hypotheses", "\n".join(_wh_line(h, w) for h in live))
    return "\n\n".join([problem_block(p), _tag("conventions", "\n".join(f"- {c}" for c in s.conventions)),
                        _tag("established-results", "\n".join(_er_line(e, w) for e in usable)), extra, head])
