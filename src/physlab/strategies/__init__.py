"""Every scaffold, one module each, behind one Strategy protocol returning one Attempt."""

from physlab.strategies.base import Attempt, AttemptStatus, Strategy

__all__ = ["Attempt", "AttemptStatus", "Strategy"]
