"""Problems: the Problem model, loaders for every supported format, and the built-in suites."""

from physlab.problems.model import Problem, ReferenceFormat

__all__ = ["Problem", "ReferenceFormat"]
