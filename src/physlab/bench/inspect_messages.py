"""A run's model calls (calls.jsonl: pydantic-ai messages as recorded) as Inspect AI messages,
model outputs and model events, built with inspect_ai's own types.

Each calls.jsonl line holds the full request (every message the role's agent sent) and the reply.
The reply becomes an assistant message; request parts map one to one (system prompts and
instructions -> system, user prompts -> user, tool returns and tool retries -> tool, other retries
-> user). A sample's message list shows each role's conversation once: a call that continues the
role's previous one adds only its new messages.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from inspect_ai.event import Event, ModelEvent
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentReasoning,
    ContentText,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    StopReason,
)
from inspect_ai.tool import ToolCall
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from physlab.llm.usage import CallRecord
from physlab.llm.wire import load_response, normalize_messages

# Inspect's stop reasons; pydantic-ai's finish reasons map onto them.
_STOP: dict[str, StopReason] = {"stop": "stop", "length": "max_tokens", "tool_call": "tool_calls",
                                "content_filter": "content_filter"}


def _user_content(content: Any) -> str | list:
    if isinstance(content, str):
        return content
    parts: list = []
    for item in content:
        if isinstance(item, str):
            parts.append(ContentText(text=item))
        elif isinstance(item, ImageUrl):
            parts.append(ContentImage(image=item.url))
        elif isinstance(item, BinaryContent) and item.is_image:
            parts.append(ContentImage(image=item.data_uri))
        else:
            parts.append(ContentText(text=f"[{type(item).__name__}]"))
    return parts


def _request_messages(req: ModelRequest, meta: dict[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    if req.instructions:
        out.append(ChatMessageSystem(content=req.instructions, metadata=meta))
    for part in req.parts:
        if isinstance(part, SystemPromptPart):
            out.append(ChatMessageSystem(content=part.content, metadata=meta))
        elif isinstance(part, UserPromptPart):
            out.append(ChatMessageUser(content=_user_content(part.content), metadata=meta))
        elif isinstance(part, ToolReturnPart):
            out.append(ChatMessageTool(content=part.model_response_str(), tool_call_id=part.tool_call_id,
                                       function=part.tool_name, metadata=meta))
        elif isinstance(part, RetryPromptPart):
            if part.tool_name:
                out.append(ChatMessageTool(content=part.model_response(), tool_call_id=part.tool_call_id,
                                           function=part.tool_name, metadata=meta))
            else:
                out.append(ChatMessageUser(content=part.model_response(), metadata=meta))
    return out


def assistant_message(resp: ModelResponse, meta: dict[str, Any]) -> ChatMessageAssistant:
    content: list = []
    calls: list[ToolCall] = []
    for part in resp.parts:
        if isinstance(part, ThinkingPart):
            content.append(ContentReasoning(reasoning=part.content))
        elif isinstance(part, TextPart):
            content.append(ContentText(text=part.content))
        elif isinstance(part, ToolCallPart):
            calls.append(ToolCall(id=part.tool_call_id, function=part.tool_name, arguments=part.args_as_dict()))
    if len(content) == 1 and isinstance(content[0], ContentText):
        content = content[0].text  # type: ignore[assignment]
    return ChatMessageAssistant(content=content or "", tool_calls=calls or None, model=resp.model_name,
                                source="generate", metadata=meta)


def usage_of(rec: CallRecord) -> ModelUsage:
    return ModelUsage(input_tokens=rec.input_tokens, output_tokens=rec.output_tokens,
                      total_tokens=rec.input_tokens + rec.output_tokens, total_cost=rec.cost_usd or None)


def _output(rec: CallRecord, resp: ModelResponse | None, meta: dict[str, Any]) -> ModelOutput:
    if resp is None:
        return ModelOutput(model=rec.model, choices=[], usage=usage_of(rec), time=rec.latency_s, error=rec.error)
    message = assistant_message(resp, meta)
    stop = _STOP.get(str(rec.finish_reason or resp.finish_reason or "stop"), "unknown")
    return ModelOutput(model=rec.model, choices=[ChatCompletionChoice(message=message, stop_reason=stop)],
                       usage=usage_of(rec), time=rec.latency_s, error=rec.error)


def _parsed(rec: CallRecord) -> tuple[list, ModelResponse | None]:
    request = rec.request if isinstance(rec.request, dict) else {}
    try:
        messages = ModelMessagesTypeAdapter.validate_python(request.get("messages") or [])
    except ValueError:  # a record from another pydantic-ai version: keep the call, drop its bodies
        messages = []
    try:
        resp = load_response(rec.response) if isinstance(rec.response, dict) else None
    except ValueError:
        resp = None
    return messages, resp


def transcript(calls: Iterable[CallRecord]) -> tuple[list[ChatMessage], list[Event]]:
    """The sample's messages (each role's conversation once, in call order) and one model event
    per call (its full input and output, role, time, tokens, error)."""
    messages: list[ChatMessage] = []
    events: list[Event] = []
    seen: list[list] = []  # each earlier call's normalized conversation: its request, then its reply
    for rec in calls:
        meta = {"physlab_role": rec.role, "physlab_call": rec.seq}
        request, resp = _parsed(rec)
        full = _messages_of(request, meta)
        dumped = normalize_messages((rec.request or {}).get("messages") or []) if isinstance(rec.request, dict) else []
        # the longest earlier conversation this request continues is already in the list
        shared = max((len(c) for c in seen if c and dumped[:len(c)] == c), default=0)
        new_from = len(_messages_of(request[:shared], meta))
        messages.extend(full[new_from:])
        output = _output(rec, resp, meta)
        if output.choices:
            messages.append(output.choices[0].message)
        seen.append(dumped + ([normalize_messages(rec.response)] if isinstance(rec.response, dict) else []))
        # a record is written when its call ends: ts is the end, ts - latency the start
        done = dt.datetime.fromtimestamp(rec.ts, dt.UTC) if rec.ts else dt.datetime.now(dt.UTC)
        events.append(ModelEvent(model=rec.model, role=rec.role, input=full, tools=[], tool_choice="auto",
                                 config=GenerateConfig(), output=output,
                                 timestamp=done - dt.timedelta(seconds=rec.latency_s or 0.0), completed=done,
                                 working_time=rec.latency_s, retries=rec.retries or None, error=rec.error,
                                 metadata={"physlab_call": rec.seq, **({"note": rec.note} if rec.note else {})}))
    return messages, events


def _messages_of(request: list, meta: dict[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for msg in request:
        if isinstance(msg, ModelRequest):
            out.extend(_request_messages(msg, meta))
        elif isinstance(msg, ModelResponse):
            out.append(assistant_message(msg, meta))
    return out
