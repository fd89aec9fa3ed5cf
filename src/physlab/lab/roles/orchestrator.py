"""Orchestrator: reads the state, manages questions/hypotheses/notes/dead ends, dispatches
workers and declares completion. Its tools apply pure transitions to a working copy of the state;
a refused transition (unknown id, wrong status, ...) goes back to the model as a correction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext

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


@dataclass
class Desk:
    """The orchestrator's working copy of the state during one call."""

    state: ResearchState
    max_dispatches: int
    actions: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start = self.state

    def restart(self) -> None:
        """Back to the state the call began with: a call sent again with a shorter prompt (its
        server refused the longer one) must not apply its transitions twice."""
        self.state, self.actions, self.refused = self.start, [], []

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


def create_research_question(ctx: RunContext[Desk], question: str, rationale: str = "") -> str:
    """Create an atomic research question, answerable by one researcher or computer call.

    Args:
        question: The question, self-contained (the worker sees it, not your reasoning).
        rationale: Why it is needed for the answer.
    """
    rid = ctx.deps.apply(T.create_rq, question, rationale)
    ctx.deps.actions.append(f"created {rid}")
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
    wid = ctx.deps.apply(T.propose_wh, claim=claim, value=value, evidence=evidence_ids, depends_on=depends_on or [])
    ctx.deps.actions.append(f"proposed {wid}")
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
    ctx.deps.actions.append(f"revised {hypothesis_id}")
    return f"Revised {hypothesis_id}; it will be reviewed again."


def close_question(ctx: RunContext[Desk], question_id: str, status: Literal["answered", "dropped"] = "answered") -> str:
    """Mark a research question answered or dropped.

    Args:
        question_id: The RQ-n id.
        status: answered or dropped.
    """
    ctx.deps.apply(T.close_rq, question_id, status)
    ctx.deps.actions.append(f"closed {question_id} ({status})")
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
    ctx.deps.actions.append(f"abandoned {hypothesis_id}")
    return f"{hypothesis_id} abandoned ({did})."


def add_research_note(ctx: RunContext[Desk], text: str) -> str:
    """Keep a short research note (plans, caveats, partial insights).

    Args:
        text: The note.
    """
    nid = ctx.deps.apply(T.add_note, text)
    ctx.deps.actions.append(f"note {nid}")
    return f"Noted as {nid}."


def record_dead_end(ctx: RunContext[Desk], description: str, related_ids: list[str] | None = None) -> str:
    """Record an approach that failed, so nobody repeats it.

    Args:
        description: What was tried and why it failed.
        related_ids: RQ-n, WH-n, EV-n, ER-n or CR-n ids it concerns.
    """
    did = ctx.deps.apply(T.add_dead_end, description, related_ids or [])
    ctx.deps.actions.append(f"dead end {did}")
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
    if correct_or_drop(ctx, problems, "Submit the decision again with these fixed."):
        ctx.deps.refused.extend(problems)
        d = d.model_copy(update={"answer_results": [i for i in d.answer_results if i in active]})
        seen: set[str] = set()
        keep = []
        for o in d.dispatches:
            if o.target not in unknown and o.target not in dead and o.target not in seen:
                seen.add(o.target)
                keep.append(o)
        d = d.model_copy(update={"dispatches": keep})
    if len(d.dispatches) > ctx.deps.max_dispatches:
        ctx.deps.refused.append(f"{len(d.dispatches)} dispatches requested; only the first {ctx.deps.max_dispatches} run")
        d = d.model_copy(update={"dispatches": d.dispatches[: ctx.deps.max_dispatches]})
    return d


async def run(env: LabEnv, desk: Desk, user_prompt: PromptSource,
              on_request: Callable[[], None] | None = None) -> Decision:
    """``on_request``: called before each of the call's model requests, ``desk.state`` then holding
    every transition the model has made so far."""
    return await run_role(env, ROLE, user_prompt, Decision, tools=TOOLS, deps=desk,
                          output_name="submit_decision", output_validator=_validate, on_request=on_request,
                          on_attempt=desk.restart)


