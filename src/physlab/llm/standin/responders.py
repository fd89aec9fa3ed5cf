"""What the stand-in server answers: pluggable responders.

A responder is any callable ``(request_body: dict) -> Reply | str``. Provided:
- :class:`ScriptedResponder` - a queue of replies (or callables), played in order;
- :class:`EchoResponder` - echoes the last user message;
- :class:`RandomToolResponder` - a random but schema-valid call of one of the request's tools
  (arguments generated from the tool's JSON schema by ``fuzz_schema``, ids taken from the
  conversation), or text when there are no tools.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from physlab.llm.standin.fuzz_schema import ids_in, instance as random_instance, pick_tool


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    finish_reason: str | None = None  # default: "tool_calls" when there are tool calls, else "stop"


Responder = Callable[[dict[str, Any]], "Reply | str"]


def last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            c = msg.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


class EchoResponder:
    def __call__(self, body: dict[str, Any]) -> Reply:
        return Reply(content="echo: " + last_user_text(body)[:200])


class ScriptedResponder:
    """Replies in order; an item may be a Reply, a string, or a callable(body) -> Reply | str.
    When the script runs out, the server answers 500 (the test sees a clear failure)."""

    def __init__(self, replies: list[Any], *, repeat_last: bool = False) -> None:
        self.replies = list(replies)
        self.repeat_last = repeat_last
        self._i = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        with self._lock:
            if self._i >= len(self.replies):
                if not (self.repeat_last and self.replies):
                    raise RuntimeError(f"scripted responder exhausted after {len(self.replies)} replies")
                item = self.replies[-1]
            else:
                item = self.replies[self._i]
                self._i += 1
        return item(body) if callable(item) else item


class RandomToolResponder:
    """Calls a random tool of the request with random arguments that satisfy its JSON schema.
    ``text_probability`` of the time (or when there are no tools) it answers with text instead."""

    def __init__(self, seed: int = 0, *, text_probability: float = 0.0, text: str = "random text") -> None:
        self.rng = random.Random(seed)
        self.text_probability = text_probability
        self.text = text
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        tools = [t["function"] for t in body.get("tools") or [] if t.get("type") == "function"]
        with self._lock:
            if not tools or self.rng.random() < self.text_probability:
                return Reply(content=self.text)
            tool = pick_tool(tools, body, self.rng)
            schema = tool.get("parameters") or {"type": "object", "properties": {}}
            args = random_instance(schema, self.rng, ids=ids_in(body))
        return Reply(tool_calls=[(tool["name"], args)])


def as_reply(value: Reply | str) -> Reply:
    return Reply(content=value) if isinstance(value, str) else value


def args_json(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)
