"""Every scaffold, one module (or folder) each, all of the one Strategy type returning one Attempt."""

from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.params import StrategyParams

__all__ = ["Attempt", "AttemptStatus", "Strategy", "StrategyParams"]
