"""What the stand-in server answers: pluggable responders.

A responder is any callable ``(request_body: dict) -> Reply | str``. Provided:
- :class:`ScriptedResponder` - a queue of replies (or callables), played in order;
- :class:`EchoResponder` - echoes the last user message;
- :class:`RandomToolResponder` - a random but schema-valid call of one of the request's tools
  (arguments generated from the tool's JSON schema), or text when there are no tools.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Callable


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
            tool = self.rng.choice(tools)
            schema = tool.get("parameters") or {"type": "object", "properties": {}}
            args = random_instance(schema, self.rng, defs=schema.get("$defs") or schema.get("definitions") or {})
        return Reply(tool_calls=[(tool["name"], args)])


def random_instance(schema: Any, rng: random.Random, *, defs: dict[str, Any], depth: int = 0) -> Any:
    """A random value valid under ``schema`` (the JSON-schema subset pydantic emits for tools)."""
    if not isinstance(schema, dict) or schema is True:
        return rng.choice([0, "x", True, None])
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return random_instance(defs.get(name, {}), rng, defs=defs, depth=depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = schema[key]
            if depth > 4:  # prefer a non-recursive branch deep down
                options = [o for o in options if "$ref" not in o] or options
            return random_instance(rng.choice(options), rng, defs=defs, depth=depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for sub in schema["allOf"]:
            sub = defs.get(sub["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in sub else sub
            merged.update(sub)
        return random_instance(merged, rng, defs=defs, depth=depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = rng.choice(typ)
    if typ is None:
        typ = "object" if "properties" in schema else "string"
    if typ == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out = {}
        for name, sub in props.items():
            if name in required or (depth < 3 and rng.random() < 0.5):
                out[name] = random_instance(sub, rng, defs=defs, depth=depth + 1)
        return out
    if typ == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + (3 if depth < 3 else 0))
        n = rng.randint(lo, max(lo, hi))
        return [random_instance(schema.get("items", {}), rng, defs=defs, depth=depth + 1) for _ in range(n)]
    if typ == "string":
        lo = schema.get("minLength", 1)
        hi = schema.get("maxLength", max(lo, 12))
        n = rng.randint(lo, max(lo, hi))
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(n)) or "a" * lo
    if typ == "integer":
        lo = int(schema.get("minimum", schema.get("exclusiveMinimum", -101) + 1))
        hi = int(schema.get("maximum", schema.get("exclusiveMaximum", 101) - 1))
        return rng.randint(lo, max(lo, hi))
    if typ == "number":
        lo = float(schema.get("minimum", schema.get("exclusiveMinimum", -100.0)))
        hi = float(schema.get("maximum", schema.get("exclusiveMaximum", 100.0)))
        return rng.uniform(lo, hi)
    if typ == "boolean":
        return rng.random() < 0.5
    if typ == "null":
        return None
    return None


def as_reply(value: Reply | str) -> Reply:
    return Reply(content=value) if isinstance(value, str) else value


def args_json(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)
