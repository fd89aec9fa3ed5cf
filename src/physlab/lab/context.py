"""Fresh, per-role context assembled from the ResearchState (no conversation carries over).

A role's prompt is a list of named sections, ``<tag>`` ... ``</tag>``, in the order of
``ROLE_SECTIONS[role]``: what changes least comes first, so that consecutive requests share the
longest possible prefix and a provider's prompt cache (Anthropic's cache points, the implicit
caches of OpenAI, Gemini and vLLM) serves it. Three parts (``RolePrompt``):

- ``head``: the problem (statement, template, guidelines), the same for every role of the run; it
  opens the role's instructions, so every request of the run starts with it;
- ``stable``: survey, conventions, strategy, sanity checks, established results: byte-identical
  between consecutive calls of a role until one of them changes (no counters, no timestamps);
- ``volatile``: hypotheses, questions, notes, dispatch history, new evidence and events, the turn.

Every section listed for a role is always present (``(none)`` when empty), and ``SECTION_GUIDE``
says what each one is; the role's instructions include that guide for exactly its sections
(``roles/_base.instructions``), so a role is never shown a block nobody explained to it.

Long histories are windowed so every prompt stays bounded as a run grows: only the newest
dispatches, events, notes, closed questions and refuted or inconclusive hypotheses are shown in
full; older ones are counted or named, not listed. Established results and open critiques are
never cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from physlab.lab.answer import best_hypotheses, standing_text
from physlab.lab.state.models import Critique, EstablishedResult, Evidence, ResearchState, WorkingHypothesis
from physlab.problems.model import Problem


@dataclass(frozen=True)
class Windows:
    """How much of each growing history a prompt shows. A window moves in steps of half its size
    (``window_start``), not one item at a time, so what it shows stays byte-identical (a cacheable
    prefix) for several iterations while the newest items are appended after it."""

    dispatches: int = 8
    events: int = 25
    notes: int = 12
    dead_ends: int = 12
    closed_rqs: int = 6
    whs: int = 12               # newest hypotheses shown as they stand; older ones summarised
    old_whs: int = 6            # older hypotheses still open (verified, inconclusive...) in short form
    critiques: int = 10         # closed critiques shown to the critic (open ones always are)
    open_rqs: int = 12          # newest open questions shown in full; older ones by id only
    humans: int = 8
    field_chars: int = 1500
    output_chars: int = 6000

    def shrunk(self, level: int) -> "Windows":
        """The windows for a prompt that did not fit the model's context window, ``level`` times
        over: each list window and text clip halved per level (at least one item, 200 characters).
        Only what is windowed shrinks: the problem and the role's task never do."""
        if level <= 0:
            return self
        from dataclasses import fields, replace

        f = 2 ** level
        return replace(self, **{x.name: max(200 if x.name.endswith("_chars") else 1, getattr(self, x.name) // f)
                                for x in fields(self)})


def window_start(n: int, size: int) -> int:
    """Index of the first of ``n`` items a window of at most ``size`` shows. It moves in steps of
    half its size, so between two moves the shown items are only appended to (and at least half
    the window is always shown)."""
    if n <= size:
        return 0
    step = max(1, size // 2)
    return -(-(n - size) // step) * step


# What each section is, and how to use it. Shown to every role for the sections it receives.
SECTION_GUIDE: dict[str, str] = {
    "problem-statement": "The problem exactly as the physicist posed it. Its notation and conventions win over "
                         "any habit of yours; re-read it before you conclude.",
    "answer-template": "The form the final answer must take (a Python function to fill), or a note that the "
                       "answer is a Markdown write-up. It fixes the inputs, outputs and their meaning.",
    "problem-guidelines": "House rules for every answer: exact closed forms where possible, the problem's own "
                          "notation, no silent approximations.",
    "background-survey": "The surveyor's map of the problem: background, key insights, known methods and "
                         "known pitfalls. Orientation, not established fact.",
    "conventions": "Units, signs, normalisations and notation everyone in the lab uses (set by the planner). "
                   "State and use them; flag any result that uses others.",
    "strategy": "The planner's current plan (its version number changes when it is revised).",
    "sanity-checks": "SC-n: pass/fail predicates the FINAL ANSWER must satisfy (limits, bounds, symmetries, "
                     "dimensions). Apply those that concern your work.",
    "established-results": "ER-n: claims that passed adversarial review and whose dependencies are established. "
                           "Each line: id, the hypothesis it came from (WH-n), what it builds on, the claim and "
                           "its value. Build on these; do not redo them.",
    "demoted-results": "ER-n that no longer stand: demoted by an upheld critique, or because something they "
                       "built on was demoted. Each says why. Not established.",
    "hypotheses": "WH-n with their status: proposed (awaiting review), verified (passed review, waits for "
                  "what it builds on), inconclusive / refuted / demoted (reviewed again only with NEW "
                  "evidence), abandoned (refuted too often: a dead end). Each lists its evidence and "
                  "dependencies.",
    "research-questions": "RQ-n: atomic questions, each answerable by one worker call; open or closed.",
    "dead-ends": "DE-n: approaches that failed and why. Do not repeat them without a new idea.",
    "research-notes": "NT-n: the orchestrator's own notes (plans, caveats, partial insights).",
    "dispatch-history": "Which worker was sent on which target, and what came back (EV-n or the failure).",
    "messages-from-the-physicist": "Comments, hints and instructions from the human physicist running the lab. "
                                   "Follow them; they outrank the strategy.",
    "new-evidence": "Evidence (EV-n) that workers returned since you last integrated it: findings, method or "
                    "derivation, confidence. It stays here until a turn of yours succeeds.",
    "new-verification-results": "Reviewer verdicts on hypotheses since your last turn, with the reasons.",
    "system-events": "What the lab did since your last turn: promotions, demotions, critiques and rulings, "
                     "refused actions (with the reason), failed calls, completion refused (with the gates).",
    "completion-gates": "What still stands between the lab and completion (checked in code); 'none' when "
                        "completion would be accepted now.",
    "target": "The research question or hypothesis your task is about (id and text).",
    "instructions": "The orchestrator's task for you: what to produce.",
    "method-hints": "Suggested methods, and hints from the physicist. Suggestions, not orders.",
    "relevant-results": "The established results the orchestrator says your task builds on.",
    "known-pitfalls": "Mistakes the surveyor expects on this problem. Check your work against each.",
    "claim": "The hypothesis under review: its id, the claim, and the value it asserts. It must stand on its "
             "own: you are not shown the question it answers.",
    "builds-on": "The hypotheses this claim depends on, each with its TRUE current status (established as "
                 "ER-n, or not, and why). A claim built on something not established cannot be established "
                 "itself until that is.",
    "supporting-evidence": "The evidence the claim rests on, one <evidence> item each: findings, the worker's method or full derivation, and for "
                "computations the code that really ran and the output it really printed.",
    "established-result": "The result under challenge: id, claim, value, what it builds on.",
    "critique": "The critique filed against it, by whom (the senior critic or the physicist).",
    "critiques-to-answer": "CR-n routed to you (strategy, coordination, sanity-check critiques, and redirects "
                           "from the physicist). Each needs an explicit accept or reject with a reason.",
    "previous-critiques": "Critiques already filed in this run, with their status and the ruling or answer. "
                          "Do not file one again unless you have new grounds, and say what they are.",
    "best-hypotheses": "The strongest hypotheses that are not established (verified and waiting, "
                       "inconclusive, demoted), with their review history.",
    "best-current-answer": "What the lab would answer if it stopped now, and how established that is.",
    "turn": "Where the run stands (iteration number) and what is asked of you on this call.",
}

# The problem: the same for every role of a run, so it opens every role's instructions (a prefix
# that every request of the run shares, see ``roles/_base.system_prompt``).
HEAD = ["problem-statement", "answer-template", "problem-guidelines"]

# Each role's user prompt: (stable sections, volatile sections). The stable ones change only when
# the lab's foundations do (survey, conventions, strategy, checks, established results), so they
# are byte-identical between consecutive calls of a role until then and a provider's prompt cache
# serves them; the volatile ones change on every call, the records that are only appended to
# (dead ends, notes) first, so they too are a prefix of the next call most of the time.
LAYOUT: dict[str, tuple[list[str], list[str]]] = {
    "surveyor": ([], ["turn"]),
    "planner": (["background-survey", "conventions", "strategy", "sanity-checks", "established-results"],
                ["dead-ends", "hypotheses", "research-questions", "critiques-to-answer", "turn"]),
    "orchestrator": (["background-survey", "conventions", "strategy", "sanity-checks", "established-results"],
                     ["dead-ends", "research-notes", "hypotheses", "research-questions", "dispatch-history",
                      "messages-from-the-physicist", "new-evidence", "new-verification-results", "system-events",
                      "completion-gates", "turn"]),
    "researcher": (["conventions", "strategy", "sanity-checks", "known-pitfalls", "established-results"],
                   ["target", "relevant-results", "instructions", "method-hints", "turn"]),
    "reviewer": (["conventions", "sanity-checks"], ["claim", "builds-on", "supporting-evidence", "turn"]),
    "critic": (["background-survey", "conventions", "strategy", "sanity-checks", "established-results"],
               ["dead-ends", "demoted-results", "hypotheses", "research-questions", "previous-critiques", "turn"]),
    "adjudicator": (["conventions", "sanity-checks"],
                    ["established-result", "builds-on", "supporting-evidence", "critique", "turn"]),
    "formatter": (["conventions", "established-results"],
                  ["demoted-results", "best-hypotheses", "best-current-answer", "turn"]),
}
LAYOUT["computer"] = LAYOUT["researcher"]
# Every section a role is shown, in order: the problem, then its stable and its volatile sections.
ROLE_SECTIONS: dict[str, list[str]] = {role: HEAD + stable + volatile for role, (stable, volatile) in LAYOUT.items()}


@dataclass(frozen=True)
class RolePrompt:
    """A role's context in three parts, most stable first. ``head`` (the problem) is the same for
    every role of a run and opens the role's instructions; ``stable`` and ``volatile`` make up the
    user prompt, with a cache point between them (see ``roles/_base.run_role``)."""

    role: str
    head: str
    stable: str
    volatile: str

    @property
    def text(self) -> str:
        """The whole context as one text, in order (what a reader of the prompt sees)."""
        return "\n\n".join(x for x in (self.head, self.stable, self.volatile) if x)


def clip(text: str | None, n: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else text[: n // 2] + f"\n…[{len(text) - n} characters omitted]…\n" + text[-n // 2:]


def tag(name: str, body: str) -> str:
    return f"<{name}>\n{body.strip() or '(none)'}\n</{name}>"


def _tags(names: list[str], sections: dict[str, str]) -> str:
    return "\n\n".join(tag(name, sections.get(name, "")) for name in names)


def render(role: str, sections: dict[str, str]) -> RolePrompt:
    """The role's sections in their fixed order (a missing one is shown as empty)."""
    unknown = set(sections) - set(ROLE_SECTIONS[role])
    assert not unknown, f"sections {unknown} are not declared for {role}"
    stable, volatile = LAYOUT[role]
    return RolePrompt(role, _tags(HEAD, sections), _tags(stable, sections), _tags(volatile, sections))


def guide(role: str) -> str:
    """What the role's context contains, section by section (appended to its instructions)."""
    return "\n".join(f"- <{name}>: {SECTION_GUIDE[name]}" for name in ROLE_SECTIONS[role])


# ------------------------------------------------------------------------ shared section bodies
def problem_sections(p: Problem) -> dict[str, str]:
    return {
        "problem-statement": p.statement,
        "answer-template": ("```python\n" + p.answer_template.strip() + "\n```") if p.answer_template else
                           "No template: the answer is a Markdown write-up (ANSWER.md).",
        "problem-guidelines": "Give exact closed forms when possible (SymPy expressions with exact rationals). "
                              "Keep the problem's own notation, symbols and conventions. State every "
                              "approximation and its regime of validity.",
    }


def survey_text(s: ResearchState, w: Windows) -> str:
    if not s.survey:
        return ""
    sv = s.survey
    parts = [clip(sv.background, w.field_chars)]
    for title, items in (("Key insights", sv.key_insights), ("Known methods", sv.known_methods),
                         ("Known pitfalls", sv.known_pitfalls)):
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {x}" for x in items))
    return "\n\n".join(parts)


def conventions_text(s: ResearchState) -> str:
    return "\n".join(f"- {c}" for c in s.conventions)


def checks_text(s: ResearchState) -> str:
    return "\n".join(f"{c.id}: {c.predicate}" for c in s.sanity_checks if c.status == "active")


def er_line(e: EstablishedResult, w: Windows) -> str:
    deps = f"; builds on {', '.join(e.depends_on)}" if e.depends_on else ""
    val = f"\n  value: {clip(e.value, w.field_chars)}" if e.value else ""
    return f"{e.id} (from {e.wh}{deps}): {clip(e.claim, w.field_chars)}{val}"


def ers_text(s: ResearchState, w: Windows) -> str:
    """Every active established result, in full: nothing the next decision needs is dropped."""
    return "\n".join(er_line(e, w) for e in s.active_ers())


def demoted_text(s: ResearchState, w: Windows) -> str:
    return "\n".join(f"{er_line(e, w)}\n  demoted: {clip(e.demotion_reason, 600)}" for e in s.ers if e.status == "demoted")


def wh_line(h: WorkingHypothesis, w: Windows) -> str:
    deps = f"; depends on {', '.join(h.depends_on)}" if h.depends_on else ""
    val = f"\n  value: {clip(h.value, w.field_chars)}" if h.value else ""
    return f"{h.id} [{h.status}] (evidence {', '.join(h.evidence)}{deps}): {clip(h.claim, w.field_chars)}{val}"


def hypotheses_text(s: ResearchState, w: Windows) -> str:
    """In the order they were proposed (a new one is appended, a verdict changes one line near the
    end). The newest ``whs`` as they stand; before them a summary of the older ones: those still
    open (verified, inconclusive, demoted, proposed) in short form, the rest by id."""
    start = window_start(len(s.whs), w.whs)
    old, lines = s.whs[:start], []
    if old:
        est = [f"{h.id} ({h.er})" for h in old if h.status == "established"]
        dead = [h.id for h in old if h.status in ("refuted", "abandoned")]
        still = [h for h in old if h.status not in ("established", "refuted", "abandoned")]
        if est:
            lines.append("Older hypotheses established (see <established-results>): " + ", ".join(est))
        if dead:
            lines.append(f"Older hypotheses refuted or abandoned: {len(dead)} (see <dead-ends>), the newest "
                         + ", ".join(dead[-w.old_whs:]))
        if len(still) > w.old_whs:
            lines.append("Older open hypotheses, by id: " + ", ".join(h.id for h in still[:-w.old_whs]))
        lines += [f"{h.id} [{h.status}] (older): {clip(h.claim, 200)}" for h in still[-w.old_whs:]]
    for h in s.whs[start:]:
        if h.status == "established":
            lines.append(f"{h.id} [established as {h.er}]")
        elif h.status in ("refuted", "abandoned"):
            lines.append(f"{h.id} [{h.status}]: {clip(h.claim, 200)}")
        else:
            lines.append(wh_line(h, w))
    return "\n".join(lines)


def rqs_text(s: ResearchState, w: Windows) -> str:
    opened = [r for r in s.rqs if r.status == "open"]
    closed = [r for r in s.rqs if r.status != "open"]
    start = window_start(len(closed), w.closed_rqs)
    lines = [f"({start} older closed questions not shown)"] if start else []
    lines += [f"{r.id} [{r.status}]: {clip(r.question, 200)}" for r in closed[start:]]
    if len(opened) > w.open_rqs:
        lines.append(f"Older open questions: {', '.join(r.id for r in opened[:-w.open_rqs])}")
    lines += [f"{r.id} [open]: {clip(r.question, 600)}" for r in opened[-w.open_rqs:]]
    return "\n".join(lines)


def dead_ends_text(s: ResearchState, w: Windows) -> str:
    start = window_start(len(s.dead_ends), w.dead_ends)
    return "\n".join(([f"({start} older dead ends not shown)"] if start else [])
                     + [f"{d.id}: {clip(d.description, 400)}" for d in s.dead_ends[start:]])


def evidence_text(ev: Evidence, w: Windows, *, with_code: bool = True) -> str:
    """One evidence item. With code (reviewer, adjudicator) the derivation is shown nearly whole;
    for the orchestrator a summary is enough."""
    long = w.output_chars * 2 if with_code else w.field_chars * 2
    parts = [f"{ev.id} by the {ev.role} on {ev.target} (confidence: {ev.confidence})",
             tag("findings", clip(ev.findings, w.field_chars * 2))]
    if ev.checks:
        parts.append(tag("checks", "\n".join(f"- {c}" for c in ev.checks)))
    if ev.derivation:
        parts.append(tag("derivation", clip(ev.derivation, long)))
    if ev.method:
        parts.append(tag("method", clip(ev.method, w.field_chars * 2)))
    if with_code and ev.code:
        parts.append(tag("code", "```python\n" + clip(ev.code, w.output_chars * 2) + "\n```"))
    if with_code and ev.output:
        parts.append(tag("output", clip(ev.output, w.output_chars)))
    return tag("evidence", "\n".join(parts))


def dependency_status(s: ResearchState, wh_id: str) -> str:
    """A dependency's true standing, for whoever judges a claim built on it."""
    d = s.wh(wh_id)
    if d is None:
        return f"{wh_id}: unknown"
    if s.is_established(wh_id):
        head = f"{wh_id} [established as {d.er}]"
    else:
        why = {"proposed": "awaiting review", "verified": "verified, but what it builds on is not established",
               "inconclusive": "the reviewer found the evidence insufficient",
               "refuted": "the reviewer refuted it", "abandoned": "abandoned as a dead end",
               "demoted": "it was established, then demoted"}.get(d.status, d.status)
        last = next((e for e in reversed(s.ers) if e.wh == wh_id and e.status == "demoted"), None)
        head = f"{wh_id} [NOT established: {why}" + (f" ({last.id}: {clip(last.demotion_reason, 300)})" if last else "") + "]"
    return head + f": {clip(d.claim, 400)}" + (f"\n  value: {clip(d.value, 600)}" if d.value else "")


# ------------------------------------------------------------------------ per-role prompts
def for_surveyor(p: Problem) -> RolePrompt:
    return render("surveyor", problem_sections(p) | {
        "turn": "Survey the background for this problem and submit the survey. Do not solve it."})


def for_planner(p: Problem, s: ResearchState, critiques: list[Critique], w: Windows) -> RolePrompt:
    crit = "\n".join(f"{c.id} ({c.source}, {c.target_type}{' ' + c.target if c.target else ''}, {c.kind}): {c.text}"
                     for c in critiques)
    checks = "\n".join(f"{c.id} [{c.status}]: {c.predicate}" for c in s.sanity_checks)
    ask = ("Lay out the strategy, the conventions and the sanity checks." if not s.strategy else
           f"Revise the strategy (now v{s.strategy_version}) only as far as the critiques require.")
    if critiques:
        ask += f" Answer every critique in <critiques-to-answer> by its id ({', '.join(c.id for c in critiques)})."
    return render("planner", problem_sections(p) | {
        "background-survey": survey_text(s, w), "conventions": conventions_text(s),
        "strategy": (f"v{s.strategy_version}: " + s.strategy) if s.strategy else "", "sanity-checks": checks,
        "established-results": ers_text(s, w), "hypotheses": hypotheses_text(s, w),
        "research-questions": rqs_text(s, w), "dead-ends": dead_ends_text(s, w),
        "critiques-to-answer": crit, "turn": f"Iteration {s.iteration}. {ask}"})


def orchestrator_sections(p: Problem, s: ResearchState, w: Windows) -> dict[str, str]:
    """The parts of the orchestrator's prompt that describe the research state (the engine adds
    what is new since its last successful turn)."""
    d0 = window_start(len(s.dispatches), w.dispatches)
    dispatches = ([f"({d0} older dispatches not shown)"] if d0 else []) + [
        f"iteration {d.iteration}: {d.role} on {d.target} -> {d.evidence or d.outcome or 'pending'}"
        for d in s.dispatches[d0:]]
    n0 = window_start(len(s.notes), w.notes)
    notes = ([f"({n0} older notes not shown)"] if n0 else []) + [f"{n.id}: {clip(n.text, 400)}" for n in s.notes[n0:]]
    return problem_sections(p) | {
        "background-survey": survey_text(s, w), "conventions": conventions_text(s), "strategy": s.strategy,
        "sanity-checks": checks_text(s), "established-results": ers_text(s, w),
        "hypotheses": hypotheses_text(s, w), "research-questions": rqs_text(s, w),
        "dead-ends": dead_ends_text(s, w), "research-notes": "\n".join(notes),
        "dispatch-history": "\n".join(dispatches)}


def for_orchestrator(p: Problem, s: ResearchState, w: Windows, *, new_evidence: list[Evidence],
                     new_reviews: list[str], events: list[str], human: list[str], gates: list[str],
                     max_workers: int) -> RolePrompt:
    shown = events[-w.events:]
    ev_lines = "\n".join(shown) + (f"\n({len(events) - len(shown)} earlier events not shown)"
                                   if len(events) > len(shown) else "")
    return render("orchestrator", orchestrator_sections(p, s, w) | {
        "messages-from-the-physicist": "\n".join(human[-w.humans:]),
        "new-evidence": "\n".join(evidence_text(e, w, with_code=False) for e in new_evidence),
        "new-verification-results": "\n".join(new_reviews), "system-events": ev_lines,
        "completion-gates": "\n".join(f"- {g}" for g in gates) if gates else
                            "none: completion would be accepted now (if the established results determine the answer)",
        "turn": f"Iteration {s.iteration}. Integrate what is new, then either dispatch up to {max_workers} "
                "independent task(s) (at most one per target) or declare the research complete."})


def for_worker(role: str, p: Problem, s: ResearchState, w: Windows, *, target: str, instructions: str,
               method_hints: str, relevant: list[str]) -> RolePrompt:
    tgt = s.find(target)
    target_text = getattr(tgt, "question", None) or getattr(tgt, "claim", "")
    if getattr(tgt, "value", ""):
        target_text += f"\nvalue: {tgt.value}"
    if tgt is not None and target.startswith("WH-"):
        target_text += f"\nstatus: {tgt.status}. Your evidence is attached to {target} and sent to the reviewer."
    rel = [e for e in s.active_ers() if e.id in relevant or e.wh in relevant]
    ask = ("Derive what the instructions ask. Write the derivation as Markdown with LaTeX in the text of your "
           "reply, then submit its findings with submit_derivation." if role == "researcher" else
           "Call document_approach first, then compute with execute_python, then submit_result.")
    return render(role, problem_sections(p) | {
        "conventions": conventions_text(s), "strategy": clip(s.strategy, w.field_chars),
        "sanity-checks": checks_text(s),
        "known-pitfalls": "\n".join(f"- {x}" for x in (s.survey.known_pitfalls if s.survey else [])),
        "established-results": ers_text(s, w), "target": f"{target}: {target_text}",
        "relevant-results": "\n".join(er_line(e, w) for e in rel), "instructions": instructions,
        "method-hints": method_hints, "turn": ask})


def for_reviewer(p: Problem, s: ResearchState, w: Windows, wh_id: str) -> RolePrompt:
    h = s.wh(wh_id)
    evs = [e for e in s.evidence if e.id in h.evidence]
    again = (f" It was reviewed before ({', '.join(h.reviews)}); judge it afresh on all the evidence, "
             "including what is new." if h.reviews else "")
    return render("reviewer", problem_sections(p) | {
        "conventions": conventions_text(s), "sanity-checks": checks_text(s),
        "claim": f"{h.id}: {h.claim}" + (f"\nvalue: {h.value}" if h.value else ""),
        "builds-on": "\n".join(dependency_status(s, d) for d in h.depends_on),
        "supporting-evidence": "\n".join(evidence_text(e, w) for e in evs),
        "turn": f"Examine {h.id} adversarially and give your verdict.{again}"})


def for_critic(p: Problem, s: ResearchState, w: Windows, *, max_critiques: int) -> RolePrompt:
    closed = [c for c in s.critiques if c.status != "open"]
    c0 = window_start(len(closed), w.critiques)
    shown = closed[c0:] + [c for c in s.critiques if c.status == "open"]        # open ones always, in full
    prev = "\n".join(([f"({c0} older closed critiques not shown)"] if c0 else []) + [
        f"{c.id} [{c.status}] ({c.source}, {c.target_type}{' ' + c.target if c.target else ''}, {c.kind}): "
        + (c.text if c.status == "open" else clip(c.text, 400))
        + (f"\n  ruling: {clip(c.ruling, 400)}" if c.ruling else "") for c in shown])
    return render("critic", problem_sections(p) | {
        "background-survey": survey_text(s, w), "conventions": conventions_text(s), "strategy": s.strategy,
        "sanity-checks": checks_text(s), "established-results": ers_text(s, w), "demoted-results": demoted_text(s, w),
        "hypotheses": hypotheses_text(s, w), "research-questions": rqs_text(s, w),
        "dead-ends": dead_ends_text(s, w), "previous-critiques": prev,
        "turn": f"Iteration {s.iteration}. Audit the research as a whole. File at most {max_critiques} "
                "critiques, only where needed; an empty audit is a valid audit."})


def for_adjudicator(p: Problem, s: ResearchState, w: Windows, critique: Critique) -> RolePrompt:
    e = s.er(critique.target)
    evs = [x for x in s.evidence if x.id in e.evidence]
    return render("adjudicator", problem_sections(p) | {
        "conventions": conventions_text(s), "sanity-checks": checks_text(s),
        "established-result": er_line(e, w), "builds-on": "\n".join(dependency_status(s, d) for d in e.depends_on),
        "supporting-evidence": "\n".join(evidence_text(x, w) for x in evs),
        "critique": f"{critique.id} ({critique.source}, {critique.kind}): {critique.text}",
        "turn": f"Rule on {critique.id}: uphold (then {e.id} is demoted) or dismiss."})


def for_formatter(p: Problem, s: ResearchState, w: Windows, *, forced: bool, reason: str = "") -> RolePrompt:
    if forced:
        ask = (f"The run is ending ({reason or 'budget exhausted'}). Write the best answer the lab has: from the "
               "established results where they suffice, otherwise from the demoted results or the best hypotheses. "
               "Name in `sources` every ER-n or WH-n you used; say plainly in the Markdown what is not established.")
    else:
        ask = ("The orchestrator declared the research complete. Fill the answer from the established results "
               "ONLY, naming in `sources` the ER-n each part comes from; or set ready to false and say what is "
               "missing.")
    return render("formatter", problem_sections(p) | {
        "conventions": conventions_text(s), "established-results": ers_text(s, w),
        "demoted-results": demoted_text(s, w) if forced else "",
        "best-hypotheses": "\n".join(wh_line(h, w) + f"\n  reviews: {', '.join(_verdicts(s, h))}"
                                     for h in best_hypotheses(s)) if forced else "",
        "best-current-answer": standing_text(s, s.best_answer) if forced and s.best_answer else "",
        "turn": f"Iteration {s.iteration}. {ask}"})


def _verdicts(s: ResearchState, h: WorkingHypothesis) -> list[str]:
    return [f"{r.id} {r.verdict}" for r in s.reviews if r.wh == h.id] or ["none yet"]
