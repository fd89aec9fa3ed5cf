"""SCALAR (seed 003): Actor-Critic dialogue, out-of-loop Judge, re-scoring, run analysis."""

from physlab.strategies.scalar import scenarios as _scenarios  # noqa: F401 - registers scalar-demo
from physlab.strategies.scalar.rescore import rescore_run
from physlab.strategies.scalar.strategy import Scalar, ScalarParams

__all__ = ["Scalar", "ScalarParams", "rescore_run"]
