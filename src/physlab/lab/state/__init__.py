"""ResearchState models, pure transitions, invariants and Markdown rendering."""

from physlab.lab.state.invariants import check as check_invariants
from physlab.lab.state.models import ResearchState, Survey
from physlab.lab.state.transitions import TransitionError

__all__ = ["ResearchState", "Survey", "TransitionError", "check_invariants"]
