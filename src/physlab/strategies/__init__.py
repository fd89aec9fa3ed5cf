"""Every scaffold, one module (or folder) each, all of the one Strategy type returning one Attempt."""

from __future__ import annotations

from typing import TYPE_CHECKING

from physlab.lazy import lazy_exports

if TYPE_CHECKING:
    from physlab.strategies.base import Attempt, AttemptStatus, Strategy
    from physlab.strategies.params import StrategyParams

# Each name is imported from its module on first use: the command line imports this package to register
# its commands, and a help text should not pay for pydantic-ai (the strategies' base imports it).
_FROM: dict[str, tuple[str, ...]] = {
    "physlab.strategies.base": ("Attempt", "AttemptStatus", "Strategy"),
    "physlab.strategies.params": ("StrategyParams",),
}
__all__ = ["Attempt", "AttemptStatus", "Strategy", "StrategyParams"]

__getattr__, __dir__ = lazy_exports(__name__, _FROM)
