"""Grading: extract the answer from model output, compare to the reference, return a Verdict."""

from physlab.grading.verdict import Verdict, VerdictKind

__all__ = ["Verdict", "VerdictKind"]
