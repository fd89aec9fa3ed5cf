"""The two RunContext pieces the studio/actor-critic tests stub out: models from a test script's
FunctionModels (one per role) and a usage meter with nothing spent."""

from __future__ import annotations

from typing import Any

from physlab.llm.usage import Usage


class ScriptModels:
    """ModelSource whose ``for_role`` asks ``script.model(role)`` (a pydantic-ai FunctionModel)."""

    def __init__(self, script: Any) -> None:
        self.script, self.name = script, "scripted:test"

    def for_role(self, role: str) -> Any:
        return self.script.model(role)


class NoUsage:
    """UsageMeter with no calls recorded and no budget to enforce."""

    def by_role(self) -> dict[str, Usage]:
        return {}

    def total(self) -> Usage:
        return Usage()

    def check(self) -> None:
        return None
