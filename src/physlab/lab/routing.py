"""Where things go: critiques to the adjudicator or the planner, human messages to their role,
and when the critic runs."""

from __future__ import annotations

from physlab.lab.state.models import Critique, ResearchState


def route_of(c: Critique) -> str:
    """ER critiques go to an independent adjudicator; strategy, coordination and sanity-check
    critiques trigger a planner revision."""
    return "adjudicator" if c.target_type == "ER" else "planner"


def split_open_critiques(s: ResearchState) -> tuple[list[Critique], list[Critique]]:
    """(for the adjudicator, for the planner), in filing order."""
    opened = s.open_critiques()
    return [c for c in opened if route_of(c) == "adjudicator"], [c for c in opened if route_of(c) == "planner"]


def critic_due(iteration: int, every: int, *, on_demand: bool = False) -> bool:
    """The critic audits every ``every`` iterations (0 disables the schedule) and on demand."""
    return on_demand or (every > 0 and iteration > 0 and iteration % every == 0)


def human_lines_for_orchestrator(s: ResearchState, start: int) -> list[str]:
    return [f"{h.id} ({h.kind}{' on ' + h.on if h.on else ''}): {h.text}"
            for h in s.human_messages[start:] if h.routed_to in ("orchestrator", "planner", "adjudicator")]


def hints_for_workers(s: ResearchState) -> str:
    return "\n".join(f"Hint from the physicist ({h.id}): {h.text}" for h in s.human_messages if h.kind == "hint")
