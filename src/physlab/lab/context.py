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

from collections.abc import Sequence
from dataclasses import dataclass

from physlab.lab.answer import best_hypotheses, standing_text
from physlab.lab.gates import stalled
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
    failure_chars: int = 3000  # what a worker is told of earlier failures on its target (upstream's excerpt)

    def shrunk(self, level: int) -> Windows:
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
                          "notation, no silent approximations; and whether the problem is a posed one with a "
                          "definite answer (a benchmark) or an open question.",
    "background-survey": "The surveyor's map of the problem: background, key insights, known methods, known "
                         "pitfalls and the expected structure of the answer (its form, never its value). "
                         "Orientation, not established fact.",
    "conventions": "Units, signs, normalisations and notation everyone in the lab uses (set by the planner). "
                   "State and use them; flag any result that uses others.",
    "strategy": "The planner's current plan (its version number changes when it is revised).",
    "sanity-checks": "SC-n: pass/fail predicates the FINAL ANSWER must satisfy (limits, bounds, symmetries, "
                     "dimensions). Apply those that concern your work.",
    "established-results": "ER-n: claims that passed adversarial review and whose dependencies are established. "
                           "Each line: id, the hypothesis it came from (WH-n), what it builds on, the claim and "
                           "its value; 'obsolete' when the planner flagged it superseded (still established). "
                           "The claims only, not how they were reached. Build on these; do not redo them.",
    "demoted-results": "ER-n that no longer stand: demoted by an upheld critique, or because something they "
                       "built on was demoted. Each says why. Not established.",
    "hypotheses": "WH-n with their status: proposed (awaiting review), verified (passed review, waits for "
                  "what it builds on), inconclusive / refuted / demoted (reviewed again only with NEW "
                  "evidence; a demoted one says which critique demoted it, and when the adjudicator asked "
                  "for evidence, which), abandoned (a dead end). Each lists its evidence and dependencies.",
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
    "run-signals": "How the run is going, from the record: the iteration and how many remain (a warning near "
                   "the end), hypotheses STALLED (verdicts short of VERIFIED again and again), completions "
                   "refused in a row (the circuit breaker abandons what is left unresolved after a few), "
                   "hypotheses refuted more than once.",
    "target": "The research question or hypothesis your task is about (id and text).",
    "instructions": "The orchestrator's task for you: what to produce.",
    "method-hints": "Suggested methods, and hints from the physicist. Suggestions, not orders.",
    "relevant-results": "The established results the orchestrator says your task builds on.",
    "known-pitfalls": "Mistakes the surveyor expects on this problem, and structural properties a correct "
                      "answer must have. Check the work against each; a claim that falls into one is suspect "
                      "however consistent it is inside.",
    "earlier-attempts": "How earlier work on this same target fell short: failed dispatches, verdicts short of "
                        "VERIFIED with the reviewers' reasons, the critique and ruling that demoted it, the "
                        "evidence the adjudicator asked for. Diagnose the root cause before you start again.",
    "question": "The research question(s) the claim's evidence was produced for, so you can judge whether the "
                "claim answers what was asked (scope, definitions). The claim must still stand on its own.",
    "claim": "The hypothesis under review: its id, the claim, and the value it asserts. It must stand on its "
             "own, with its definitions and scope stated.",
    "builds-on": "The hypotheses this claim depends on, each with its TRUE current status (established as "
                 "ER-n, or not, and why). A claim built on something not established cannot be established "
                 "itself until that is.",
    "supporting-evidence": "The evidence the claim rests on, one <evidence> item each: findings, the worker's method or full derivation, and for "
                "computations the code that really ran and the output it really printed.",
    "established-result": "The result under challenge: id, claim, value, what it builds on, and the review that "
                          "verified it.",
    "review-history": "Everything earlier judges said about this claim, oldest first: each verdict with its "
                      "reasons, each demotion with the critique that caused it (the objection) and the ruling, "
                      "evidence the adjudicator asked for, and the planner's answer to a stall. New evidence "
                      "must answer these objections; say whether it does.",
    "critique": "The critique filed against it, by whom (the senior critic or the physicist).",
    "critiques-to-answer": "CR-n routed to you (strategy, coordination, sanity-check critiques, stalled "
                           "hypotheses escalated by the lab, redirects from the physicist), with their severity "
                           "and how to test them. Each needs a verdict (accept, decline or dismiss) and a reason.",
    "demotions": "Established results the adjudicator demoted since you last planned (upheld critiques, and "
                 "'needs evidence' rulings with the evidence asked for), and what went down with them. For your "
                 "information: decide whether the strategy, the hypotheses (abandon) or other results "
                 "(obsolete) must change.",
    "previous-critiques": "Critiques already filed in this run, with their severity, status and the ruling or "
                          "answer (declined: right but not worth acting on; rejected: counter-argued; expired: "
                          "minor and left unresolved). Do not file one again unless you have new grounds, and "
                          "say what they are; several in one family mean the run is looping.",
    "best-hypotheses": "The strongest hypotheses that are not established (verified and waiting, "
                       "inconclusive, demoted), with their review history.",
    "best-current-answer": "What the lab would answer if it stopped now, and how established that is.",
    "answer-structure": "The results that make up the answer, in order: the ERs the orchestrator named when it "
                        "declared completion (when the run is ending early, the best current answer's source).",
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
                ["dead-ends", "hypotheses", "research-questions", "demotions", "critiques-to-answer", "turn"]),
    "orchestrator": (["background-survey", "conventions", "strategy", "sanity-checks", "established-results"],
                     ["dead-ends", "research-notes", "hypotheses", "research-questions", "dispatch-history",
                      "messages-from-the-physicist", "new-evidence", "new-verification-results", "system-events",
                      "completion-gates", "run-signals", "turn"]),
    "researcher": (["conventions", "strategy", "sanity-checks", "known-pitfalls", "established-results"],
                   ["target", "relevant-results", "earlier-attempts", "instructions", "method-hints", "turn"]),
    "reviewer": (["conventions", "sanity-checks", "known-pitfalls", "established-results"],
                 ["question", "claim", "builds-on", "supporting-evidence", "review-history", "turn"]),
    "critic": (["background-survey", "conventions", "strategy", "sanity-checks", "established-results"],
               ["dead-ends", "demoted-results", "hypotheses", "research-questions", "previous-critiques",
                "run-signals", "turn"]),
    "adjudicator": (["conventions", "sanity-checks", "known-pitfalls", "established-results"],
                    ["established-result", "builds-on", "supporting-evidence", "review-history", "critique", "turn"]),
    "formatter": (["conventions", "sanity-checks", "established-results"],
                  ["answer-structure", "demoted-results", "best-hypotheses", "best-current-answer", "turn"]),
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
def open_question(p: Problem) -> bool:
    """A plain Markdown question (``physlab solve question.md``): real research, which may turn out
    ill-posed. A benchmark problem is well-posed by contract."""
    return p.answer_template is None and p.extra.get("format") == "markdown"


def problem_sections(p: Problem) -> dict[str, str]:
    posed = ("This is an open question, not a benchmark problem: it may turn out ill-posed, ambiguous or without "
             "a definite answer. When the evidence shows that, say so plainly and show why; a well-argued "
             "'the question is ill-posed because ...' is an answer." if open_question(p) else
             "The problem is well-posed and has a definite answer: do not question its formulation or its "
             "constraints; work out what it asks within them. A parameter named in the template need not appear "
             "in the answer.")
    if p.answer_template and not open_question(p):
        # physics-intern's problem guideline (rendering/shared.py), in our words
        posed += (" A function the template asks for must hold at every point of each parameter's declared domain "
                  "(its docstring says which): where a general formula is undefined at a point of that domain, a "
                  "boundary point say, the result itself must give the limiting value there.")
    return {
        "problem-statement": p.statement,
        "answer-template": ("```python\n" + p.answer_template.strip() + "\n```") if p.answer_template else
                           "No template: the answer is a Markdown write-up (ANSWER.md).",
        "problem-guidelines": "Give exact closed forms when possible (SymPy expressions with exact rationals). "
                              "Keep the problem's own notation, symbols and conventions. State every "
                              "approximation and its regime of validity. " + posed,
    }


@dataclass(frozen=True)
class Controls:
    """The loop's limits, as the orchestrator and the critic are told them (``run-signals``)."""

    max_iterations: int | None = None
    stall_limit: int = 2            # verdicts short of VERIFIED in a row before a hypothesis is STALLED
    budget_warning: int = 3         # iterations left at which the orchestrator is told to synthesise
    max_refused: int = 3            # completions refused in a row before the circuit breaker
    max_stalled_shown: int = 4      # STALLED hypotheses shown in full (the newest); the others named
    views: str = "physlab"          # role_views: "paper" shows the roles what physics-intern shows them
    max_open_questions: int = 0     # the cap on open questions the orchestrator is told (0: none)
    one_exit: bool = False          # one_exit_per_turn: the turn ends with one exit (its <turn> says so)


def survey_text(s: ResearchState, w: Windows) -> str:
    if not s.survey:
        return ""
    sv = s.survey
    parts = [clip(sv.background, w.field_chars)]
    for title, items in (("Key insights", sv.key_insights), ("Known methods", sv.known_methods),
                         ("Known pitfalls", sv.known_pitfalls)):
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {x}" for x in items))
    if sv.expected_answer_structure.strip():
        parts.append("Expected structure of the answer:\n" + clip(sv.expected_answer_structure, w.field_chars))
    return "\n\n".join(parts)


def pitfalls_text(s: ResearchState) -> str:
    return "\n".join(f"- {x}" for x in (s.survey.known_pitfalls if s.survey else []))


def conventions_text(s: ResearchState) -> str:
    return "\n".join(f"- {c}" for c in s.conventions)


def checks_text(s: ResearchState) -> str:
    return "\n".join(f"{c.id}: {c.predicate}" + (f" (why: {c.rationale})" if c.rationale else "")
                     for c in s.sanity_checks if c.status == "active")


def er_line(e: EstablishedResult, w: Windows) -> str:
    deps = f"; builds on {', '.join(e.depends_on)}" if e.depends_on else ""
    old = f" [obsolete: {clip(e.obsolete, 200)}]" if e.obsolete else ""
    val = f"\n  value: {clip(e.value, w.field_chars)}" if e.value else ""
    return f"{e.id} (from {e.wh}{deps}){old}: {clip(e.claim, w.field_chars)}{val}"


def ers_text(s: ResearchState, w: Windows) -> str:
    """Every active established result, in full: nothing the next decision needs is dropped."""
    return "\n".join(er_line(e, w) for e in s.active_ers())


def demoted_text(s: ResearchState, w: Windows) -> str:
    return "\n".join(f"{er_line(e, w)}\n  demoted: {clip(e.demotion_reason, 600)}" for e in s.ers if e.status == "demoted")


def demoting_critique(s: ResearchState, wh_id: str) -> Critique | None:
    """The critique whose ruling last demoted a result of ``wh_id`` (upheld or needs evidence)."""
    ers = {e.id for e in s.ers if e.wh == wh_id}
    return next((c for c in reversed(s.critiques)
                 if c.target in ers and c.status in ("upheld", "needs_evidence")), None)


def wh_line(h: WorkingHypothesis, w: Windows, s: ResearchState | None = None) -> str:
    deps = f"; depends on {', '.join(h.depends_on)}" if h.depends_on else ""
    val = f"\n  value: {clip(h.value, w.field_chars)}" if h.value else ""
    why = ""
    if s is not None and h.status in ("demoted", "proposed", "inconclusive") and (c := demoting_critique(s, h.id)):
        why = (f"\n  needs evidence ({c.id}): {clip(c.scope, 400)}" if c.status == "needs_evidence" else
               f"\n  demoted by {c.id} (upheld): {clip(c.text, 300)}")
    return f"{h.id} [{h.status}] (evidence {', '.join(h.evidence)}{deps}): {clip(h.claim, w.field_chars)}{val}{why}"


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
            lines.append(wh_line(h, w, s))
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
    """One evidence item. With code (reviewer, adjudicator) the derivation is shown nearly whole
    and every script the computer ran, the newest in full and the earlier ones shorter; for the
    orchestrator a summary is enough."""
    long = w.output_chars * 2 if with_code else w.field_chars * 2
    parts = [f"{ev.id} by the {ev.role} on {ev.target} (confidence: {ev.confidence})",
             tag("findings", clip(ev.findings, w.field_chars * 2))]
    if ev.checks:
        parts.append(tag("checks", "\n".join(f"- {c}" for c in ev.checks)))
    if ev.derivation:
        parts.append(tag("derivation", clip(ev.derivation, long)))
    if ev.approach and with_code:
        parts.append(tag("approach", clip(ev.approach, w.field_chars)))
    if ev.method:
        parts.append(tag("method", clip(ev.method, w.field_chars * 2)))
    if with_code and ev.scripts:
        n = len(ev.scripts)
        for i, x in enumerate(ev.scripts, 1):
            newest = i == n
            head = f"script {i} of {n}" + (" (the newest)" if newest and n > 1 else "")
            code = clip(x.code, w.output_chars * 2 if newest else w.output_chars // 3)
            out = clip(x.output, w.output_chars if newest else w.output_chars // 6)
            parts.append(tag("script", f"{head}\n```python\n{code}\n```\n" + tag("output", out)))
    elif with_code:
        if ev.code:
            parts.append(tag("code", "```python\n" + clip(ev.code, w.output_chars * 2) + "\n```"))
        if ev.output:
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


def review_history(s: ResearchState, wh_id: str, w: Windows) -> str:
    """What every earlier judge said about ``wh_id``, oldest first: verdicts with their reasons,
    demotions with the critique that caused them and its ruling (or the evidence asked for), and
    the lab's escalation of a stall with the planner's answer."""
    h = s.wh(wh_id)
    if h is None:
        return ""
    items: list[tuple[int, int, str]] = []
    for r in s.reviews:
        if r.wh == wh_id:
            items.append((r.iteration, 0,
                          f"{r.id} (iteration {r.iteration}): {r.verdict} — {clip(r.reasoning, 800)}"))
    for e in s.ers:
        if e.wh != wh_id:
            continue
        if e.status == "demoted":
            items.append((e.iteration, 1, f"{e.id} (established, then demoted): {clip(e.demotion_reason, 600)}"))
        for c in s.critiques:
            if c.target != e.id or c.status == "open":
                continue
            text = (f"{c.id} ({c.source}, {c.severity}) on {e.id}, {c.status} by the adjudicator"
                    + (" — the result was demoted" if c.status in ("upheld", "needs_evidence") else "")
                    + f"\n  the objection: {clip(c.text, 800)}"
                    + (f"\n  how to test it: {clip(c.test, 300)}" if c.test else "")
                    + (f"\n  the ruling: {clip(c.ruling, 600)}" if c.ruling else "")
                    + (f"\n  evidence asked for: {clip(c.scope, 400)}" if c.scope else ""))
            items.append((c.resolved_iteration or c.iteration, 2, text))
    for c in s.critiques:
        if c.source == "lab" and c.target == wh_id:
            items.append((c.iteration, 3, f"{c.id} (the lab): {clip(c.text, 400)}" + (
                f"\n  the planner ({c.status}): {clip(c.ruling, 400)}" if c.ruling else "")))
    return "\n".join(text for *_, text in sorted(items, key=lambda x: (x[0], x[1])))


def earlier_attempts(s: ResearchState, target: str, w: Windows) -> str:
    """How earlier work on ``target`` fell short, newest last, within ``w.failure_chars``."""
    lines = []
    for d in s.dispatches:
        if d.target == target and d.outcome.startswith("failed"):
            lines.append(f"{d.id} (iteration {d.iteration}, the {d.role}): {clip(d.outcome, 400)}")
    h = s.wh(target)
    if h is not None:
        for r in s.reviews:
            if r.wh == target and r.verdict != "VERIFIED":
                lines.append(f"{r.id} (iteration {r.iteration}): {r.verdict} — {clip(r.reasoning, 800)}")
        if (c := demoting_critique(s, target)) is not None:
            lines.append(f"{c.id} ({c.status}): {clip(c.text, 500)}"
                         + (f"\n  ruling: {clip(c.ruling, 400)}" if c.ruling else "")
                         + (f"\n  evidence asked for: {clip(c.scope, 400)}" if c.scope else ""))
    if not lines:
        return ""
    text = f"{len(lines)} earlier attempt(s) on {target} fell short. Diagnose the root cause before you start again.\n"
    return clip(text + "\n".join(lines), w.failure_chars)


def run_signals(s: ResearchState, c: Controls, *, for_critic: bool = False) -> str:
    lines = []
    if c.max_iterations is not None:
        left = max(0, c.max_iterations - s.iteration)
        if c.views != "paper":    # physics-intern tells the budget in its state summary (orchestrator.summary)
            lines.append(f"Iteration {s.iteration} of {c.max_iterations}: {left} "
                         f"{'iteration remains' if left == 1 else 'iterations remain'}.")
        if left <= c.budget_warning and not for_critic and c.views != "paper":
            lines.append("BUDGET: the run is nearly over. Synthesise now: turn the evidence you have into "
                         "hypotheses, complete on the established results when they determine the answer, and "
                         "leave what stays unresolved as a stated limitation rather than starting new lines.")
    stuck = list(stalled(s, c.stall_limit).items())
    if len(stuck) > c.max_stalled_shown:      # the newest, so the section stays bounded in a long run
        older = [w for w, _ in stuck[:-c.max_stalled_shown]]
        lines.append(f"STALLED earlier and still undecided: {len(older)} more hypotheses "
                     f"({', '.join(older[-12:])}{', ...' if len(older) > 12 else ''}).")
    for wid, n in stuck[-c.max_stalled_shown:]:
        lines.append(f"STALLED: {wid} has had {n} verdicts in a row short of VERIFIED. Do not send the same kind "
                     "of evidence again: an independent route (the other worker, another method), a corrected "
                     "claim, or abandon it (the planner has been told).")
    if s.refused_completions and c.views != "paper":      # upstream: its TERMINATION BLOCKED banner (an event)
        lines.append(f"Completion refused {s.refused_completions} time(s) in a row; at {c.max_refused} the lab "
                     "abandons the hypotheses left unresolved and drops the open questions.")
    twice = [w.id for w in s.whs if s.refutations(w.id) >= 2]
    if twice and for_critic:
        lines.append(f"Refuted more than once: {', '.join(twice)} (repeated refutations may mean the premise, "
                     "not the execution, is wrong).")
    return "\n".join(lines)


# ------------------------------------------------------------------------ per-role prompts
def for_surveyor(p: Problem) -> RolePrompt:
    return render("surveyor", problem_sections(p) | {
        "turn": "Survey the background for this problem and submit the survey. Do not solve it."})


def _critique_line(c: Critique) -> str:
    about = f"{c.target_type}{' ' + c.target if c.target else ''}"
    return (f"{c.id} ({c.source}, {c.severity}, {about}, {c.kind}): {c.text}"
            + (f"\n  how to test it: {c.test}" if c.test else ""))


def demotions_text(s: ResearchState, rulings: list[Critique], w: Windows) -> str:
    lines = []
    for c in rulings:
        e = s.er(c.target) if c.target is not None else None
        lines.append(f"{c.target} (from {e.wh if e else '?'}) demoted: {c.id} {c.status} — the objection: "
                     f"{clip(c.text, 500)}\n  ruling: {clip(c.ruling, 500)}"
                     + (f"\n  evidence asked for: {clip(c.scope, 400)}" if c.scope else ""))
        if e is not None:
            carried = [x.id for x in s.ers if x.status == "demoted" and x.id != e.id and e.wh in x.demotion_reason
                       and x.iteration <= (c.resolved_iteration or s.iteration)]
            if carried:
                lines.append(f"  demoted with it: {', '.join(carried)}")
    return "\n".join(lines)


def for_planner(p: Problem, s: ResearchState, critiques: list[Critique], w: Windows,
                demotions: Sequence[Critique] = (), views: str = "physlab") -> RolePrompt:
    """``views="paper"``: physics-intern's planner sees the survey alone when it first plans, and no
    hypotheses when it revises (agents/planner/context.py)."""
    crit = "\n".join(_critique_line(c) for c in critiques)
    checks = "\n".join(f"{c.id} [{c.status}, from the {c.source}]: {c.predicate}"
                       + (f" (why: {c.rationale})" if c.rationale else "") for c in s.sanity_checks)
    ask = ("Lay out the strategy, the conventions and the sanity checks." if not s.strategy else
           f"Revise the strategy (now v{s.strategy_version}) only as far as the critiques and demotions require.")
    if demotions:
        ask += f" Consider the demotions in <demotions> ({', '.join(c.target or '' for c in demotions)})."
    if critiques:
        ask += (" Give a verdict on every critique in <critiques-to-answer> by its id "
                f"({', '.join(c.id for c in critiques)}).")
    sections = problem_sections(p) | {
        "background-survey": survey_text(s, w), "conventions": conventions_text(s),
        "strategy": (f"v{s.strategy_version}: " + s.strategy) if s.strategy else "", "sanity-checks": checks,
        "established-results": ers_text(s, w), "hypotheses": hypotheses_text(s, w),
        "research-questions": rqs_text(s, w), "dead-ends": dead_ends_text(s, w),
        "demotions": demotions_text(s, list(demotions), w),
        "critiques-to-answer": crit, "turn": f"Iteration {s.iteration}. {ask}"}
    if views == "paper":
        if not s.strategy:
            sections = {k: v for k, v in sections.items() if k in (*HEAD, "background-survey", "turn")}
        sections["hypotheses"] = ""
    return render("planner", sections)


def orchestrator_sections(p: Problem, s: ResearchState, w: Windows, controls: Controls = Controls()
                          ) -> dict[str, str]:
    """The parts of the orchestrator's prompt that describe the research state (the engine adds
    what is new since its last successful turn). ``controls.views == "paper"``: the hypotheses still
    in play only (the established are among the results, the abandoned among the dead ends) and the
    cap on open questions, as physics-intern shows them (agents/orchestrator/context.py)."""
    d0 = window_start(len(s.dispatches), w.dispatches)
    dispatches = ([f"({d0} older dispatches not shown)"] if d0 else []) + [
        f"iteration {d.iteration}: {d.role} on {d.target} -> {d.evidence or d.outcome or 'pending'}"
        for d in s.dispatches[d0:]]
    n0 = window_start(len(s.notes), w.notes)
    notes = ([f"({n0} older notes not shown)"] if n0 else []) + [f"{n.id}: {clip(n.text, 400)}" for n in s.notes[n0:]]
    return problem_sections(p) | {
        "background-survey": survey_text(s, w), "conventions": conventions_text(s), "strategy": s.strategy,
        "sanity-checks": checks_text(s), "established-results": ers_text(s, w),
        "hypotheses": working_text(s, w) if controls.views == "paper" else hypotheses_text(s, w),
        "research-questions": questions_cap(s, controls) + rqs_text(s, w),
        "dead-ends": dead_ends_text(s, w), "research-notes": "\n".join(notes),
        "dispatch-history": "\n".join(dispatches)}


def working_text(s: ResearchState, w: Windows, *, reviews: bool = False) -> str:
    """The hypotheses neither established nor abandoned, as they stand (with their evidence and last
    review in one line each when ``reviews``: what physics-intern's critic is shown)."""
    out = []
    for h in s.whs:
        if h.status in ("established", "abandoned"):
            continue
        out.append(wh_line(h, w, s) + (claim_record(s, h.evidence, h.reviews) if reviews else ""))
    return "\n".join(out)


def claim_record(s: ResearchState, evidence: Sequence[str], reviews: Sequence[str]) -> str:
    """A claim's evidence, one line each, and its last review: what physics-intern's critic reads
    of each claim (agents/critic/context.py)."""
    lines = []
    for ev in (e for e in s.evidence if e.id in evidence):
        how = ev.method or ("derivation" if ev.derivation else "computation" if ev.scripts else "not specified")
        lines.append(f"\n  evidence {ev.id} ({ev.role}, {clip(how, 120)}, confidence {ev.confidence}): "
                     f"{clip(ev.findings, 300)}")
    last = next((r for r in s.reviews if reviews and r.id == reviews[-1]), None)
    if last is not None:
        lines.append(f"\n  reviewer's verdict {last.id}: {last.verdict} — {clip(last.reasoning, 1000)}")
    return "".join(lines)


def questions_cap(s: ResearchState, c: Controls) -> str:
    """The cap on open questions, as the orchestrator is told it (empty when there is none)."""
    if c.views != "paper" or c.max_open_questions <= 0:
        return ""
    n = sum(r.status == "open" for r in s.rqs)
    full = " — the cap is reached: turn one into a hypothesis or drop it before asking another" \
        if n >= c.max_open_questions else ""
    return f"At most {c.max_open_questions} open question(s) at a time ({n} open now{full}).\n"


def for_orchestrator(p: Problem, s: ResearchState, w: Windows, *, new_evidence: list[Evidence],
                     new_reviews: list[str], events: list[str], human: list[str], gates: list[str],
                     max_workers: int, controls: Controls = Controls()) -> RolePrompt:
    shown = events[-w.events:]
    ev_lines = "\n".join(shown) + (f"\n({len(events) - len(shown)} earlier events not shown)"
                                   if len(events) > len(shown) else "")
    where = f"Iteration {s.iteration}"
    if controls.max_iterations is not None:
        left = max(0, controls.max_iterations - s.iteration)
        where += f" of {controls.max_iterations} ({left} remain{'s' if left == 1 else ''})"
    if gates:
        gate_text = "\n".join(f"- {g}" for g in gates)
    else:  # physics-intern shows what is pending only when something is (its PENDING WORK)
        gate_text = "" if controls.views == "paper" else \
            "none: completion would be accepted now (if the established results determine the answer)"
    return render("orchestrator", orchestrator_sections(p, s, w, controls) | {
        "messages-from-the-physicist": "\n".join(human[-w.humans:]),
        "new-evidence": "\n".join(evidence_text(e, w, with_code=False) for e in new_evidence),
        "new-verification-results": "\n".join(new_reviews), "system-events": ev_lines,
        "completion-gates": gate_text,
        "run-signals": run_signals(s, controls),
        "turn": f"{where}. " + ("Integrate what is new, then end the turn with ONE of: propose a hypothesis (it is "
                                "reviewed at once), dispatch one worker, or declare the research complete."
                                if controls.one_exit else
                                f"Integrate what is new, then either dispatch up to {max_workers} independent "
                                "task(s) (at most one per target) or declare the research complete.")})


def for_worker(role: str, p: Problem, s: ResearchState, w: Windows, *, target: str, instructions: str,
               method_hints: str, relevant: list[str], views: str = "physlab") -> RolePrompt:
    """``views="paper"``: physics-intern's workers see the conventions and the established results,
    not the strategy, the sanity checks, the pitfalls or earlier attempts (agents/evidence_base.py)."""
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
    paper = views == "paper"
    return render(role, problem_sections(p) | {
        "conventions": conventions_text(s), "strategy": "" if paper else clip(s.strategy, w.field_chars),
        "sanity-checks": "" if paper else checks_text(s), "known-pitfalls": "" if paper else pitfalls_text(s),
        "established-results": ers_text(s, w), "target": f"{target}: {target_text}",
        "relevant-results": "\n".join(er_line(e, w) for e in rel),
        "earlier-attempts": "" if paper else earlier_attempts(s, target, w), "instructions": instructions,
        "method-hints": method_hints, "turn": ask})


def questions_of(s: ResearchState, h: WorkingHypothesis) -> str:
    """The research questions the hypothesis's evidence answers."""
    targets = list(dict.fromkeys(e.target for e in s.evidence if e.id in h.evidence and e.target.startswith("RQ-")))
    return "\n".join(f"{r.id}: {clip(r.question, 600)}" for t in targets if (r := s.rq(t)) is not None)


def _the_wh(s: ResearchState, wh_id: str | None) -> WorkingHypothesis:
    h = s.wh(wh_id) if wh_id is not None else None
    if h is None:
        raise KeyError(f"unknown working hypothesis id {wh_id!r}")
    return h


def _the_er(s: ResearchState, er_id: str | None) -> EstablishedResult:
    e = s.er(er_id) if er_id is not None else None
    if e is None:
        raise KeyError(f"unknown established result id {er_id!r}")
    return e


def for_reviewer(p: Problem, s: ResearchState, w: Windows, wh_id: str, *, views: str = "physlab",
                 history: bool = True) -> RolePrompt:
    """``views="paper"``: no <builds-on> (physics-intern's reviewer is not shown its dependencies'
    status); ``history=False``: no <review-history> (it sees the claim and its evidence only)."""
    h = _the_wh(s, wh_id)
    evs = [e for e in s.evidence if e.id in h.evidence]
    again = (f" It was judged before ({', '.join(h.reviews)}; see <review-history>): judge it afresh on all the "
             "evidence, and say whether the new evidence answers the earlier objections."
             if h.reviews and history else "")
    return render("reviewer", problem_sections(p) | {
        "conventions": conventions_text(s), "sanity-checks": checks_text(s), "known-pitfalls": pitfalls_text(s),
        "established-results": ers_text(s, w), "question": questions_of(s, h),
        "claim": f"{h.id}: {h.claim}" + (f"\nvalue: {h.value}" if h.value else ""),
        "builds-on": "" if views == "paper" else "\n".join(dependency_status(s, d) for d in h.depends_on),
        "supporting-evidence": "\n".join(evidence_text(e, w) for e in evs),
        "review-history": review_history(s, wh_id, w) if history else "",
        "turn": f"Examine {h.id} adversarially and give your verdict.{again}"})


def for_critic(p: Problem, s: ResearchState, w: Windows, *, max_critiques: int,
               controls: Controls = Controls()) -> RolePrompt:
    closed = [c for c in s.critiques if c.status != "open"]
    c0 = window_start(len(closed), w.critiques)
    shown = closed[c0:] + [c for c in s.critiques if c.status == "open"]        # open ones always, in full
    prev = "\n".join(([f"({c0} older closed critiques not shown)"] if c0 else []) + [
        f"{c.id} [{c.status}] ({c.source}, {c.severity}, {c.target_type}{' ' + c.target if c.target else ''}, "
        f"{c.kind}): " + (c.text if c.status == "open" else clip(c.text, 400))
        + (f"\n  ruling: {clip(c.ruling, 400)}" if c.ruling else "") for c in shown])
    paper = controls.views == "paper"       # physics-intern's critic: each claim with its evidence and review
    if paper and s.clean_audits:            # and its own audits that filed nothing
        prev += ("\n" if prev else "") + "Audits that filed no critique:\n" + "\n".join(
            f"iteration {a.iteration}: {clip(a.assessment, 400) or '(no assessment)'}" for a in s.clean_audits[-w.critiques:])
    ers = "\n".join(er_line(e, w) + claim_record(s, e.evidence, [e.review]) for e in s.active_ers()) if paper \
        else ers_text(s, w)
    return render("critic", problem_sections(p) | {
        "background-survey": survey_text(s, w), "conventions": conventions_text(s), "strategy": s.strategy,
        "sanity-checks": checks_text(s), "established-results": ers,
        "demoted-results": "" if paper else demoted_text(s, w),
        "hypotheses": working_text(s, w, reviews=True) if paper else hypotheses_text(s, w),
        "research-questions": rqs_text(s, w),
        "dead-ends": "" if paper else dead_ends_text(s, w), "previous-critiques": prev,
        "run-signals": "" if paper else run_signals(s, controls, for_critic=True),
        "turn": f"Iteration {s.iteration}. Audit the research as a whole. File at most {max_critiques} "
                "critiques, the most important first; if you file none, say in the assessment what you checked "
                "and why it holds."})


def for_adjudicator(p: Problem, s: ResearchState, w: Windows, critique: Critique, *, views: str = "physlab",
                    history: bool = True) -> RolePrompt:
    """``views="paper"``: the other established results (not the one under challenge, which has its
    own section) and no <builds-on>, as physics-intern's adjudicator; ``history=False``: no
    <review-history>."""
    e = _the_er(s, critique.target)
    evs = [x for x in s.evidence if x.id in e.evidence]
    rv = next((r for r in s.reviews if r.id == e.review), None)
    verified = f"\nverified by {rv.id}: {clip(rv.reasoning, 800)}" if rv is not None and rv.reasoning else ""
    return render("adjudicator", problem_sections(p) | {
        "conventions": conventions_text(s), "sanity-checks": checks_text(s), "known-pitfalls": pitfalls_text(s),
        "established-results": "\n".join(er_line(x, w) for x in s.active_ers() if x.id != e.id)
                               if views == "paper" else ers_text(s, w),
        "established-result": er_line(e, w) + verified,
        "builds-on": "" if views == "paper" else "\n".join(dependency_status(s, d) for d in e.depends_on),
        "supporting-evidence": "\n".join(evidence_text(x, w) for x in evs),
        "review-history": review_history(s, e.wh, w) if history else "",
        "critique": _critique_line(critique),
        "turn": f"Rule on {critique.id}: uphold (then {e.id} is demoted), dismiss, or needs_evidence (then {e.id} "
                "is demoted until the evidence you name is in)."})


def answer_structure(s: ResearchState, w: Windows, *, forced: bool) -> str:
    ids = [i for i in s.answer_results if (e := s.er(i)) is not None and e.status == "active"]
    if ids:
        return "The orchestrator names these results as the answer, in order:\n" + "\n".join(
            er_line(_the_er(s, i), w) for i in ids)
    if forced and s.best_answer is not None:
        return f"No completion named the answer; the best current answer comes from {s.best_answer.source}."
    return ""


def for_formatter(p: Problem, s: ResearchState, w: Windows, *, forced: bool, reason: str = "",
                  views: str = "physlab", always: bool = False) -> RolePrompt:
    """``always``: the forced formatter must fill the template from whatever the lab has, unreviewed
    hypotheses too, and is shown every hypothesis still in play (physics-intern's forced formatter,
    agents/formatter/context.py); ``views="paper"``: no demoted results or standing."""
    if forced and always:
        ask = (f"The run is ending ({reason or 'budget exhausted'}). You MUST fill the template: take each part "
               "from the established results where they have it, otherwise from the hypotheses in "
               "<best-hypotheses> (reviewed or not), marking in the code a value that is not established with a "
               "comment naming its WH-n. Name in `sources` what you used.")
    elif forced:
        ask = (f"The run is ending ({reason or 'budget exhausted'}). Write the best answer the lab has: from the "
               "established results where they suffice, otherwise from the demoted results or the best hypotheses. "
               "Name in `sources` every ER-n or WH-n you used (an answer that names none is no answer); say "
               "plainly in the Markdown what is not established.")
    else:
        ask = ("The orchestrator declared the research complete. Fill the answer from the established results "
               "ONLY, naming in `sources` the ER-n each part comes from; or set ready to false and say what is "
               "missing.")
    return render("formatter", problem_sections(p) | {
        "conventions": conventions_text(s), "sanity-checks": checks_text(s), "established-results": ers_text(s, w),
        "answer-structure": answer_structure(s, w, forced=forced),
        "demoted-results": demoted_text(s, w) if forced and views != "paper" else "",
        "best-hypotheses": ("\n".join(wh_line(h, w) + f"\n  reviews: {', '.join(_verdicts(s, h))}"
                                      for h in (in_play(s) if always else best_hypotheses(s))) if forced else ""),
        "best-current-answer": standing_text(s, s.best_answer) if forced and s.best_answer and views != "paper"
                               else "",
        "turn": f"Iteration {s.iteration}. {ask}"})


def _verdicts(s: ResearchState, h: WorkingHypothesis) -> list[str]:
    return [f"{r.id} {r.verdict}" for r in s.reviews if r.wh == h.id] or ["none yet"]


def in_play(s: ResearchState) -> list[WorkingHypothesis]:
    """Every hypothesis neither established nor abandoned, newest first."""
    return [h for h in reversed(s.whs) if h.status not in ("established", "abandoned")]
