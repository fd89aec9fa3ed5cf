"""Registry entry point: `lab` -> the research lab strategy (see physlab.strategies.lab)."""

from physlab.strategies.lab import LabStrategy, strategy

__all__ = ["LabStrategy", "strategy"]
