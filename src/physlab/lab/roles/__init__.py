"""The nine lab roles: one module (typed tools/outputs, one pydantic-ai Agent per call) and one
prompt file (``<role>.md``) each."""

ROLES = ("surveyor", "planner", "orchestrator", "researcher", "computer", "reviewer", "critic",
         "adjudicator", "formatter")
