"""The spend of lost attempts: runs of a cell that a Ray node took down with it (the cell ran again
elsewhere and is counted once). Their tokens and cost were really spent, so `bench report` and the
dashboard's Sweeps page show them beside the cells' own, per strategy x model and per node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LostSpend:
    attempts: int = 0
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    groups: list[dict[str, Any]] = field(default_factory=list)  # strategy, model, node: attempts, calls, tokens, cost

    def line(self) -> str:
        return (f"{self.attempts} lost attempts (their node died; each cell ran again and counts once): "
                f"{self.calls} calls, {self.tokens:,} tokens, ${self.cost_usd:.4f} spent besides the cells'")


def lost_spend(store: Any) -> LostSpend:
    """Totals and per-group rows of the database's lost attempts (none: an empty LostSpend)."""
    out = LostSpend()
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in store.lost_attempts():
        tokens = r["input_tokens"] + r["output_tokens"]
        out.attempts += 1
        out.calls += r["calls"]
        out.tokens += tokens
        out.cost_usd += r["cost_usd"]
        g = groups.setdefault((r["strategy"], r["model"], r["node"] or ""), {
            "strategy": r["strategy"], "model": r["model"], "node": r["node"] or "", "attempts": 0, "calls": 0,
            "tokens": 0, "cost_usd": 0.0})
        g["attempts"] += 1
        g["calls"] += r["calls"]
        g["tokens"] += tokens
        g["cost_usd"] += r["cost_usd"]
    out.groups = sorted(groups.values(), key=lambda g: (g["strategy"], g["model"], g["node"]))
    return out
