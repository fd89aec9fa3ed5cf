"""Orchestrator: reads the state, manages questions/hypotheses/notes/dead ends, dispatches
workers and declares completion. Its tools apply pure transitions to a working copy of the state;
a refused transition (unknown id, wrong status, ...) goes back to the model as a correction.

``Flow`` holds physics-intern's flow control (agents/orchestrator/tools.py), each rule a lab
parameter (off by default, on with ``preset=paper``): one exit a turn (a hypothesis, a dispatch or
completion), caps on the hypotheses in play, the open questions and the evidence on one question,
one question worked at a time, no worker on a question while a refuted or inconclusive hypothesis
stands, nothing new while a HIGH critique is open, a proposal closing the questions it answers,
and a summary of the state after each round of tool calls that does not end the turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart

from physlab.lab.roles._base import LabEnv, PromptSource, correct_or_drop, run_role
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState

ROLE = "orchestrator"


class DispatchOrder(BaseModel):
    worker: Literal["researcher", "computer"]
    target: str = Field(description="The RQ-n or WH-n the worker investigates (one worker per target per turn).")
    instructions: str = Field(description="A clear, focused task: what to produce.")
    method_hints: str = ""
    relevant_results: list[str] = Field(default_factory=list, description="ER-n ids the worker should build on.")


class Decision(BaseModel):
    dispatches: list[DispatchOrder] = Field(default_factory=list,
                                            description="Independent tasks to run now (may run in parallel).")
    complete: bool = Field(default=False, description="True when the established results determine the answer.")
    answer_results: list[str] = Field(default_factory=list, description="With complete: the ER-n ids that make up "
                                                                        "the answer, in order.")
    request_audit: bool = Field(default=False, description="Ask the senior critic to audit the state now.")
    summary: str = Field(default="", description="One or two sentences: what you did and why.")


@dataclass(frozen=True)
class Flow:
    """physics-intern's flow control for one orchestrator turn (all off: PhysLab's own)."""

    one_exit: bool = False
    max_working: int = 0              # hypotheses in play (0: no cap)
    max_open_questions: int = 0
    evidence_cap: int = 0             # evidence on one open question before dispatch stops
    serial: bool = False
    unresolved_blocks: bool = False
    high_blocks: bool = False
    summary: bool = False
    closes_question: bool = False
    max_iterations: int = 0           # for the summary's budget line
    budget_warning: int = 3
    max_refutations: int = 2


@dataclass
class Desk:
    """The orchestrator's working copy of the state during one call."""

    state: ResearchState
    max_dispatches: int
    flow: Flow = field(default_factory=Flow)
    actions: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    exited: str = ""                  # with Flow.one_exit: the exit this turn took ("proposal")
    round_changes: list[str] = field(default_factory=list)   # what the current round of tool calls did

    def __post_init__(self) -> None:
        self.start = self.state

    def restart(self) -> None:
        """Back to the state the call began with: a call sent again with a shorter prompt (its
        server refused the longer one) must not apply its transitions twice."""
        self.state, self.actions, self.refused, self.exited, self.round_changes = self.start, [], [], "", []

    def apply(self, fn, *args, **kwargs):
        try:
            out = fn(self.state, *args, **kwargs)
        except T.TransitionError as exc:
            self.refused.append(str(exc))
            raise ModelRetry(f"Refused: {exc}. Use ids that appear in the research state.") from None
        if isinstance(out, tuple):
            self.state, new_id = out
            return new_id
        self.state = out
        return None

    def refuse(self, why: str) -> None:
        """A rule of the flow says no: back to the model, on the record."""
        self.refused.append(why)
        raise ModelRetry(f"Refused: {why}")

    def changed(self, what: str) -> None:
        self.actions.append(what)
        self.round_changes.append(what)


def high_critiques(s: ResearchState) -> list[str]:
    return [c.id for c in s.open_critiques() if c.severity == "HIGH"]


def in_play(s: ResearchState) -> list[str]:
    """Hypotheses neither established nor abandoned (physics-intern's working hypotheses)."""
    return [w.id for w in s.whs if w.status not in ("established", "abandoned")]


def question_evidence(s: ResearchState, rq: str) -> int:
    return sum(e.target == rq for e in s.evidence)


def dispatch_problem(s: ResearchState, target: str, flow: Flow) -> str:
    """Why the flow refuses a worker on ``target`` (empty: it does not)."""
    opened = [r for r in s.rqs if r.status == "open"]
    if flow.evidence_cap:
        full = [f"{r.id} ({n} evidence)" for r in opened if (n := question_evidence(s, r.id)) >= flow.evidence_cap]
        if full:
            return (f"dispatch blocked: {', '.join(full)} reached {flow.evidence_cap} pieces of evidence; turn it "
                    "into a hypothesis (propose_hypothesis) or drop it (close_question) first")
    if not target.startswith("RQ-"):
        return ""
    if flow.unresolved_blocks:
        dangling = [f"{w.id} ({w.status})" for w in s.whs if w.status in ("refuted", "inconclusive")]
        if dangling:
            return (f"dispatch to {target} blocked: {', '.join(dangling)} must be resolved first (new evidence on "
                    "it, or abandon it)")
    if flow.serial:
        others = [f"{r.id} ({question_evidence(s, r.id)} evidence)" for r in opened
                  if r.id != target and question_evidence(s, r.id)]
        if others:
            return (f"dispatch to {target} blocked: one question at a time; finish {', '.join(others)} first "
                    "(a hypothesis from it, or drop it)")
    return ""


def create_research_question(ctx: RunContext[Desk], question: str, rationale: str = "") -> str:
    """Create an atomic research question, answerable by one researcher or computer call.

    Args:
        question: The question, self-contained (the worker sees it, not your reasoning).
        rationale: Why it is needed for the answer.
    """
    d, flow = ctx.deps, ctx.deps.flow
    opened = [r.id for r in d.state.rqs if r.status == "open"]
    if flow.max_open_questions and len(opened) >= flow.max_open_questions:
        d.refuse(f"{len(opened)} open question(s) ({', '.join(opened)}), at most {flow.max_open_questions} at a "
                 "time: turn one into a hypothesis, drop it, or keep working on it")
    if flow.high_blocks and (high := high_critiques(d.state)):
        d.refuse(f"{', '.join(high)} (HIGH) open: no new question until it is resolved")
    rid = d.apply(T.create_rq, question, rationale)
    d.changed(f"created {rid}")
    return f"Created {rid}."


def propose_hypothesis(ctx: RunContext[Desk], claim: str, evidence_ids: list[str], value: str = "",
                       depends_on: list[str] | None = None) -> str:
    """Formulate a concrete, falsifiable working hypothesis (with its value) resting on evidence
    ids (EV-n) and, optionally, on other hypotheses (WH-n). It is sent to review automatically.

    Args:
        claim: The claim, self-contained: definitions, conventions and scope stated (the reviewer never sees the question).
        evidence_ids: EV-n ids of the evidence it rests on.
        value: The value or expression claimed, exactly as the evidence gives it.
        depends_on: WH-n ids of hypotheses this claim builds on.
    """
    d, flow = ctx.deps, ctx.deps.flow
    if flow.one_exit and d.exited:
        d.refuse(f"this turn already ended with a {d.exited}: one exit a turn")
    if flow.max_working and len(working := in_play(d.state)) >= flow.max_working:
        d.refuse(f"already {len(working)} hypotheses in play ({', '.join(working)}), at most {flow.max_working}: "
                 "let them be reviewed and promoted, or abandon one, before proposing another")
    if flow.high_blocks and (high := high_critiques(d.state)):
        d.refuse(f"{', '.join(high)} (HIGH) open: no new hypothesis until it is resolved")
    wid = d.apply(T.propose_wh, claim=claim, value=value, evidence=evidence_ids, depends_on=depends_on or [])
    d.changed(f"proposed {wid}")
    if flow.closes_question:       # upstream's add_hypothesis resolves the question it comes from
        answered = {e.target for e in d.state.evidence if e.id in evidence_ids and e.target.startswith("RQ-")}
        for rq in sorted(answered):
            if (r := d.state.rq(rq)) is not None and r.status == "open":
                d.apply(T.close_rq, rq, "answered")
                d.changed(f"closed {rq} (answered)")
    if flow.one_exit:
        d.exited = "proposal"
        return f"Proposed {wid}; it is reviewed now. This ends your turn: submit your decision with nothing more."
    return f"Proposed {wid}; it will be reviewed automatically."


def revise_hypothesis(ctx: RunContext[Desk], hypothesis_id: str, add_evidence_ids: list[str],
                      claim: str = "", value: str = "") -> str:
    """Attach NEW evidence to (and optionally restate) a hypothesis that is not established; it goes
    back to review. A hypothesis that already had a verdict needs evidence newer than that verdict.

    Args:
        hypothesis_id: The WH-n id.
        add_evidence_ids: EV-n ids of the new evidence.
        claim: The restated claim (empty: unchanged).
        value: The restated value (empty: unchanged).
    """
    ctx.deps.apply(T.revise_wh, hypothesis_id, claim=claim or None, value=value or None, add_evidence=add_evidence_ids)
    ctx.deps.changed(f"revised {hypothesis_id}")
    return f"Revised {hypothesis_id}; it will be reviewed again."


def close_question(ctx: RunContext[Desk], question_id: str, status: Literal["answered", "dropped"] = "answered") -> str:
    """Mark a research question answered or dropped.

    Args:
        question_id: The RQ-n id.
        status: answered or dropped.
    """
    ctx.deps.apply(T.close_rq, question_id, status)
    ctx.deps.changed(f"closed {question_id} ({status})")
    return f"{question_id} is {status}."


def abandon_hypothesis(ctx: RunContext[Desk], hypothesis_id: str, reason: str) -> str:
    """Give up a hypothesis that is not established: it becomes a dead end with your reason, and
    what builds on it is abandoned with it. Use it for a claim the evidence has answered against,
    or a competing claim that an established result settles.

    Args:
        hypothesis_id: The WH-n id.
        reason: Why, naming the results or verdicts that show it.
    """
    did = ctx.deps.apply(T.abandon_wh, hypothesis_id, reason, by="orchestrator")
    ctx.deps.changed(f"abandoned {hypothesis_id}")
    return f"{hypothesis_id} abandoned ({did})."


def add_research_note(ctx: RunContext[Desk], text: str) -> str:
    """Keep a short research note (plans, caveats, partial insights).

    Args:
        text: The note.
    """
    nid = ctx.deps.apply(T.add_note, text)
    ctx.deps.changed(f"note {nid}")
    return f"Noted as {nid}."


def record_dead_end(ctx: RunContext[Desk], description: str, related_ids: list[str] | None = None) -> str:
    """Record an approach that failed, so nobody repeats it.

    Args:
        description: What was tried and why it failed.
        related_ids: RQ-n, WH-n, EV-n, ER-n or CR-n ids it concerns.
    """
    did = ctx.deps.apply(T.add_dead_end, description, related_ids or [])
    ctx.deps.changed(f"dead end {did}")
    return f"Recorded {did}."


TOOLS = [create_research_question, propose_hypothesis, revise_hypothesis, abandon_hypothesis, close_question,
         add_research_note, record_dead_end]


def _validate(ctx: RunContext[Desk], d: Decision) -> Decision:
    """Dispatches must name a live RQ-n or WH-n, at most one worker each. Wrong ones go back as a
    correction; on the last try the valid dispatches run and the rest are refused on the record."""
    s = ctx.deps.state
    unknown = [o.target for o in d.dispatches if not (o.target.split("-")[0] in ("RQ", "WH") and s.find(o.target))]
    dead = [o.target for o in d.dispatches if (w := s.wh(o.target)) is not None and w.status == "abandoned"]
    targets = [o.target for o in d.dispatches]
    twice = sorted({t for t in targets if targets.count(t) > 1})
    active = {e.id for e in s.active_ers()}
    if not d.complete and d.answer_results:          # only a completion names the answer
        d = d.model_copy(update={"answer_results": []})
    not_ers = [i for i in d.answer_results if i not in active]
    problems = []
    if not_ers:
        problems.append(f"answer_results names {not_ers}, which are not active established results "
                        f"(active: {sorted(active) or 'none'})")
    if unknown:
        problems.append(f"unknown dispatch target(s) {unknown}: create the research question first, then dispatch it")
    if dead:
        problems.append(f"{dead} abandoned as a dead end: propose a new hypothesis or ask a new question instead")
    if twice:
        problems.append(f"{twice} dispatched more than once: one worker per target per turn (merge the tasks, or "
                        "create separate research questions for independent parts)")
    flow, desk = ctx.deps.flow, ctx.deps
    blocked = {o.target: why for o in d.dispatches if (why := dispatch_problem(s, o.target, flow))}
    problems += list(dict.fromkeys(blocked.values()))
    exits = (["a hypothesis"] if desk.exited else []) + (["dispatch"] if d.dispatches else []) + \
        (["completion"] if d.complete else [])
    if flow.one_exit and len(exits) > 1:
        problems.append(f"one exit a turn: this turn has {' and '.join(exits)}; keep one")
    if correct_or_drop(ctx, problems, "Submit the decision again with these fixed."):
        ctx.deps.refused.extend(problems)
        d = d.model_copy(update={"answer_results": [i for i in d.answer_results if i in active]})
        seen: set[str] = set()
        keep = []
        for o in d.dispatches:
            if o.target not in unknown and o.target not in dead and o.target not in seen and o.target not in blocked:
                seen.add(o.target)
                keep.append(o)
        d = d.model_copy(update={"dispatches": keep})
        if flow.one_exit and (desk.exited or d.complete):   # the first exit stands (upstream ignores a second)
            d = d.model_copy(update={"dispatches": []})
            if desk.exited:
                d = d.model_copy(update={"complete": False, "answer_results": []})
    if len(d.dispatches) > ctx.deps.max_dispatches:
        ctx.deps.refused.append(f"{len(d.dispatches)} dispatches requested; only the first {ctx.deps.max_dispatches} run")
        d = d.model_copy(update={"dispatches": d.dispatches[: ctx.deps.max_dispatches]})
    return d


def summary(desk: Desk) -> str:
    """The state after a round of the orchestrator's tool calls, and what is pending (physics-intern
    shows this after each round of mutations that does not end the turn)."""
    s = desk.state
    lines = ["State after your changes. Applied: " + "; ".join(desk.round_changes) + "."]
    ers = [f"{e.id} ({e.claim[:50]})" for e in s.active_ers()]
    if ers:
        lines.append("Established: " + ", ".join(ers))
    whs = [f"{w.id} ({w.status})" for w in s.whs if w.status not in ("established", "abandoned")]
    if whs:
        lines.append("Hypotheses in play: " + ", ".join(whs))
    opened = [f"{r.id} ({question_evidence(s, r.id)} evidence)" for r in s.rqs if r.status == "open"]
    if opened:
        lines.append("Open questions: " + ", ".join(opened))
    pending = []
    flow = desk.flow
    left = flow.max_iterations - s.iteration
    if flow.max_iterations and left <= flow.budget_warning and ers:
        pending.append(f"only {left} iteration(s) left: synthesise now and state what stays unresolved")
    for w in s.whs:
        if w.status == "verified":
            pending.append(f"{w.id} is VERIFIED and waits on what it builds on to be promoted")
        elif w.status == "refuted":
            pending.append(f"{w.id} was REFUTED ({s.refutations(w.id)} of {flow.max_refutations}): new evidence "
                           "on it, or abandon it")
        elif w.status == "inconclusive":
            pending.append(f"{w.id} is INCONCLUSIVE: new evidence on it, or abandon it")
        elif w.status == "proposed":
            pending.append(f"{w.id} awaits review")
    for r in s.rqs:
        if r.status == "open" and question_evidence(s, r.id):
            pending.append(f"{r.id} has evidence: propose a hypothesis from it")
    if not opened and not whs and ers:
        pending.append("every question and hypothesis is resolved: you may complete")
    pending.append("when ready, end the turn: propose a hypothesis, dispatch one worker, or complete")
    return "\n".join(lines + ["Pending:"] + [f"- {p}" for p in pending])


def summary_after_rounds(desk: Desk) -> Any:
    """A pydantic-ai capability adding the state summary as a user message after the tool returns of
    a round that changed the state (before the model's next request)."""

    def add(messages: list[ModelMessage]) -> list[ModelMessage]:
        last = messages[-1] if messages else None
        if not desk.round_changes or desk.exited or not isinstance(last, ModelRequest) or \
                not any(isinstance(p, ToolReturnPart) for p in last.parts):
            return messages          # (a round that ended the turn gets no summary: upstream's call ends there)
        text = summary(desk)
        desk.round_changes = []
        return [*messages[:-1], replace(last, parts=[*last.parts, UserPromptPart(text)])]

    return ProcessHistory(add)


async def run(env: LabEnv, desk: Desk, user_prompt: PromptSource,
              on_request: Callable[[], None] | None = None) -> Decision:
    """``on_request``: called before each of the call's model requests, ``desk.state`` then holding
    every transition the model has made so far."""
    return await run_role(env, ROLE, user_prompt, Decision, tools=TOOLS, deps=desk,
                          output_name="submit_decision", output_validator=_validate, on_request=on_request,
                          on_attempt=desk.restart,
                          capabilities=[summary_after_rounds(desk)] if desk.flow.summary else [])


