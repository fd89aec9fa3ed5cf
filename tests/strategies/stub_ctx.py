"""The RunEnvironment pieces the studio/actor-critic tests stub out: models that play a test's script
(pydantic-ai FunctionModels, one per role) and a usage meter with nothing spent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from physlab.llm.errors import BudgetExceeded
from physlab.llm.usage import Usage


@dataclass
class Call:
    role: str
    system: str   # the conversation's instructions
    prompt: str   # the text of its first prompt (a retry's request holds only the error)
    user: str     # every user text of the conversation
    images: int   # images in the first prompt


def _call(role: str, messages: list[ModelMessage]) -> Call:
    system, user, first = [], [], None
    for msg in messages:
        if isinstance(msg, ModelRequest):
            system += [msg.instructions] if msg.instructions else []
            for part in msg.parts:
                if isinstance(part, SystemPromptPart):
                    system.append(part.content)
                elif isinstance(part, UserPromptPart):
                    parts = [part.content] if isinstance(part.content, str) else list(part.content)
                    first = first or parts
                    user.append("\n".join(p for p in parts if isinstance(p, str)))
    first = first or []
    return Call(role, "\n".join(system), "\n".join(p for p in first if isinstance(p, str)), "\n".join(user),
                sum(1 for p in first if not isinstance(p, str)))


@dataclass
class Script:
    """Per-role reply queues (the last reply repeats); records every request as a :class:`Call`. A
    role with an output tool (verifiers, the visual studio, the Judge) gets a JSON reply as that
    tool's call, as a real model gives it; any other reply to it is prose, which pydantic-ai retries."""

    replies: dict[str, list[str | Callable[[str], str]]]
    calls: list[Call] = field(default_factory=list)
    max_calls: int | None = None

    def model(self, role: str) -> FunctionModel:
        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if self.max_calls is not None and len(self.calls) >= self.max_calls:
                raise BudgetExceeded("max_calls")
            call = _call(role, messages)
            self.calls.append(call)
            queue = self.replies.get(role)
            if not queue:
                raise AssertionError(f"unexpected call for role {role}")
            item = queue.pop(0) if len(queue) > 1 else queue[0]
            reply = item(call.prompt) if callable(item) else item
            if info.output_tools and not info.allow_text_output and reply.lstrip().startswith("{"):
                return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, reply)])
            return ModelResponse(parts=[TextPart(reply)])

        return FunctionModel(respond)

    def roles(self) -> list[str]:
        return [c.role for c in self.calls]


class ScriptModels:
    """ModelSource whose ``for_role`` asks ``script.model(role)``."""

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
