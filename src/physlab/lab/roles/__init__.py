"""The nine lab roles: one module (typed tools/outputs, one pydantic-ai Agent per call) and one
prompt file (``<role>.md``) each."""

ROLES = ("surveyor", "planner", "orchestrator", "researcher", "computer", "reviewer", "critic",
         "adjudicator", "formatter")


def role_markers() -> dict[str, str]:
    """The first line of each role's prompt file (it opens the role's instructions): how a request
    is told to be the surveyor's, the reviewer's, ... when a scripted lab is played over HTTP."""
    from importlib import resources

    files = resources.files(__name__)
    return {r: files.joinpath(f"{r}.md").read_text(encoding="utf-8").splitlines()[0] for r in ROLES}
