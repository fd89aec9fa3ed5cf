"""Where things go: critiques to the adjudicator or the planner, human messages to their role,
and when the critic runs."""

from __future__ import annotations

from physlab.lab.state.models import Critique, ResearchState, SystemEvent


def route_of(c: Critique) -> str:
    """ER critiques go to an independent adjudicator; strategy, coordination and sanity-check
    critiques trigger a planner revision."""
    return "adjudicator" if c.target_type == "ER" else "planner"


def split_open_critiques(s: ResearchState) -> tuple[list[Critique], list[Critique]]:
    """(for the adjudicator, for the planner), in filing order."""
    opened = s.open_critiques()
    return [c for c in opened if route_of(c) == "adjudicator"], [c for c in opened if route_of(c) == "planner"]


def review_waves(s: ResearchState, pending: list[str]) -> list[list[str]]:
    """The hypotheses awaiting review, in waves that can be reviewed concurrently: a hypothesis
    waits for every pending one it builds on (directly or not), since their verdicts change what
    its reviewer is shown (the true status of each dependency); independent ones share a wave,
    as a reviewer of one is shown nothing the review of another can change. Pending order is
    kept within a wave."""
    todo = list(pending)
    closure: dict[str, set[str]] = {}

    def deps(w: str) -> set[str]:
        if w not in closure:
            closure[w] = set()                           # (a cycle, which the state never has, ends here)
            h = s.wh(w)
            for d in (h.depends_on if h else []):
                closure[w] |= {d} | deps(d)
        return closure[w]

    waves = []
    while todo:
        wave = [w for w in todo if not deps(w) & (set(todo) - {w})] or todo[:1]
        waves.append(wave)
        todo = [w for w in todo if w not in wave]
    return waves


def critic_reads_no_worker_output(targets: list[str]) -> bool:
    """Workers sent only on research questions add evidence and nothing the senior critic reads
    (results, hypotheses, questions: not evidence or dispatches), nor what the adjudicator (a
    result and its own evidence) or the planner reads when they answer its critiques; so the
    audit and its routing can run alongside them. Evidence on a hypothesis sends it back to
    review, which all three would see."""
    return all(t.startswith("RQ-") for t in targets)


def critic_due(iteration: int, every: int, *, on_demand: bool = False) -> bool:
    """The critic audits every ``every`` iterations (0 disables the schedule) and on demand."""
    return on_demand or (every > 0 and iteration > 0 and iteration % every == 0)


def critic_after_verified(iteration: int, last_audit: int, every: int, *, verified: bool) -> bool:
    """physics-intern's cadence (engine.py): the critic after every iteration with a VERIFIED
    review, and when ``every`` iterations have passed since its last audit (0: never on schedule)."""
    return verified or (every > 0 and iteration - last_audit >= every)


# The lab's events physics-intern shows its orchestrator (its SYSTEM EVENTS, AGENT FAILURES and
# POST-INTEGRATION VIOLATIONS banners): rulings, the planner's answers and revisions, demotions and
# what was given up, refused completions, failed calls, the physicist's messages.
UPSTREAM_EVENTS = {"ruling", "planner", "demotion", "abandoned", "obsolete", "completion_refused", "formatter_bounce",
                   "role_failed", "worker_failed", "violation", "circuit_breaker", "human", "model_failure"}


def events_for_orchestrator(events: list[SystemEvent], *, views: str = "physlab") -> list[SystemEvent]:
    """The system events the orchestrator is shown: all but the reviews (their verdicts have their
    own section); with ``views="paper"`` only those physics-intern reports to it (a revised
    strategy, not the first one)."""
    if views != "paper":
        return [e for e in events if e.kind not in ("review",)]
    return [e for e in events if e.kind in UPSTREAM_EVENTS
            or (e.kind == "strategy" and not e.text.startswith("strategy v1 "))]


def human_lines_for_orchestrator(s: ResearchState, start: int) -> list[str]:
    return [f"{h.id} ({h.kind}{' on ' + h.on if h.on else ''}): {h.text}"
            for h in s.human_messages[start:] if h.routed_to in ("orchestrator", "planner", "adjudicator")]


def hints_for_workers(s: ResearchState) -> str:
    return "\n".join(f"Hint from the physicist ({h.id}): {h.text}" for h in s.human_messages if h.kind == "hint")
