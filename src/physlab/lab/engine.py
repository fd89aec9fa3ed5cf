"""The research loop.

Before the loop: surveyor, then planner. Each iteration: take in human messages (inbox), route
open critiques (ER -> adjudicator, others -> planner), one orchestrator turn, automatic review of
every proposed hypothesis (independent ones concurrently, begun while the orchestrator's call goes
on where that cannot change what the reviewer is shown; promotion is automatic), then either
completion or the dispatched workers (concurrently, bounded, merged in dispatch order), the critic
when due (alongside workers whose output it does not read), and one git commit carrying the best
current answer (state.json and a provisional ANSWER.md). Whatever runs concurrently is merged in a
fixed order: the state never depends on which call finishes first. Budgets end the
loop with a forced formatter that sees every result and the best hypotheses (status
``partially_complete``); if even that fails, the best current answer is the answer.

Completion is gated in code (``gates.completion_blockers``): something established, no
hypothesis awaiting review or left undecided beside the answer, no open critique or question, and
a senior-critic audit after the last change to the established results (the engine runs the audit
itself when that is all that is missing); the formatter's answer must rest on established results
only, and its bounce-backs are bounded (``max_format_bounces``). Loop controls (after
physics-intern's): a hypothesis that keeps failing review is escalated to the planner, old
low-severity critiques expire, completion refused again and again trips a circuit breaker, the
orchestrator is told how many iterations remain, and a worker sent back to a target is told how
the earlier attempts failed. The run keeps room in the budget for the forced formatter (the
meter's ``set_aside``: a call and ``FORMATTER_SHARE`` of a token or cost cap): the final answer is
written within the budget.

Every call gets a fresh context built from the state for that role only. Model output is not
trusted: refused transitions and unknown ids go back to the model as corrections; on its last try
the valid part of its output is kept and the rest is recorded as refused. A role call that still
fails is recorded as a system event and the run goes on; what it was shown (new evidence, events)
is shown again at its next call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from physlab.lab import answer as A, context as C, gates, inbox, integration_checks, routing
from physlab.lab.early_reviews import EarlyReviews
from physlab.lab.roles import (
    ROLES,
    adjudicator,
    computer,
    critic,
    formatter,
    orchestrator,
    planner,
    researcher,
    reviewer,
    surveyor,
)
from physlab.lab.roles._base import NO_STANDARDS_LEVEL, LabEnv
from physlab.lab.state import transitions as T
from physlab.lab.state.models import Critique, ResearchState, Script, Survey
from physlab.lab.tools import LabTools
from physlab.lab.workspace import RunWorkspace
from physlab.llm.errors import ContextTooLong, ModelFailure, budget_error, find_error
from physlab.run.checkpoints import record_best
from physlab.run.environment import RunEnvironment
from physlab.run.events import (
    CompletionRefused,
    CritiqueFiled,
    CritiqueResolved,
    EvidenceAdded,
    ForcedFormatter,
    FormatterBounce,
    Iteration,
    IterationEnd,
    ReviewDone,
    RunEvent,
    Step,
    System,
)
from physlab.run.git import CACHE

# Share of a token or cost cap kept for the forced formatter (PhysLab's choice: its prompt holds the
# results and best hypotheses, a small part of a run's reading).
FORMATTER_SHARE = 0.1


class LabSettings(BaseModel):
    max_iterations: int = Field(default=12, ge=1)
    critic_every: int = Field(default=2, ge=0, description="Critic audit every N iterations (0 = never scheduled).")
    parallel_workers: int = Field(default=3, ge=1, description="Concurrent worker calls (1 = sequential).")
    max_dispatches: int = Field(default=4, ge=1, description="Tasks one orchestrator turn may dispatch.")
    max_critiques: int = Field(default=4, ge=1, description="Critiques one audit may file.")
    max_refutations: int = Field(default=2, ge=1, description="REFUTED verdicts after which a hypothesis is "
                                                              "abandoned as a dead end.")
    max_format_bounces: int = Field(default=3, ge=1, description="Completions the formatter may send back before "
                                                                 "the run ends with the forced formatter.")
    code_timeout_s: float = Field(default=120.0, gt=0)
    code_memory_mb: int = Field(default=4096, gt=0)
    tool_retries: int = Field(default=3, ge=0)
    request_limit: int = Field(default=24, ge=2, description="Model requests allowed in one role call.")
    max_consecutive_failures: int = Field(default=3, ge=1)
    stall_limit: int = Field(default=2, ge=0, description="Verdicts short of VERIFIED in a row after which a "
                                                          "hypothesis is STALLED (0 = never).")
    critique_expiry: int = Field(default=3, ge=0, description="Iterations after which an unresolved MEDIUM or LOW "
                                                              "critique expires (0 = never; HIGH never expires).")
    max_refused_completions: int = Field(default=3, ge=1, description="Completions refused in a row before the "
                                                                      "circuit breaker abandons the hypotheses left "
                                                                      "unresolved and drops the open questions.")
    budget_warning: int = Field(default=3, ge=0, description="Iterations left at which the orchestrator is told to "
                                                             "synthesise.")
    max_scripts: int = Field(default=12, ge=1, description="Scripts a computer's evidence keeps (the first and the "
                                                           "newest when it ran more).")
    windows: dict[str, int] = Field(default_factory=dict, description="Overrides of context.Windows.")
    # What the roles may do and see, and the loop's controls, where PhysLab departs from
    # physics-intern (each listed with its source in strategies/lab.py; preset=paper gives upstream's).
    judges_compute: bool = Field(default=True, description="The reviewer and the adjudicator may run code "
                                                           "(execute_python, computer algebra) and are asked to "
                                                           "re-compute; false: no tools, they assess what is given.")
    computer_algebra: bool = Field(default=True, description="Offer the computer algebra systems the run's --tools "
                                                             "choose (false: Python only).")
    standards: bool = Field(default=True, description="Open the instructions of the roles that do or judge physics "
                                                      "with the lab's physics standards (roles/standards.md).")
    review_history: bool = Field(default=True, description="Show the reviewer and the adjudicator everything earlier "
                                                           "judges said about the claim.")
    early_reviews: bool = Field(default=True, description="Start reviews while the orchestrator is still at work "
                                                          "(with parallel_workers > 1).")
    role_views: Literal["physlab", "paper"] = Field(
        default="physlab", description="What each role is shown: PhysLab's sections, or physics-intern's (workers "
                                       "without the strategy, checks, pitfalls and earlier attempts; the critic with "
                                       "each claim's evidence and reviews; the judges without the dependencies' "
                                       "status).")
    one_exit_per_turn: bool = Field(default=False, description="An orchestrator turn ends with one of: a hypothesis "
                                                               "(reviewed at once), one dispatch, or completion; new "
                                                               "evidence on a hypothesis is reviewed in the same "
                                                               "iteration.")
    max_working_hypotheses: int = Field(default=0, ge=0, description="Hypotheses neither established nor abandoned "
                                                                     "at a time (0 = no cap).")
    max_open_questions: int = Field(default=0, ge=0, description="Open research questions at a time (0 = no cap).")
    question_evidence_cap: int = Field(default=0, ge=0, description="Evidence on one open question after which no "
                                                                    "worker is dispatched until it becomes a "
                                                                    "hypothesis or is dropped (0 = no cap).")
    serial_questions: bool = Field(default=False, description="Work one question at a time: no worker on a question "
                                                              "while another open question has evidence.")
    unresolved_blocks_dispatch: bool = Field(default=False, description="No worker on a question while a refuted "
                                                                        "or inconclusive hypothesis is unresolved.")
    high_critique_blocks: bool = Field(default=False, description="No new question or hypothesis while a HIGH "
                                                                  "critique is open.")
    state_summary: bool = Field(default=False, description="After each round of the orchestrator's tool calls that "
                                                           "does not end its turn, show it the state and what is "
                                                           "pending.")
    hypothesis_closes_question: bool = Field(default=False, description="Proposing a hypothesis closes the open "
                                                                        "questions its evidence answered.")
    critic_cadence: Literal["fixed", "after_verified"] = Field(
        default="fixed", description="fixed: every critic_every iterations; after_verified: after every VERIFIED "
                                     "review, and when critic_every iterations passed since the last audit.")
    upheld_abandons: bool = Field(default=False, description="An upheld critique abandons the demoted result's "
                                                             "hypothesis and what builds on it (false: they wait for "
                                                             "new evidence).")
    keep_refuted_evidence: bool = Field(default=True, description="Keep a refuted hypothesis's evidence when new "
                                                                  "evidence arrives (false: the new replaces it).")
    completion_gates: Literal["physlab", "paper"] = Field(
        default="physlab", description="physlab: PhysLab's gates (something established, nothing awaiting review, "
                                       "no open critique or question, no undecided hypothesis, an audit since the "
                                       "results changed); paper: physics-intern's (every question closed, every "
                                       "hypothesis established or abandoned, a critic pass once something passed "
                                       "review).")
    escalate_stalls: bool = Field(default=True, description="File a STALLED hypothesis as a HIGH critique for the "
                                                            "planner.")
    forced_answer: Literal["reviewed", "always"] = Field(
        default="reviewed", description="The forced formatter's answer at the end of a budget: reviewed (it must "
                                        "rest on a reviewed claim) or always (it fills the template from whatever "
                                        "the lab has, unreviewed hypotheses too).")
    best_guess_every: int = Field(default=0, ge=0, description="Write BEST_GUESS.md with the forced formatter every "
                                                               "N iterations (0 = never); no role reads it.")
    max_output_tokens: dict[str, int] = Field(default_factory=dict, description="Output-token limit per role (a role "
                                                                                "not named: the model's default).")
    post_integration_checks: bool = Field(default=False, description="After each orchestrator turn, strip VERIFIED "
                                                                     "labels that no review backs from the "
                                                                     "hypotheses and tell the orchestrator.")

    @field_validator("max_output_tokens")
    @classmethod
    def _known_roles(cls, limits: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(limits) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {', '.join(unknown)}; the roles are {', '.join(ROLES)}")
        if any(n < 1 for n in limits.values()):
            raise ValueError("an output-token limit is a positive number of tokens")
        return limits

    @property
    def controls(self) -> C.Controls:
        return C.Controls(max_iterations=self.max_iterations, stall_limit=self.stall_limit,
                          budget_warning=self.budget_warning, max_refused=self.max_refused_completions,
                          views=self.role_views, max_open_questions=self.max_open_questions,
                          one_exit=self.one_exit_per_turn)

    @property
    def flow(self) -> orchestrator.Flow:
        return orchestrator.Flow(one_exit=self.one_exit_per_turn, max_working=self.max_working_hypotheses,
                                 max_open_questions=self.max_open_questions,
                                 evidence_cap=self.question_evidence_cap, serial=self.serial_questions,
                                 unresolved_blocks=self.unresolved_blocks_dispatch,
                                 high_blocks=self.high_critique_blocks, summary=self.state_summary,
                                 closes_question=self.hypothesis_closes_question,
                                 max_iterations=self.max_iterations, budget_warning=self.budget_warning,
                                 max_refutations=self.max_refutations)


# The seed's setting (``--param preset=paper``): physics-intern as its public code runs it
# (config.default.yaml and the modules each parameter's source in strategies/lab.py names).
PAPER: dict[str, Any] = {
    "parallel_workers": 1, "max_dispatches": 1, "max_iterations": 40, "critic_every": 4, "max_critiques": 2,
    "judges_compute": False, "computer_algebra": False, "standards": False, "review_history": False,
    "early_reviews": False, "role_views": "paper", "one_exit_per_turn": True, "max_working_hypotheses": 2,
    "max_open_questions": 1, "question_evidence_cap": 3, "serial_questions": True,
    "unresolved_blocks_dispatch": True, "high_critique_blocks": True, "state_summary": True,
    "hypothesis_closes_question": True, "critic_cadence": "after_verified", "upheld_abandons": True,
    "keep_refuted_evidence": False, "completion_gates": "paper", "escalate_stalls": False,
    "forced_answer": "always", "best_guess_every": 10, "post_integration_checks": True,
    "max_output_tokens": {"orchestrator": 16384, "formatter": 16384, "computer": 65536, "reviewer": 65536,
                          "critic": 65536, "planner": 65536, "adjudicator": 65536},
}


@dataclass
class LabOutcome:
    state: ResearchState
    status: str
    stop_reason: str
    answer_code: str | None
    answer_text: str | None


def fatal(exc: BaseException) -> bool:
    """Errors that end the run instead of being recorded as one failed role call. A prompt that
    does not fit the context window even shortened is that role's failure, not the run's."""
    spent = budget_error(exc)
    return (spent is not None and not isinstance(spent, ContextTooLong)) or isinstance(exc, ModelFailure)


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


class LabEngine:
    def __init__(self, ctx: RunEnvironment, settings: LabSettings | None = None) -> None:
        self.ctx = ctx
        self.cfg = settings or LabSettings()
        self.ws = RunWorkspace(ctx.workspace)
        self.windows = C.Windows(**self.cfg.windows)
        self.env = LabEnv(ctx, code_timeout_s=self.cfg.code_timeout_s, code_memory_mb=self.cfg.code_memory_mb,
                          tool_retries=self.cfg.tool_retries, request_limit=self.cfg.request_limit,
                          notify=self.emit, judges_compute=self.cfg.judges_compute, standards=self.cfg.standards,
                          max_output_tokens=dict(self.cfg.max_output_tokens))
        self.views = self.cfg.role_views
        self._verified = False       # a review this iteration said VERIFIED (critic_cadence after_verified)
        self.state = ResearchState(problem_id=ctx.problem.id)
        self.failures = 0
        self.toolbox: LabTools | None = None
        self.summary: list[str] = []
        self.timings: list[dict[str, float]] = []     # engine overhead per iteration (benchmarks)

    # ------------------------------------------------------------------ helpers
    def emit(self, event: RunEvent) -> None:
        try:
            self.ctx.events(event)
        except Exception:  # noqa: BLE001 - a broken console must not stop research
            pass

    def _adjudicator_prompt(self, c: Critique, level: int) -> C.RolePrompt:
        """The adjudicator's prompt on critique ``c``, shorter at each ``level`` it does not fit."""
        return C.for_adjudicator(self.ctx.problem, self.state, self.windows.shrunk(level), c, views=self.views,
                                 history=self.cfg.review_history)

    def note(self, kind: str, text: str) -> None:
        self.state = T.system_event(self.state, kind, text)
        self.emit(System(what=kind, text=text))

    def _usage_data(self) -> dict[str, Any]:
        try:
            t = self.ctx.usage.total()
            return {"calls": t.calls, "tokens": t.total_tokens, "cost_usd": t.cost_usd}
        except Exception:  # noqa: BLE001
            return {}

    async def commit(self, message: str) -> None:
        """One commit per iteration, with the best current answer beside the state: a run killed
        after it still has an ANSWER.md that says how established its answer is. Git runs in a
        worker thread: its processes must not stall the event loop, which other runs share in a
        sweep."""
        t0 = time.perf_counter()
        self._take_sources()
        best = A.best_answer(self.state)
        if best != self.state.best_answer:
            self.state = T.set_best_answer(self.state, best)
        if best is not None:  # what the run would answer if stopped now, at what it has spent (bench report)
            record_best(self.ctx, f"iteration {best.iteration}", answer_text=f"{best.claim}\n\n{best.value}".strip())
        s = self.state
        if s.final_answer_code is None and s.final_answer_text is None:
            (self.ws.root / "answer.py").unlink(missing_ok=True)     # a provisional answer fills no template
            path = self.ws.root / "ANSWER.md"
            if best is None:
                path.unlink(missing_ok=True)
            else:
                note = (f"The run is paused ({s.stop_reason}); resume it with --resume." if s.status == "paused"
                        else "")
                path.write_text(A.provisional_markdown(s, best, note=note), encoding="utf-8")
        await asyncio.to_thread(self.ws.commit, self.state, message)
        self.summary = []
        self._commit_s = time.perf_counter() - t0

    # ------------------------------------------------------------------ public entry
    async def run(self, *, resume: bool = False, from_iteration: int | None = None) -> LabOutcome:
        """The research, with the run's tools beyond Python (--tools) open for its roles."""
        choice = self.ctx.tools if self.cfg.computer_algebra else self.ctx.tools.model_copy(update={"cas": False})
        async with LabTools(choice, self.env, self.ctx.workspace / CACHE / "literature",
                            iteration=lambda: self.state.iteration) as toolbox:
            self.env.toolbox = self.toolbox = toolbox
            try:
                return await self._research(resume=resume, from_iteration=from_iteration)
            finally:
                self.env.toolbox = None

    def _take_sources(self) -> None:
        """The passages roles cited since the last look, into the state (in a fixed order)."""
        cited = self.toolbox.take_cited() if self.toolbox is not None else []
        if cited:
            self.state = T.cite_sources(self.state, cited)

    async def _research(self, *, resume: bool, from_iteration: int | None) -> LabOutcome:
        p = self.ctx.problem
        # The forced formatter's room is kept within the budget (no request goes past a cap).
        self.ctx.usage.set_aside(calls=1, share=FORMATTER_SHARE)
        self.ws.init(problem_md=f"# {p.id}\n\n{p.statement}\n" + (
            f"\n## Answer template\n\n```python\n{p.answer_template}\n```\n" if p.answer_template else ""))
        loaded = self.ws.load() if resume else None
        if from_iteration is not None:
            loaded = self.ws.rewind(from_iteration)
        if loaded is not None:
            self.state = T.settle(loaded)     # a run saved before dependents were demoted with their base
            self._drop_stale_controls()
            if self._finished():
                if not self._has_new_messages():
                    return self._outcome()
                self.state = T.reopen(self.state, "reopened: the physicist sent messages after the run ended")
            elif self.state.final_answer_code is not None or self.state.final_answer_text is not None:
                # an answer forced at the end of a budget: the research goes on, so it no longer stands
                # (ANSWER.md is provisional again until the formatter writes a new one)
                self.state = T.reopen(self.state, f"resumed after it ended {self.state.status}; its forced answer "
                                                  "is set aside")
            if self.state.status != "running":
                self.state = T.set_status(self.state, "running")
            self.note("resume", f"resumed at iteration {self.state.iteration}")
        for line in self.toolbox.notices if self.toolbox is not None else ():
            self.note("tools", line)
        try:
            if self.state.survey is None:
                survey = await self._survey()  # (a failed call notes it in the state first)
                self.state = T.set_survey(self.state, survey)
            if not self.state.strategy:
                await self._plan([])
            if self.state.iteration == 0:
                await self.commit(f"iteration 0: survey and plan (strategy v{self.state.strategy_version}, "
                            f"{len(self.state.sanity_checks)} sanity checks)")
            while True:
                self.ctx.usage.check()
                if self.state.iteration >= self.cfg.max_iterations:
                    return await self._forced("max_iterations")
                if self.failures >= self.cfg.max_consecutive_failures:
                    return await self._forced("model_failures")
                done = await self._iteration()
                if done is not None:
                    return done
        except BaseException as exc:
            b = budget_error(exc)
            if b is None:
                if isinstance(exc, ModelFailure):       # provider down / replay diverged: keep the work
                    self.note("model_failure", _short(exc))
                    # state.json and RESEARCH_STATE.md say how the run ended, as metrics.json does
                    # (a resume sets it running again)
                    self.state = T.set_status(self.state, "error", f"model_failure: {_short(exc)}")
                    await self.commit(f"iteration {self.state.iteration}: interrupted (model failure)")
                raise
            self.note("budget", str(b))
            await self.commit(f"iteration {self.state.iteration}: interrupted ({b.limit})")
            return await self._forced(f"budget:{b.limit}")

    def _finished(self) -> bool:
        """A completed run (with a template answer, or a text answer for an open question)."""
        s = self.state
        return s.status == "complete" and (s.final_answer_code is not None or s.final_answer_text is not None)

    def _drop_stale_controls(self) -> None:
        """On --resume, a pause or stop that reached the run after it had ended (or a pause sent to
        a paused run) is taken in without effect: acting on it would turn the answer of a run the
        physicist chose to continue into no answer."""
        status, dropped = self.state.status, False
        for msg in inbox.pending(self.ws.root, self.state.inbox_consumed):
            if inbox.refusal(status, msg["kind"]) is None:
                continue
            self.state, hid = T.receive_human(self.state, kind=msg["kind"], text=str(msg.get("text", "")),
                                              on=msg.get("on"), inbox_id=msg["id"])
            self.note("human_ignored", f"{hid} {msg['kind']}: the run was already {status} when it was sent; "
                                       "resuming it continues the research")
            dropped = True
        if dropped:  # taken in for good: the next commit (an iteration's, or the run's end) records it
            self.ws.write_state(self.state)

    def _has_new_messages(self) -> bool:
        """Messages the physicist sent after the run ended reopen it on --resume (a challenge to a
        finished run's result must reach the adjudicator, not be dropped); pause/stop alone do not."""
        return any(m["kind"] not in ("pause", "stop") for m in inbox.pending(self.ws.root, self.state.inbox_consumed))

    # ------------------------------------------------------------------ one iteration
    async def _iteration(self) -> LabOutcome | None:
        t_start = time.perf_counter()
        self.state = T.begin_iteration(self.state)
        it = self.state.iteration
        self.summary = []
        n_open = len(self.state.open_critiques())
        self.state = T.expire_critiques(self.state, self.cfg.critique_expiry)
        if len(self.state.open_critiques()) < n_open:
            self.summary.append(f"{n_open - len(self.state.open_critiques())} old critique(s) expired")
        self._audited = False
        self.emit(Iteration(iteration=it, **self._usage_data()))
        control = self._intake()
        if control == "pause":
            self.state = T.set_status(self.state, "paused", "paused by the physicist")
            await self.commit(f"iteration {it}: paused by the physicist")
            return self._outcome()
        if control == "stop":
            await self.commit(f"iteration {it}: stopped by the physicist")
            return await self._forced("stopped by the physicist")
        await self._route_critiques()
        self._verified = False
        early = self._early_reviews()
        try:
            decision = await self._orchestrate(early)
            self._check_integration()
            await self._reviews(early)
        finally:
            if early is not None:
                await early.discard()
        if self.cfg.escalate_stalls:
            self._escalate_stalls()
        if decision is not None and not decision.complete:
            self.state = T.turn_without_completion(self.state)
        if decision is not None and decision.complete:
            if await self._complete(decision.answer_results):
                await self.commit(f"iteration {it}: complete — " + "; ".join(self.summary))
                return self._outcome()
            if self.state.format_bounces >= self.cfg.max_format_bounces:
                return await self._forced("formatter_bounces")
        on_demand = bool(decision and decision.request_audit)
        after_verified = self.cfg.critic_cadence == "after_verified"
        audit_due = not self._audited and not after_verified and routing.critic_due(it, self.cfg.critic_every,
                                                                                      on_demand=on_demand)
        if decision is not None and decision.dispatches:      # (with a refused completion too)
            if await self._dispatch(decision.dispatches, with_critic=audit_due):
                audit_due = False                              # the audit ran alongside the workers
            if self.cfg.one_exit_per_turn:     # upstream reviews a hypothesis its worker brought evidence on now
                await self._reviews()
        # upstream's iteration ends early, before its critic, when the orchestrator's call fails or
        # its completion is refused (engine.py: ``continue``)
        ended_early = decision is None or decision.complete
        if after_verified and not self._audited and not ended_early:
            audit_due = on_demand or routing.critic_after_verified(it, self.state.last_audit_iteration,
                                                                   self.cfg.critic_every, verified=self._verified)
        if audit_due:
            await self._critic()
            await self._route_critiques()
        items = list(self.summary)          # (the commit starts the next iteration's summary)
        summary = "; ".join(items) or "no progress"
        await self.commit(f"iteration {it}: {summary}")
        await self._best_guess()
        total = time.perf_counter() - t_start
        self.emit(IterationEnd(iteration=it, summary=summary, items=items, **self._usage_data()))
        self.emit(Step(strategy="lab", step=f"iteration {it}: {summary}"))
        self.timings.append({"iteration": it, "total_s": total, "commit_s": getattr(self, "_commit_s", 0.0)})
        return None

    def _intake(self) -> str | None:
        control = None
        for msg in inbox.pending(self.ws.root, self.state.inbox_consumed):
            try:
                self.state, hid = T.receive_human(self.state, kind=msg["kind"], text=str(msg.get("text", "")),
                                                  on=msg.get("on"), inbox_id=msg["id"])
            except T.TransitionError as exc:
                self.note("human_ignored", f"inbox message {msg.get('id')}: {exc}")
                continue
            self.summary.append(f"{hid} {msg['kind']} from the physicist")
            if msg["kind"] in ("pause", "stop"):
                control = control or msg["kind"]
        return control

    async def _survey(self) -> Survey:
        """The survey; a surveyor that gives none within its retries (a small model's junk) is one
        failed call, as a planner's is: the lab goes on without a survey rather than end before any
        research, and says why (the role, the output mode, what to try)."""
        try:
            return await surveyor.run(self.env)
        except Exception as exc:
            if fatal(exc):
                raise
            self.failures += 1
            self.note("role_failed", f"surveyor: {self._why(exc)} (the lab goes on without a survey)")
            return Survey()

    def _why(self, exc: BaseException) -> str:
        """A failed role call in one line: the model seam's account of a model that gave no structured
        output (its role, output mode and what to try), else the error."""
        from pydantic_ai.exceptions import UnexpectedModelBehavior

        explain = getattr(self.ctx.models, "describe_failure", None)
        said = explain(find_error(exc, UnexpectedModelBehavior) or exc) if callable(explain) else None
        return said or _short(exc)

    async def _plan(self, critiques: list[Critique], demotions: Sequence[Critique] = ()) -> None:
        try:
            plan, desk = await planner.run(self.env, self.state, critiques, self.windows, list(demotions),
                                           views=self.views)
        except Exception as exc:
            if fatal(exc):
                raise
            self.note("role_failed", f"planner: {_short(exc)}"
                      + (f" ({', '.join(c.id for c in critiques)} stay open)" if critiques else ""))
            if not self.state.strategy:   # the loop needs a strategy; fall back to the problem itself
                self.state, _ = T.set_strategy(self.state, "Answer the problem as stated, step by step, checking each step.")
            return
        if demotions:
            self.state = T.consult_planner(self.state, [c.id for c in demotions])
        for d in desk.dropped:
            self.note("refused", f"planner: {d} (dropped from its plan)")
        try:
            self.state, _ = T.set_strategy(self.state, plan.strategy or self.state.strategy or "(no strategy)",
                                           add_checks=plan.add_sanity_checks, retire_checks=plan.retire_sanity_checks,
                                           conventions=plan.conventions or None)
        except T.TransitionError as exc:   # the validator checked the ids; this is a last line of defence
            self.note("refused", f"planner: {exc}")
        answers = {r.critique_id: r for r in plan.critique_responses}
        answered = []
        for c in critiques:
            r = answers.get(c.id)
            if r is None:
                self.note("critique_unanswered", f"{c.id} stays open: the planner did not answer it")
                continue
            self.state = T.respond_to_critique(self.state, c.id, r.verdict, r.response)
            answered.append(c.id)
            answered_c = self.state.critique(c.id)
            self.emit(CritiqueResolved(id=c.id, status=answered_c.status if answered_c else r.verdict,
                                       by="planner"))
        acted = []
        for a in plan.entity_actions:
            try:
                if a.action == "abandon":
                    self.state, _ = T.abandon_wh(self.state, a.id, a.reason or "the planner's revision", by="planner")
                else:
                    self.state = T.mark_obsolete(self.state, a.id, a.reason)
            except T.TransitionError as exc:
                self.note("refused", f"planner: {exc}")
                continue
            acted.append(f"{a.id} {'abandoned' if a.action == 'abandon' else 'obsolete'}")
        if answered or acted or demotions:
            self.summary.append("planner " + "; ".join(
                ([f"answered {', '.join(answered)}"] if answered else [])
                + ([f"considered the demotion of {', '.join(c.target or '' for c in demotions)}"] if demotions else [])
                + acted) + f" (strategy v{self.state.strategy_version})")

    async def _route_critiques(self) -> None:
        for_adj, for_plan = routing.split_open_critiques(self.state)
        for c in for_adj:
            er = self.state.er(c.target)
            if er is None or er.status != "active":
                self.state = T.dismiss_stale_critique(self.state, c.id, f"{c.target} was already demoted")
                continue
            try:
                ruling = await adjudicator.run(self.env, partial(self._adjudicator_prompt, c),
                                               cites_checks=gates.cites_sanity_checks(c, self.state))
            except Exception as exc:
                if fatal(exc):
                    raise
                self.note("role_failed", f"adjudicator on {c.id}: {_short(exc)} (it stays open; retried next iteration)")
                continue
            self.state = T.rule_on_critique(self.state, c.id, ruling.decision, ruling.reasoning,
                                            scope=ruling.investigation_scope, abandon=self.cfg.upheld_abandons)
            done = {"uphold": f"upheld: {c.target} demoted" + (" and abandoned" if self.cfg.upheld_abandons else ""),
                    "dismiss": "dismissed",
                    "needs_evidence": f"needs evidence: {c.target} demoted until it is in"}[ruling.decision]
            self.summary.append(f"{c.id} on {c.target} {done}")
            ruled = self.state.critique(c.id)
            self.emit(CritiqueResolved(id=c.id, status=ruled.status if ruled else ruling.decision, by="adjudicator",
                                       target=c.target))
        demotions = [c for c in self.state.critiques if c.status in ("upheld", "needs_evidence")
                     and c.id not in self.state.planner_seen_rulings]
        if for_plan or demotions:      # the planner is consulted on every demotion (upstream's revision trigger)
            await self._plan(for_plan, demotions)

    def _check_integration(self) -> None:
        """physics-intern's post-integration checks after the orchestrator's turn (they report to
        its next turn)."""
        if not self.cfg.post_integration_checks:
            return
        self.state, found = integration_checks.check(self.state)
        for line in found:
            self.note("violation", line)

    async def _best_guess(self) -> None:
        """Every ``best_guess_every`` iterations the forced formatter writes BEST_GUESS.md: the answer
        if the run stopped now, which no role reads (physics-intern's periodic snapshot). A failure
        is recorded and the research goes on."""
        n, s = self.cfg.best_guess_every, self.state
        if n <= 0 or s.iteration % n != 0:
            return
        template, always = self.ctx.problem.answer_template, self.cfg.forced_answer == "always"
        desk = formatter.Desk(s, template, True, always=always)
        try:
            ans = await formatter.run(self.env, desk, lambda level: C.for_formatter(
                self.ctx.problem, s, self.windows.shrunk(level), forced=True, reason="a best-guess snapshot",
                views=self.views, always=always))
        except Exception as exc:
            if fatal(exc):
                raise
            self.note("role_failed", f"best-guess formatter: {_short(exc)}")
            return
        out = formatter.assess(ans, s, template, forced=True, always=always)
        if out.body is None:
            self.note("best_guess", "the best-guess formatter wrote nothing usable")
            return
        (self.ws.root / "BEST_GUESS.md").write_text(out.body.strip() + "\n", encoding="utf-8")
        await asyncio.to_thread(self.ws.commit, self.state, f"iteration {s.iteration}: best-guess snapshot")

    def _escalate_stalls(self) -> None:
        """A hypothesis whose verdicts keep falling short is escalated to the planner once."""
        n = len(self.state.critiques)
        self.state = T.escalate_stalls(self.state, gates.stalled(self.state, self.cfg.stall_limit))
        for c in self.state.critiques[n:]:
            self.summary.append(f"{c.target} stalled: escalated to the planner ({c.id})")
            self.emit(CritiqueFiled(id=c.id, target=c.target, text=c.text[:200]))

    async def _orchestrate(self, early: EarlyReviews | None = None) -> orchestrator.Decision | None:
        s = self.state
        shown = routing.events_for_orchestrator(s.events[s.seen_events:], views=self.views)
        blockers = gates.paper_completion_blockers(s) if self.cfg.completion_gates == "paper" else \
            gates.completion_blockers(s)
        prompt = lambda level: C.for_orchestrator(  # noqa: E731 - rebuilt shorter if it does not fit
            self.ctx.problem, s, self.windows.shrunk(level), new_evidence=s.evidence[s.seen_evidence:],
            new_reviews=[f"{r.wh}: {r.verdict} — {C.clip(r.reasoning, 800)}" for r in s.reviews[s.seen_reviews:]],
            events=[f"[{e.kind}] {e.text}" for e in shown],
            human=routing.human_lines_for_orchestrator(s, s.seen_humans), gates=blockers,
            max_workers=self.cfg.max_dispatches, controls=self.cfg.controls)
        desk = orchestrator.Desk(state=s, max_dispatches=self.cfg.max_dispatches, flow=self.cfg.flow)
        decision, failure = None, None
        try:
            decision = await orchestrator.run(self.env, desk, prompt,
                                              on_request=(lambda: early.start(desk.state)) if early else None)
            self.failures = 0
        except Exception as exc:
            if fatal(exc):
                self.state = desk.state
                raise
            self.failures += 1
            failure = exc
        self.state = desk.state          # transitions the model made before any failure are kept
        if failure is None:
            # What it was shown is integrated only now that the call succeeded; after a failure it
            # is shown again (with the failure) next turn.
            self.state = self.state.model_copy(update={
                "seen_evidence": len(s.evidence), "seen_reviews": len(s.reviews),
                "seen_events": len(self.state.events), "seen_humans": len(s.human_messages)})
        else:
            self.note("role_failed", f"orchestrator: {_short(failure)}")
        for r in desk.refused:
            self.note("refused", f"orchestrator: {r}")
        if desk.actions:
            self.summary.append("orchestrator " + ", ".join(desk.actions))
        return decision

    def _review(self, state: ResearchState, wid: str) -> Any:
        return reviewer.run(self.env, lambda level: C.for_reviewer(
            self.ctx.problem, state, self.windows.shrunk(level), wid, views=self.views,
            history=self.cfg.review_history))

    def _early_reviews(self) -> EarlyReviews | None:
        """Reviews that start while the orchestrator is still at work (``early_reviews``), unless
        the lab runs one call at a time."""
        if self.cfg.parallel_workers < 2 or not self.cfg.early_reviews:
            return None
        gate = asyncio.Semaphore(self.cfg.parallel_workers)

        async def review(state: ResearchState, wid: str) -> reviewer.ReviewReport:
            async with gate:
                return await self._review(state, wid)

        return EarlyReviews(view=lambda state, wid: tuple(
            C.for_reviewer(self.ctx.problem, state, self.windows.shrunk(level), wid, views=self.views,
                           history=self.cfg.review_history)
            for level in range(NO_STANDARDS_LEVEL + 1)), review=review)

    async def _reviews(self, early: EarlyReviews | None = None) -> None:
        """Every hypothesis awaiting review, independent ones concurrently (at most
        ``parallel_workers``), in waves (``routing.review_waves``). Each wave's reviewers are shown
        the same snapshot and their verdicts are merged in pending order, so the state is the same
        whatever order they finish in. A review begun while the orchestrator worked (``early``) is
        used where its reviewer was shown what it would be shown here."""
        for wave in routing.review_waves(self.state, T.pending_reviews(self.state)):
            snapshot, gate = self.state, asyncio.Semaphore(self.cfg.parallel_workers)

            async def review(wid: str, snapshot: ResearchState = snapshot,
                             gate: asyncio.Semaphore = gate) -> reviewer.ReviewReport:  # this wave's
                begun = early.take(snapshot, wid) if early is not None else None
                if begun is not None:
                    return await begun
                async with gate:
                    return await self._review(snapshot, wid)

            results = await asyncio.gather(*(review(w) for w in wave), return_exceptions=True)
            budget = None
            for wid, rep in zip(wave, results):
                if isinstance(rep, BaseException):
                    if not isinstance(rep, Exception) or fatal(rep):
                        budget = budget or rep
                        continue
                    self.note("role_failed", f"reviewer on {wid}: {_short(rep)} (review stays pending)")
                    continue
                self._record_review(wid, rep)
            if budget is not None:
                raise budget

    def _record_review(self, wid: str, rep: reviewer.ReviewReport) -> None:
        n_er = len(self.state.ers)
        self.state, _ = T.record_review(self.state, wid, rep.verdict, reviewer.report_text(rep),
                                        abandon_after=self.cfg.max_refutations)
        promoted = [e.id for e in self.state.ers[n_er:]]
        abandoned = self.state.wh(wid).status == "abandoned"
        self.summary.append(f"{wid} {rep.verdict}" + (f" -> {', '.join(promoted)}" if promoted else "")
                            + (" (abandoned as a dead end)" if abandoned else ""))
        self._verified = self._verified or rep.verdict == "VERIFIED"
        self.emit(ReviewDone(wh=wid, verdict=rep.verdict, promoted=promoted))

    async def _complete(self, answer_results: Sequence[str] = ()) -> bool:
        """The orchestrator declared completion: check the gates (auditing first if that is all
        that is missing), then the formatter. True when the final answer is written. Refused again
        and again, the circuit breaker gives up what the orchestrator keeps leaving unresolved."""
        self.state = T.request_completion(self.state, answer_results)
        if self.cfg.completion_gates == "paper":      # physics-intern's gates: it runs no audit of its own here
            blockers = gates.paper_completion_blockers(self.state)
        else:
            blockers = gates.completion_blockers(self.state, audit=False)
            if not blockers and gates.needs_audit(self.state):
                await self._critic()
                await self._route_critiques()
                blockers = gates.completion_blockers(self.state)
        if blockers:
            self.state = T.refuse_completion(self.state, blockers)
            self.summary.append("completion refused (" + "; ".join(blockers) + ")")
            self.emit(CompletionRefused(blockers=blockers))
            self._circuit_breaker()
            return False
        if await self._format(forced=False):
            return True
        self._circuit_breaker()
        return False

    def _circuit_breaker(self) -> None:
        paper = self.cfg.completion_gates == "paper"   # upstream: every working hypothesis, the questions stay
        if self.state.refused_completions < self.cfg.max_refused_completions or not (paper or self.state.active_ers()):
            return
        unresolved = [w.id for w in (gates.in_play(self.state) if paper else gates.unresolved_hypotheses(self.state))]
        self.state = T.break_circuit(self.state, unresolved, drop_questions=not paper)
        self.summary.append("circuit breaker: " + (f"{', '.join(unresolved)} abandoned" if unresolved else
                                                   "completion refused again and again"))
        self.emit(System(what="circuit_breaker", text=self.state.events[-1].text))

    async def _dispatch(self, orders: list[orchestrator.DispatchOrder], *, with_critic: bool = False) -> bool:
        """The dispatched workers, concurrently (at most ``parallel_workers``), merged in dispatch
        order. ``with_critic``: the senior critic's audit is due. When nothing the workers bring
        back changes what the critic reads, nor what the adjudicator and the planner read when they
        answer its critiques (``routing.critic_reads_no_worker_output``), the audit and its routing
        run alongside the workers, and the workers' evidence is merged after them: the state is
        then the same whatever finishes first. True when they did."""
        planned, targets = [], set()
        for o in orders:
            if o.target in targets:          # the orchestrator's validator refuses this; never run two
                self.note("refused", f"dispatch: a second worker on {o.target} in one turn")
                continue
            try:
                self.state, did = T.record_dispatch(self.state, o.worker, o.target, o.instructions)
            except T.TransitionError as exc:
                self.note("refused", f"dispatch: {exc}")
                continue
            targets.add(o.target)
            planned.append((did, o))
        snapshot = self.state
        gate = asyncio.Semaphore(self.cfg.parallel_workers)

        async def work(o: orchestrator.DispatchOrder) -> dict[str, Any]:
            async with gate:
                hints = "\n".join(x for x in (o.method_hints, routing.hints_for_workers(snapshot)) if x)
                prompt = lambda level: C.for_worker(  # noqa: E731 - rebuilt shorter if it does not fit
                    o.worker, self.ctx.problem, snapshot, self.windows.shrunk(level), target=o.target,
                    instructions=o.instructions, method_hints=hints, relevant=o.relevant_results, views=self.views)
                if o.worker == "computer":
                    bench = computer.Bench(self.env)
                    try:
                        res = await computer.run(self.env, bench, prompt)
                    except Exception as exc:
                        exc.bench = bench  # type: ignore[attr-defined]  # keep what ran for the record
                        raise
                    kept = kept_scripts(bench.runs, self.cfg.max_scripts)
                    return dict(findings=res.findings, method=res.method, checks=res.checks,
                                confidence=res.confidence, approach=bench.approach, scripts=kept,
                                code=kept[-1].code if kept else "", output=kept[-1].output if kept else "")
                rep, derivation = await researcher.run(self.env, prompt)
                return dict(findings=rep.findings, derivation=derivation, checks=rep.checks, confidence=rep.confidence)

        alongside = with_critic and bool(planned) and routing.critic_reads_no_worker_output([o.target for _, o in planned])
        jobs = [work(o) for _, o in planned] + ([self._audit_and_route()] if alongside else [])
        results = await asyncio.gather(*jobs, return_exceptions=True)
        chain = results.pop() if alongside else None
        budget = chain if isinstance(chain, BaseException) else None
        for (did, o), res in zip(planned, results):          # deterministic merge: dispatch order
            if isinstance(res, BaseException):
                if not isinstance(res, Exception) or fatal(res):
                    budget = budget or budget_error(res) or res
                self.state = T.dispatch_failed(self.state, did, _short(res))
                continue
            self.state, eid = T.add_evidence(self.state, target=o.target, role=o.worker, dispatch=did,
                                             drop_refuted=not self.cfg.keep_refuted_evidence, **res)
            self.summary.append(f"{o.worker} on {o.target} -> {eid}")
            self.emit(EvidenceAdded(id=eid, role=o.worker, target=o.target))
        if budget is not None:
            raise budget
        return alongside

    async def _critic(self) -> None:
        state = self.state
        desk = critic.Desk(state, self.cfg.max_critiques)
        try:
            audit = await critic.run(self.env, desk, lambda level: C.for_critic(
                self.ctx.problem, state, self.windows.shrunk(level), max_critiques=self.cfg.max_critiques,
                controls=self.cfg.controls))
        except Exception as exc:
            if fatal(exc):
                raise
            self.note("role_failed", f"critic: {_short(exc)}")
            return
        self._file_audit(audit, desk)

    async def _audit_and_route(self) -> None:
        await self._critic()
        await self._route_critiques()

    def _file_audit(self, audit: critic.Audit, desk: critic.Desk) -> None:
        self._audited = True
        self.state = T.record_audit(self.state, None if audit.critiques else audit.assessment)
        for why in desk.dropped:
            self.note("refused", f"critic: {why} (dropped from its audit)")
        filed = []
        for d in audit.critiques:
            try:
                self.state, cid = T.file_critique(self.state, target_type=d.target_type, target=d.target,
                                                  text=d.text, kind=d.kind, severity=d.severity, test=d.test)
            except T.TransitionError as exc:
                self.note("refused", f"critic: {exc}")
                continue
            filed.append(cid)
            self.emit(CritiqueFiled(id=cid, target=d.target or d.target_type, text=d.text[:200]))
        self.summary.append(f"critic filed {', '.join(filed)}" if filed else "critic: no critiques")

    async def _format(self, *, forced: bool, reason: str = "") -> bool:
        s, template = self.state, self.ctx.problem.answer_template
        always = forced and self.cfg.forced_answer == "always"
        desk = formatter.Desk(s, template, forced, always=always)
        prompt = lambda level: C.for_formatter(  # noqa: E731 - rebuilt shorter if it does not fit
            self.ctx.problem, s, self.windows.shrunk(level), forced=forced, reason=reason, views=self.views,
            always=always)
        try:
            ans = await formatter.run(self.env, desk, prompt)
        except Exception as exc:
            if fatal(exc) and not forced:
                raise
            self.note("role_failed", f"formatter: {_short(exc)}")
            if not forced:
                self.state = T.bounce_completion(self.state, "the formatter failed")
            return False
        for d in desk.dropped:
            self.note("refused", f"formatter: {d}")
        out = formatter.assess(ans, s, template, forced=forced, always=always)
        if out.bounce:
            self.state = T.bounce_completion(self.state, out.bounce)
            self.summary.append(f"formatter bounced back to the orchestrator ({out.bounce})")
            self.emit(FormatterBounce(reason=out.bounce))
            return False
        if out.body is None:
            return False
        code, body, sources = out.code, out.body, out.sources
        self._take_sources()
        text = A.final_markdown(s, body, sources=sources, complete=not forced, reason=reason)
        status = "partially_complete" if forced else "complete"
        self.state = T.finish(self.state, status, answer_code=code, answer_text=text, reason=self.state.stop_reason)
        self._write_answer(code, text)
        self.summary.append(f"formatter wrote the answer ({status})")
        return True

    def _write_answer(self, code: str | None, text: str) -> None:
        answer_py = self.ws.root / "answer.py"
        if code is not None:
            answer_py.write_text(code, encoding="utf-8")
        else:
            answer_py.unlink(missing_ok=True)
        (self.ws.root / "ANSWER.md").write_text(text.strip() + "\n", encoding="utf-8")

    async def _forced(self, reason: str) -> LabOutcome:
        """End of budget (or stop): one formatter call, from the room kept for it within the budget
        (``set_aside`` in ``run``), that sees every result and the best hypotheses. If it fails, the
        best current answer is the answer; an answer resting on nothing reviewed is no answer."""
        self.state = T.set_status(self.state, self.state.status, reason)
        self.state = T.set_best_answer(self.state, A.best_answer(self.state))
        self.emit(ForcedFormatter(reason=reason))
        ok = False
        try:
            with self.ctx.usage.finishing():
                ok = await self._format(forced=True, reason=reason)
        except BaseException as exc:  # whatever happens, record and end cleanly
            if not isinstance(exc, Exception) and not budget_error(exc):
                raise
            self.note("role_failed", f"forced formatter: {_short(exc)}")
        best = self.state.best_answer
        self._take_sources()
        if not ok and best is not None:
            text = A.fallback_markdown(self.state, best, reason)
            self.state = T.finish(self.state, "partially_complete", answer_code=None, answer_text=text, reason=reason)
            self._write_answer(None, text)
            self.summary.append("the best current answer is the answer (the formatter failed)")
        elif not ok:
            self.state = T.finish(self.state, "no_answer", answer_code=None, answer_text=None, reason=reason)
            self.summary.append("no answer: nothing reviewed to rest one on")
        self.state = T.set_status(self.state, self.state.status, reason)
        await self.commit(f"iteration {self.state.iteration}: " + "".join(f"{x}; " for x in self.summary)
                    + f"run ended ({reason}) — {self.state.status}")
        return self._outcome()

    def _outcome(self) -> LabOutcome:
        s = self.state
        return LabOutcome(state=s, status=s.status, stop_reason=s.stop_reason,
                          answer_code=s.final_answer_code, answer_text=s.final_answer_text)


def kept_scripts(runs: list[tuple[str, ...]], limit: int) -> list[Script]:
    """Every script a computer ran, as it ran and with what it printed, in its language (Python
    unless ``execute`` ran another); past ``limit`` the first one (its plan in code) and the newest,
    with a note of how many are left out."""
    scripts = [Script(code=r[0], output=r[1], language=r[2] if len(r) > 2 else "python") for r in runs]
    if len(scripts) <= limit:
        return scripts
    left_out = len(scripts) - limit
    first, newest = scripts[:1], scripts[-(limit - 1):]
    note = f"# ({left_out} earlier script(s) between the first and these are not kept)\n"
    return first + [newest[0].model_copy(update={"code": note + newest[0].code})] + newest[1:]
