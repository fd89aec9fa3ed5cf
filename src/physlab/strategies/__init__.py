"""Every scaffold, one module (or folder) each, all of the one Strategy type returning one Attempt."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from physlab.strategies.base import Attempt, AttemptStatus, Strategy
    from physlab.strategies.params import StrategyParams

# Each name is imported from its module on first use: the command line imports this package to register
# its commands, and a help text should not pay for pydantic-ai (the strategies' base imports it).
_FROM: dict[str, tuple[str, ...]] = {
    "physlab.strategies.base": ("Attempt", "AttemptStatus", "Strategy"),
    "physlab.strategies.params": ("StrategyParams",),
}
_WHERE = {name: module for module, names in _FROM.items() for name in names}
__all__ = ["Attempt", "AttemptStatus", "Strategy", "StrategyParams"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
