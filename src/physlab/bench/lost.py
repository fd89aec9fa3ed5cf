"""The spend of lost attempts: runs of a cell that a Ray node took down with it (the cell ran again
elsewhere and is counted once). Their tokens and cost were really spent, so they are part of the
bench report (``Report.lost``): every view of it -- the terminal, ``--json``, ``--html``, the
dashboard's Sweeps page -- shows them beside the cells' own, per strategy x model and node."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field


class LostGroup(BaseModel):
    """The lost attempts of one strategy x model on one node."""

    strategy: str
    model: str
    node: str = Field(description="The Ray node that died under them (its id).")
    attempts: int = 0
    calls: int = 0
    tokens: int = Field(default=0, description="Input + output tokens.")
    cost_usd: float = 0.0


class LostSpend(BaseModel):
    """What the lost attempts of the report's cells spent, in all and by group (none: zeros)."""

    attempts: int = 0
    calls: int = 0
    tokens: int = Field(default=0, description="Input + output tokens.")
    cost_usd: float = 0.0
    groups: list[LostGroup] = Field(default_factory=list)

    def line(self) -> str:
        return (f"{self.attempts} lost attempts (their node died; each cell ran again and counts once): "
                f"{self.calls} calls, {self.tokens:,} tokens, ${self.cost_usd:.4f} spent besides the cells'")


def lost_spend(rows: Iterable[dict[str, Any]]) -> LostSpend:
    """Totals and per-group rows of lost attempts (the store's ``lost_attempts()`` rows)."""
    out = LostSpend()
    groups: dict[tuple[str, str, str], LostGroup] = {}
    for r in rows:
        tokens = r["input_tokens"] + r["output_tokens"]
        out.attempts += 1
        out.calls += r["calls"]
        out.tokens += tokens
        out.cost_usd += r["cost_usd"]
        key = (r["strategy"], r["model"], r["node"] or "")
        g = groups.setdefault(key, LostGroup(strategy=key[0], model=key[1], node=key[2]))
        g.attempts += 1
        g.calls += r["calls"]
        g.tokens += tokens
        g.cost_usd += r["cost_usd"]
    out.groups = [groups[k] for k in sorted(groups)]
    return out
