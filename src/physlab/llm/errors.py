"""Exceptions raised on the model path."""

from __future__ import annotations


class BudgetExceeded(Exception):
    """A Budget limit was reached. Strategies catch it and end cleanly (status partially_complete
    or no_answer), never with a traceback. ``limit`` names the limit (e.g. "max_calls")."""

    def __init__(self, limit: str, detail: str = "") -> None:
        self.limit = limit
        super().__init__(f"budget exhausted: {limit}" + (f" ({detail})" if detail else ""))


class ModelFailure(Exception):
    """A model request failed for good after bounded retries (recorded in calls.jsonl)."""


class ReplayError(ModelFailure):
    """A ``replay:`` model ran out of recorded responses for a role, or the run asked for something
    other than what was recorded (the replay diverged)."""
