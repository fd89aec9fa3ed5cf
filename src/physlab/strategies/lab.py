"""`--strategy lab`: the research lab (physlab.lab) as a Strategy.

Parameters: the lab's own ``LabSettings`` and ``resume_iteration``. Resume: ``ctx.resume`` continues
the run in ``ctx.workspace`` from its last commit; ``resume_iteration`` (or a workspace given as
``DIR@N``) continues from the end of iteration N instead (later iterations stay in the run's git
history).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import model_validator

from physlab.errors import UserError
from physlab.lab.engine import PAPER, LabEngine, LabSettings
from physlab.lab.judgement import judgement
from physlab.lab.workspace import split_resume_target
from physlab.run.environment import RunEnvironment
from physlab.run.progress import ProgressView
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.params import PHYSICS_INTERN, StrategyParams, param

_CODE = f"{PHYSICS_INTERN}, its public code (config.default.yaml)"
_ENGINEERING = "PhysLab: an engineering bound; physics-intern has no such setting"


def _upstream(where: str) -> str:
    """Where the public physics-intern code does it (src/physics_intern/...)."""
    return f"physics-intern's public code, {where} — preset=paper"


# PhysLab's choices where physics-intern does otherwise: each says why, and what upstream does.
_DEPARTURES = {
    "judges_compute": "PhysLab: the reviewer and the adjudicator re-compute the decisive step (a judge that can "
                      "check numbers catches more); " + _upstream("agents/reviewer/agent.py and agents/adjudicator/"
                                                                  "agent.py: no tools, told not to execute code or "
                                                                  "produce new derivations"),
    "computer_algebra": "PhysLab: FORM, Cadabra2, Maxima and the Wolfram Language beside Python, when --tools gives "
                        "them (on by default); " + _upstream("agents/computer/tools.py: Python only"),
    "standards": "PhysLab: one text of physics standards (roles/standards.md) shared by the roles that do or judge "
                 "physics; " + _upstream("agents/*/prompt.md: each role's prompt alone"),
    "review_history": "PhysLab: a re-reviewed claim comes with every earlier verdict, the demoting critique and "
                      "ruling, so the new evidence is judged against them; "
                      + _upstream("agents/reviewer/agent.py: the claim and its evidence only"),
    "early_reviews": "PhysLab: reviews start while the orchestrator still works, when workers run in parallel; "
                     + _upstream("engine.py: one call at a time"),
    "role_views": "PhysLab: workers also see the strategy, the sanity checks, the pitfalls and earlier attempts; "
                  "judges see the true status of what a claim builds on; " + _upstream(
                      "agents/evidence_base.py and agents/*/context.py: workers see the conventions and established "
                      "results, the critic each claim's evidence and reviews"),
    "one_exit_per_turn": "PhysLab: a turn may propose, dispatch several independent tasks and ask for an audit; "
                         + _upstream("agents/orchestrator/tools.py: one exit tool a turn (add_hypothesis, a dispatch "
                                     "or request_termination), engine.py: new evidence on a hypothesis is reviewed "
                                     "at once"),
    "max_working_hypotheses": "PhysLab: no cap; " + _upstream("agents/orchestrator/tools.py: add_hypothesis refuses "
                                                              "a third working hypothesis"),
    "max_open_questions": "PhysLab: no cap (questions are worked in parallel); "
                          + _upstream("config.default.yaml: max_open_rqs 1"),
    "question_evidence_cap": "PhysLab: no cap; " + _upstream("config.default.yaml: rq_evidence_cap 3"),
    "serial_questions": "PhysLab: questions are worked in parallel; "
                        + _upstream("agents/orchestrator/tools.py: serial RQ focus"),
    "unresolved_blocks_dispatch": "PhysLab: the run signals and the stall escalation steer the orchestrator; "
                                  + _upstream("agents/orchestrator/tools.py: a refuted or inconclusive working "
                                              "hypothesis blocks dispatch to a question"),
    "high_critique_blocks": "PhysLab: an open HIGH critique blocks completion only; "
                            + _upstream("agents/orchestrator/tools.py: no new question or hypothesis while one is "
                                        "open"),
    "state_summary": "PhysLab: the orchestrator reads the state in its prompt and the results of its tools; "
                     + _upstream("agents/orchestrator/tools.py (end_round) and llm.py: a state summary and what is "
                                 "pending after each round of mutations"),
    "hypothesis_closes_question": "PhysLab: the orchestrator closes its questions itself; "
                                  + _upstream("agents/orchestrator/tools.py: add_hypothesis resolves its from_rq"),
    "critic_cadence": "PhysLab: on a fixed schedule (critic_every) and on demand; "
                      + _upstream("engine.py: after every VERIFIED review, and when critic_every_n (4) iterations "
                                  "passed since the last"),
    "upheld_abandons": "PhysLab: the demoted hypothesis and what builds on it wait for new evidence and may be "
                       "established again; " + _upstream("control/critique_routing.py: a 'valid' ruling demotes "
                                                         "the result and abandons it and its dependents"),
    "keep_refuted_evidence": "PhysLab: every piece of evidence stays attached (the reviewer judges the whole "
                             "record); " + _upstream("agents/evidence_base.py: new evidence replaces the refuted"),
    "completion_gates": "PhysLab: something established, nothing awaiting review, no open critique or question, no "
                        "undecided hypothesis beside the answer, an audit since the results changed (run by the "
                        "lab itself); " + _upstream("control/validation.py can_terminate: a critic pass, every "
                                                    "question and working hypothesis resolved"),
    "escalate_stalls": "PhysLab: a STALLED hypothesis becomes a HIGH critique the planner must answer; "
                       + _upstream("state/loop_state.py: STALLED is shown to the orchestrator only"),
    "forced_answer": "PhysLab: an answer forced at the end of a budget must rest on a reviewed claim, or there is "
                     "none; " + _upstream("agents/formatter/prompt_forced.md and context.py: it always fills the "
                                          "template, from unverified hypotheses if need be"),
    "best_guess_every": "PhysLab: every commit carries the best current answer in ANSWER.md (provisional); "
                        + _upstream("config.default.yaml: best_guess_every_n 10, BEST_GUESS.md"),
    "max_output_tokens": "PhysLab: the model's own limit for every role; "
                         + _upstream("config.default.yaml: agent_max_tokens"),
    "post_integration_checks": "PhysLab: its transitions refuse what would need fixing after the fact; "
                               + _upstream("control/validation.py: validate_post_integration"),
}


class LabParams(StrategyParams, LabSettings):
    preset: Literal["physlab", "paper"] = param(
        "physlab", "paper: physics-intern's setting for every parameter that departs from it (the 'departs from the "
                   "paper' lines: one worker at a time, its flow control, judges without tools...); a value given "
                   "explicitly still wins.",
        "PhysLab: its own defaults, which run research in parallel (the seed's parallel agents are its future "
        "work, §7)")
    resume_iteration: int | None = param(None, "Continue the run from the end of iteration N (--resume DIR@N).",
                                         "PhysLab: a run continues from its last commit", ge=0)

    protocols = {"paper": {"preset": "paper"}}  # --protocol paper: the lab as physics-intern runs it

    # Each default says whose it is: "seed: ..." (physics-intern, the paper or its public code) or
    # "PhysLab: ..." (ours, and why; where the seed has a number, preset=paper restores it).
    sources = {
        "max_iterations": f"PhysLab: 12, above the median of 8 iterations physics-intern needed on CritPt "
                          f"({PHYSICS_INTERN} §5), to bound cost; the seed's cap is 40 (runs went 3-40, §5; "
                          f"{_CODE}) — preset=paper",
        "critic_every": f"PhysLab: 2, an audit every other iteration; the seed's critic runs 'periodically' (§3), "
                        f"every 4 iterations ({_CODE}) — preset=paper",
        "parallel_workers": f"PhysLab: 3 concurrent calls; the seed is sequential within a problem ({PHYSICS_INTERN} "
                            "§6; parallel agents are its future work, §7) — preset=paper gives 1",
        "max_dispatches": f"PhysLab: 4 tasks per orchestrator turn; the seed's orchestrator ends each turn with "
                          f"exactly one dispatch ({_CODE}, orchestrator prompt) — preset=paper gives 1",
        "max_critiques": f"PhysLab: 4 per audit; the seed's critic files at most 2 per call ({_CODE}, critic "
                         "prompt) — preset=paper",
        "max_refutations": f"seed: a hypothesis refuted twice must be abandoned (max_refuted_retries: 2, {_CODE})",
        "stall_limit": f"seed: verdicts short of VERIFIED in a row before 'STALLED' (stall_recompute_limit: 2, "
                       f"{_CODE})",
        "critique_expiry": f"seed: MEDIUM and LOW critiques expire after 3 iterations (auto_expire_iterations: 3, "
                           f"{_CODE})",
        "max_refused_completions": f"seed: the circuit breaker after 3 blocked terminations (max_termination_retries: "
                                   f"3, {_CODE})",
        "budget_warning": f"seed: the orchestrator is told to synthesise 3 iterations before the cap "
                          f"(budget_synthesis_margin: 3, {_CODE})",
        "max_scripts": "PhysLab: the evidence keeps every script up to 12 (the first and the newest beyond); "
                       "the seed's computer chooses the scripts it relies on",
        **{k: _ENGINEERING for k in ("max_format_bounces", "code_timeout_s", "code_memory_mb", "tool_retries",
                                     "request_limit", "max_consecutive_failures", "windows")},
        **_DEPARTURES,
    }
    presets = {"paper": PAPER}
    default_preset = "physlab"

    descriptions = {
        "max_iterations": "Iterations before the formatter writes the best supported answer.",
        "code_timeout_s": "Seconds one Computer script may run in the sandbox.",
        "code_memory_mb": "Memory one Computer script may use in the sandbox.",
        "tool_retries": "Corrections sent back to a role whose output or tool call is refused.",
        "max_consecutive_failures": "Failed role calls in a row that end the run.",
    }

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        """preset=paper: the seed's values for what the user did not set."""
        if isinstance(data, dict) and data.get("preset") == "paper":
            return {**PAPER, **data}
        return data

    def settings(self) -> LabSettings:
        return LabSettings(**self.model_dump(include=set(LabSettings.model_fields)))


class LabStrategy(Strategy[LabParams]):
    """The research lab: nine roles, adversarial review, a persistent research state in git."""

    name = "lab"
    Params = LabParams
    resumable = True  # from its last commit (or an earlier iteration's)

    @classmethod
    def live_view(cls) -> ProgressView:
        from physlab.lab.console import LabView

        return LabView()

    async def run(self, ctx: RunEnvironment) -> Attempt:
        started = time.monotonic()
        from_iteration = self.params.resume_iteration
        root, at = split_resume_target(ctx.workspace)
        if at is not None:
            ctx.workspace, from_iteration = root, at
        settings = self.params.settings()
        if from_iteration is not None and not (root / ".git").exists():
            raise UserError("cannot resume from an iteration: not a lab run directory", path=root)
        engine = LabEngine(ctx, settings)
        out = await engine.run(resume=bool(ctx.resume) or from_iteration is not None,
                               from_iteration=from_iteration)
        statuses: dict[str, AttemptStatus] = {"complete": "complete", "partially_complete": "partially_complete",
                                              "paused": "paused"}
        status = statuses.get(out.status, "no_answer")
        if status == "partially_complete" and not (out.answer_code or out.answer_text):
            status = "no_answer"
        s = out.state
        return Attempt(
            strategy=self.name, model=ctx.models.name, problem_id=ctx.problem.id, status=status,
            stop_reason=out.stop_reason or ("orchestrator declared completion" if status == "complete" else out.status),
            answer_text=out.answer_text, answer_code=out.answer_code,
            usage_by_role=dict(ctx.usage.by_role()), wall_s=time.monotonic() - started,
            details={"iterations": s.iteration, "established_results": len(s.active_ers()),
                     "critiques": len(s.critiques), "demotions": sum(e.status == "demoted" for e in s.ers),
                     "lab_status": s.status, "timings": engine.timings,
                     "role_failures": [e.text for e in s.events if e.kind == "role_failed"][-5:],
                     "judgement": judgement(s, {r: u.output_tokens
                                                for r, u in ctx.usage.by_role().items()}).model_dump()},
        )

