"""PhysicsMinions (seed 001): Visual Studio, Logic Studio, Review Studio; CV consecutive passes."""

from physlab.strategies.minions import scenarios as _scenarios  # noqa: F401 - registers minions-demo
from physlab.strategies.minions.strategy import Minions, MinionsParams

__all__ = ["Minions", "MinionsParams"]
