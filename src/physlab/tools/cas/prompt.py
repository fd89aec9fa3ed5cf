"""The algebra systems as a role's prompt will show them: for each one installed, what it is good
for, how its output looks and its tested example with what it prints; one line for each missing
one, so the lab is told it is unavailable. Text only, stable from run to run (no timings)."""

from __future__ import annotations

from physlab.tools.cas.detect import SystemStatus, available_systems
from physlab.tools.cas.systems import SYSTEMS


def describe(statuses: list[SystemStatus] | None = None) -> str:
    """Markdown for a prompt; ``statuses`` defaults to what this machine has."""
    statuses = available_systems() if statuses is None else statuses
    parts = []
    for st in statuses:
        if not st.available:
            continue
        system = SYSTEMS[st.language]
        exts = ", ".join(system.extensions)
        parts.append(
            f"### {system.name} (language `{system.language}`, files {exts}; here: {st.interpreter})\n"
            f"Good for: {system.good_for}\n"
            f"Output: {system.output}\n"
            f"Example:\n```\n{system.example.code.rstrip()}\n```\n"
            f"its output contains (spacing aside): {'; '.join(f'`{p}`' for p in system.example.prints)}\n")
    missing = [f"- {st.reason}" for st in statuses if not st.available]
    if missing:
        parts.append("Not available on this machine:\n" + "\n".join(missing) + "\n")
    return "\n".join(parts)
