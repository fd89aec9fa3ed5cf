"""Tool calls in the text, for servers that take no ``tools``: the recording model's translation of
a request with function (or output) tools into one that asks for JSON, and of the JSON reply back
into the tool calls the agent expects.

pydantic-ai's ``PromptedOutput``/``NativeOutput`` carry a structured *answer* without tools; a role
that also *calls* tools (run code, create a hypothesis) needs those calls carried the same way. No
library does this, so it is done here, at the model seam, where every strategy's requests pass:

- the request: every tool becomes one choice of a JSON envelope ``{"calls": [{"tool": NAME,
  "arguments": {...}}, ...]}`` described in the instructions (``prompted``) or sent as the JSON-schema
  response format (``native``); the structured answer is one more choice, named after its schema;
  earlier tool calls and their results in the history become that JSON and plain user text;
- the reply: the envelope's calls become ``ToolCallPart``\\ s, the answer choice becomes the JSON text
  pydantic-ai validates as the output. A reply that is not an envelope is left as it is (the agent
  answers it with its usual corrective retry).
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import (
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.output import OutputObjectDefinition

RAW_KEY = "physlab_text_tools"  # provider_details key: the reply's text as the model wrote it

_TEMPLATE = """\
You cannot call tools directly here. To use a tool, or to give your final answer, reply with one JSON
object and nothing else (no text or Markdown fencing around it), compatible with this schema:

{schema}

Put each tool call in `calls` as {{"tool": NAME, "arguments": {{...}}}}; the results come back in the
next message. The tools:
{tools}
"""


def needs_translation(params: ModelRequestParameters) -> bool:
    return bool(params.function_tools or params.output_tools)


@dataclass
class TextToolsRequest:
    """One request translated for a server without tools, and how to read its reply back."""

    messages: list[ModelMessage]
    params: ModelRequestParameters
    function_names: frozenset[str]
    output_tool_names: tuple[str, ...]
    final_name: str | None  # the structured answer's choice (PromptedOutput/NativeOutput), if any

    def decode(self, resp: ModelResponse) -> ModelResponse:
        text = "".join(p.content for p in resp.parts if isinstance(p, TextPart))
        calls = parse_calls(text)
        if calls is None and len(self.output_tool_names) == 1 and not self.final_name:
            obj = _json_object(text)  # the answer's arguments given directly
            if obj is not None:
                calls = [(self.output_tool_names[0], obj)]
        if calls is None:
            return resp
        parts: list[Any] = [p for p in resp.parts if isinstance(p, ThinkingPart)]
        for name, args in calls:
            if name == self.final_name and name not in self.function_names:
                parts.append(TextPart(json.dumps(args)))
            else:  # a function or output tool (an unknown name gets the agent's corrective retry)
                parts.append(ToolCallPart(name, args, tool_call_id=f"call_{uuid.uuid4().hex[:12]}"))
        details = {**(resp.provider_details or {}), RAW_KEY: text}
        return replace(resp, parts=parts, provider_details=details)


def encode(messages: list[ModelMessage], params: ModelRequestParameters, mode: str) -> TextToolsRequest:
    """``messages``/``params`` for a server without tools, in ``mode`` (native, or prompted; in
    constrained mode the request is the prompted one, which the seam also asks the server to hold
    to the envelope's schema)."""
    tools = [*params.function_tools, *params.output_tools]
    final = params.output_object
    final_name = (final.name or "final_answer") if final is not None else None
    defs: dict[str, Any] = {}
    choices = []
    lines = []
    output_names = {t.name for t in params.output_tools}
    for t in tools:
        args = _hoist(t.parameters_json_schema or {"type": "object", "properties": {}}, f"{t.name}__", defs)
        choices.append(_choice(t.name, args, t.description, answer=t.name in output_names))
        lines.append(f"- {t.name}: {_one_line(t.description) or '(no description)'}")
    if final is not None and final_name is not None:
        args = _hoist(final.json_schema, "answer__", defs)
        choices.append(_choice(final_name, args, final.description, answer=True))
        lines.append(f"- {final_name}: give your final answer (alone in `calls`). "
                     f"{_one_line(final.description)}".rstrip())
    elif params.output_tools:
        names = ", ".join(t.name for t in params.output_tools)
        lines.append(f"(Calling {names} gives your final answer; put it alone in `calls`.)")
    if params.allow_text_output and final is None:
        lines.append("(You may also reply in plain text, without JSON, to end your turn.)")
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"calls": {"type": "array", "minItems": 1, "items": {"anyOf": choices}}},
        "required": ["calls"],
    }
    if defs:
        schema["$defs"] = defs
    template = _TEMPLATE.replace("{tools}", "\n".join(lines).replace("{", "{{").replace("}", "}}"))
    wire = replace(
        params, function_tools=[], output_tools=[], output_mode="native" if mode == "native" else "prompted",
        output_object=OutputObjectDefinition(json_schema=schema, name="tool_calls", strict=False),
        prompted_output_template=template, allow_text_output=True, tool_visibility=None,
        revealed_tool_names=set(), introduced_tool_names=set())
    return TextToolsRequest(messages=[_history(m) for m in messages], params=wire,
                            function_names=frozenset(t.name for t in params.function_tools),
                            output_tool_names=tuple(t.name for t in params.output_tools), final_name=final_name)


ANSWER_MARK = "Final answer."


def _choice(name: str, args: dict[str, Any], description: str | None, *, answer: bool) -> dict[str, Any]:
    """One choice of the envelope; the final answer's description opens with ANSWER_MARK."""
    c: dict[str, Any] = {"type": "object", "properties": {"tool": {"const": name}, "arguments": args},
                         "required": ["tool", "arguments"]}
    text = " ".join(x for x in (ANSWER_MARK if answer else "", _one_line(description)) if x)
    if text:
        c["description"] = text
    return c


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:600]


def _hoist(schema: dict[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` moved into ``defs`` under ``prefix`` (two tools may each define
    a model of the same name), and its references renamed to match."""
    s = copy.deepcopy(schema)
    local = {**s.pop("$defs", {}), **s.pop("definitions", {})}

    def rename(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: (re.sub(r"^#/(?:\$defs|definitions)/", f"#/$defs/{prefix}", v) if k == "$ref" and
                        isinstance(v, str) else rename(v)) for k, v in x.items()}
        if isinstance(x, list):
            return [rename(v) for v in x]
        return x

    for name, sub in local.items():
        defs[f"{prefix}{name}"] = rename(sub)
    out = rename(s)
    out.pop("title", None)
    return out


def _history(msg: ModelMessage) -> ModelMessage:
    """An earlier turn as a server without tools can take it: tool calls as the JSON the model
    wrote, tool results as user text."""
    if isinstance(msg, ModelResponse):
        calls = [p for p in msg.parts if isinstance(p, ToolCallPart)]
        if not calls:
            return msg
        raw = (msg.provider_details or {}).get(RAW_KEY)
        text = raw if isinstance(raw, str) else json.dumps(
            {"calls": [{"tool": c.tool_name, "arguments": c.args_as_dict()} for c in calls]})
        return replace(msg, parts=[TextPart(text)])
    if isinstance(msg, ModelRequest) and any(isinstance(p, BaseToolReturnPart) for p in msg.parts):
        parts: list[Any] = []
        for p in msg.parts:
            if isinstance(p, BaseToolReturnPart):
                parts.append(UserPromptPart(f"Result of {p.tool_name}:\n{p.model_response_str()}"))
            else:
                parts.append(p)
        return replace(msg, parts=parts)
    return msg


def _unfence(text: str) -> str:
    """The text without a leading ``` / ```json and a trailing ``` (string operations: the regex
    this replaces, tried at every position of the text, was quadratic in a run of spaces)."""
    body = text.strip()
    if body.startswith("```"):
        body = body[3:]
        body = body[4:] if body[:4].lower() == "json" else body
    if body.endswith("```"):
        body = body[:-3]
    return body.strip()


def _json_object(text: str) -> dict[str, Any] | None:
    body = _unfence(text or "")
    if not body:
        return None
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        start = body.find("{")
        if start < 0:
            return None
        try:
            obj, _ = json.JSONDecoder().raw_decode(body[start:])
        except json.JSONDecodeError:
            return None
    return obj if isinstance(obj, dict) else None


def parse_calls(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    """The tool calls in a reply's JSON envelope (None when the text is not one)."""
    obj = _json_object(text)
    if obj is None:
        return None
    items = obj.get("calls") if isinstance(obj.get("calls"), list) else (
        [obj] if isinstance(obj.get("tool"), str) else None)
    if not items:
        return None
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            return None
        args = item.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                return None
        out.append((item["tool"], args if isinstance(args, dict) else {"value": args}))
    return out
