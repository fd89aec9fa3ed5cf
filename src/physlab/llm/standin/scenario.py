"""Serve a scripted scenario (``physlab.llm.scripted``) over HTTP, the way a model that follows the
request's instructions would, so the real ``openai:`` path can run a whole demo (``scripted:lab-qec``)
against the stand-in in every output mode:

- a request with ``tools``: the scenario's tool calls go back as tool calls;
- a request without tools whose instructions carry PhysLab's tool-call envelope
  (``physlab.llm.text_tools``: tools in the text, for servers without tool calling): the scenario's
  calls go back as that JSON, and earlier JSON turns and "Result of ..." messages are read back into
  the tool calls and returns the scenario expects;
- a request for structured output without tools (a JSON-schema ``response_format``, llama.cpp's
  ``json_object`` with a ``schema``, or pydantic-ai's prompted-output instructions): the scenario's
  answer goes back as the JSON object.

The scenario is asked with the role the request belongs to: ``role_of(body)`` decides (e.g. from the
role's instructions, :func:`role_by_instructions`). Output tools are told from function tools by
``is_output(name)`` (PhysLab's structured answers are ``submit*`` or pydantic-ai's ``final_result``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.tools import ToolDefinition

from physlab.llm.standin.responders import Reply
from physlab.llm.text_tools import ANSWER_MARK, parse_calls

_SCHEMA_AT = re.compile(r"compatible with this schema:\s*", re.I)
_RESULT = re.compile(r"^Result of ([\w.-]+):\n", re.S)


def role_by_instructions(markers: Mapping[str, str]) -> Callable[[dict[str, Any]], str]:
    """A ``role_of`` that finds the role whose marker (e.g. the first line of its prompt file)
    opens the request's system message."""

    def role_of(body: dict[str, Any]) -> str:
        system = system_text(body)
        for role, marker in markers.items():
            if marker and marker in system:
                return role
        raise RuntimeError(f"no role's instructions in this request (system message starts {system[:80]!r})")

    return role_of


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(_text(m.get("content")) for m in body.get("messages", []) if m.get("role") in ("system", "developer"))


def _schema_in_instructions(body: dict[str, Any]) -> dict[str, Any] | None:
    system = system_text(body)
    m = _SCHEMA_AT.search(system)
    if not m:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(system[m.end():])
    except json.JSONDecodeError:
        return None
    return schema if isinstance(schema, dict) else None


def _is_output_default(name: str) -> bool:
    return name.startswith(("submit", "final_result"))


class ScenarioResponder:
    """A stand-in responder playing ``scenario`` (a factory from ``physlab.llm.scripted``)."""

    def __init__(self, scenario: Any, role_of: Callable[[dict[str, Any]], str], *,
                 is_output: Callable[[str], bool] = _is_output_default) -> None:
        if isinstance(scenario, str):
            from physlab.llm.scripted import get_scenario

            scenario = get_scenario(scenario)
        self.scenario = scenario()
        self.role_of = role_of
        self.is_output = is_output
        self.modes: dict[str, int] = {}  # how the requests came: tools, text_tools, structured, text
        self._lock = threading.Lock()  # the scenario keeps state across roles; the server is threaded

    def __call__(self, body: dict[str, Any]) -> Reply:
        role = self.role_of(body)
        envelope, final_names, structured = None, set(), None
        tools: list[ToolDefinition] = []
        if body.get("tools"):
            mode = "tools"
            tools = [ToolDefinition(name=t["function"]["name"], description=t["function"].get("description"),
                                    parameters_json_schema=t["function"].get("parameters") or {})
                     for t in body["tools"] if t.get("type") == "function"]
        else:
            schema = _schema_in_instructions(body)
            fmt = body.get("response_format") or {}
            if fmt.get("type") == "json_schema":
                schema = fmt["json_schema"].get("schema") or schema
                name = fmt["json_schema"].get("name")
            elif fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict):  # llama.cpp's form
                schema = fmt["schema"]
                name = schema.get("title")
            else:
                name = (schema or {}).get("title")
            choices = (((schema or {}).get("properties") or {}).get("calls") or {}).get("items", {}).get("anyOf")
            if choices:
                mode, envelope = "text_tools", schema
                for c in choices:
                    tname = c["properties"]["tool"]["const"]
                    tools.append(ToolDefinition(name=tname, description=c.get("description"),
                                                parameters_json_schema=c["properties"]["arguments"]))
                    if (c.get("description") or "").startswith(ANSWER_MARK):
                        final_names.add(tname)
            elif schema is not None:
                mode, structured = "structured", name or "final_result"
                tools.append(ToolDefinition(name=structured, parameters_json_schema=schema))
                final_names.add(structured)
            else:
                mode = "text"
        with self._lock:
            self.modes[mode] = self.modes.get(mode, 0) + 1
        outputs = [t for t in tools if t.name in final_names or (mode == "tools" and self.is_output(t.name))]
        functions = [t for t in tools if t not in outputs]
        info = AgentInfo(function_tools=functions, output_tools=outputs, allow_text_output=not outputs,
                         model_settings=None, model_request_parameters=ModelRequestParameters(
                             function_tools=functions, output_tools=outputs), instructions=system_text(body))
        messages = self._messages(body, text_tools=envelope is not None)
        with self._lock:
            try:
                reply = self.scenario(role, messages, info)
            except Exception as exc:  # noqa: BLE001 - off script: answer as a confused model would, in text
                self.modes["off_script"] = self.modes.get("off_script", 0) + 1
                return Reply(content=f"I cannot continue from here ({type(exc).__name__}: {exc}).")
        if isinstance(reply, str):
            reply = ModelResponse(parts=[TextPart(reply)])
        return self._reply(reply, mode)

    # ---- the conversation as the scenario expects it ------------------------------------------
    def _messages(self, body: dict[str, Any], *, text_tools: bool) -> list[ModelMessage]:
        out: list[ModelMessage] = []
        parts: list[Any] = []
        names: dict[str, str] = {}
        pending: list[str] = []  # ids of JSON-envelope calls waiting for their "Result of ..." message

        def flush() -> None:
            nonlocal parts
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []

        for i, msg in enumerate(body.get("messages", [])):
            role, text = msg.get("role"), _text(msg.get("content"))
            if role in ("system", "developer"):
                parts.append(SystemPromptPart(text))
            elif role == "user":
                m = _RESULT.match(text) if text_tools else None
                if m and pending:
                    parts.append(ToolReturnPart(m.group(1), text[m.end():], tool_call_id=pending.pop(0)))
                else:
                    parts.append(UserPromptPart(text))
            elif role == "tool":
                tid = msg.get("tool_call_id", "")
                parts.append(ToolReturnPart(names.get(tid, "tool"), text, tool_call_id=tid))
            elif role == "assistant":
                flush()
                rparts: list[Any] = []
                calls = msg.get("tool_calls") or []
                if text and not (text_tools and self._envelope_calls(text)):
                    rparts.append(TextPart(text))
                for tc in calls:
                    names[tc["id"]] = tc["function"]["name"]
                    rparts.append(ToolCallPart(tc["function"]["name"], tc["function"]["arguments"], tool_call_id=tc["id"]))
                if text_tools and (env := self._envelope_calls(text)):
                    for j, (name, args) in enumerate(env):
                        tid = f"tt_{i}_{j}"
                        pending.append(tid)
                        rparts.append(ToolCallPart(name, args, tool_call_id=tid))
                out.append(ModelResponse(parts=rparts))
        flush()
        return out

    @staticmethod
    def _envelope_calls(text: str) -> list[tuple[str, Any]] | None:
        return parse_calls(text)

    # ---- the scenario's reply as the request asked for it ----------------------------------------
    def _reply(self, resp: ModelResponse, mode: str) -> Reply:
        text = "".join(p.content for p in resp.parts if isinstance(p, TextPart)) or None
        calls = [(p.tool_name, p.args_as_dict()) for p in resp.parts if isinstance(p, ToolCallPart)]
        if mode == "tools" or not calls:
            return Reply(content=text, tool_calls=calls)
        if mode == "text_tools":
            return Reply(content=json.dumps({"calls": [{"tool": n, "arguments": a} for n, a in calls]}))
        return Reply(content=json.dumps(calls[-1][1]))  # structured: the answer's fields as the JSON object
