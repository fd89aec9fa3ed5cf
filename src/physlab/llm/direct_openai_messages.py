"""DirectOpenAIModel's wire mapping, both ways. ``build_body``: pydantic-ai messages, tools, output
mode and settings -> the JSON that pydantic-ai's OpenAIChatModel sends through the openai SDK for
the same request, built as plain dicts (no SDK types, no ``_async_transform``). ``parse_completion``:
the completion JSON -> the ModelResponse OpenAIChatModel makes of it (without validating it into
SDK models first).

The semantics are OpenAIChatModel's (pydantic-ai 2.68, models/openai/_chat_model.py). A few pure
helpers are pydantic-ai internals, imported below rather than re-derived so that tool choice, reasoning
effort and retry rendering cannot drift; tests/llm/test_direct_openai.py sends the same conversations
through both clients to the stand-in server and compares the bodies, so an upgrade that changes any
of this fails there.

Sent like the SDK path: system prompts and instructions (as ``system`` messages, or the profile's
role), user text, images (URL or BinaryContent -> ``image_url``), text-like files inlined as text,
tool calls and returns (files a tool returned follow in a user message), retry prompts, tool /
native / prompted output, and the settings listed in ``_PASSTHROUGH`` plus max_tokens, stop
sequences, parallel_tool_calls, reasoning effort, extra_body. Refused with a UserError (use
``client: sdk``): audio, documents, video, uploaded files, image URLs that must be downloaded first.
Differences, on purpose: ThinkingParts are not sent back (OpenAIChatModel replays them as text or a
``reasoning_content`` field; vLLM's chat templates drop earlier turns' reasoning anyway), and the
OpenAI-hosted prompt-cache breakpoint settings and web search are not sent.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai._output import DEFAULT_OUTPUT_TOOL_NAME
from pydantic_ai._thinking_part import split_content_into_text_and_thinking
from pydantic_ai._utils import generate_tool_call_id, is_text_like_media_type, number_to_datetime
from pydantic_ai.exceptions import UnexpectedModelBehavior, UserError
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, _sendable_request_parts
from pydantic_ai.models._tool_choice import resolve_tool_choice
from pydantic_ai.models.openai._reasoning import (
    drop_sampling_params_for_reasoning,
    reasoning_active,
    resolve_openai_thinking_effort,
)
from pydantic_ai.models.openai._settings import drop_unsupported_params, support_openai_tool_forcing
from pydantic_ai.usage import RequestUsage

# ModelSettings key -> chat-completions field, sent when the setting is present (even as None, like the SDK).
_PASSTHROUGH = (
    ("seed", "seed"), ("temperature", "temperature"), ("top_p", "top_p"),
    ("presence_penalty", "presence_penalty"), ("frequency_penalty", "frequency_penalty"),
    ("logit_bias", "logit_bias"), ("stop_sequences", "stop"), ("openai_user", "user"),
    ("openai_logprobs", "logprobs"), ("openai_top_logprobs", "top_logprobs"), ("openai_store", "store"),
    ("openai_prediction", "prediction"), ("openai_text_verbosity", "verbosity"),
)


def _unsupported(kind: str) -> UserError:
    return UserError(f"{kind} is not supported by the direct OpenAI client; set `client: sdk` for this model "
                     "in the model registry")


def _content_item(model: Any, item: Any) -> dict[str, Any] | None:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.content}
    if isinstance(item, CachePoint):
        return None  # no cache breakpoints on this path (OpenAIChatModel drops them too unless OpenAI-hosted)
    if isinstance(item, ImageUrl) and not item.force_download:
        image: dict[str, Any] = {"url": item.url}
    elif isinstance(item, BinaryContent) and is_text_like_media_type(item.media_type):
        text = model._format_inlined_text_file(item.data.decode("utf-8"), media_type=item.media_type,
                                               identifier=item.identifier)
        return {"type": "text", "text": text}
    elif isinstance(item, BinaryContent) and item.is_image:
        image = {"url": item.data_uri}
    else:
        raise _unsupported(f"user content of kind {type(item).__name__}"
                           + (f" ({item.media_type})" if isinstance(item, BinaryContent) else ""))
    if item.vendor_metadata:
        image["detail"] = item.vendor_metadata.get("detail", "auto")
    return {"type": "image_url", "image_url": image}


def _user_message(model: Any, content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "user", "content": content}
    items = [_content_item(model, item) for item in content]
    return {"role": "user", "content": [i for i in items if i is not None]}


def _map_request(model: Any, message: ModelRequest, system_role: str, out: list[dict[str, Any]]) -> None:
    files: list[Any] = []
    for part in _sendable_request_parts(message.parts):  # renders a legacy RetryPromptPart as the SDK path does
        if isinstance(part, SystemPromptPart):
            out.append({"role": system_role, "content": part.content})
        elif isinstance(part, UserPromptPart):
            out.append(_user_message(model, part.content))
        elif isinstance(part, ToolReturnPart):
            text, part_files = part.model_response_str_and_user_content()
            files.extend(part_files)
            out.append({"role": "tool", "tool_call_id": part.tool_call_id or generate_tool_call_id(),
                        "content": text})
        else:
            raise _unsupported(f"request part {type(part).__name__}")
    if files:
        out.append(_user_message(model, files))


def _map_response(message: ModelResponse) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, ToolCallPart):
            calls.append({"id": part.tool_call_id or generate_tool_call_id(), "type": "function",
                          "function": {"name": part.tool_name, "arguments": part.args_as_json_str()}})
        # ThinkingPart: not sent back (see the module docstring); files, native-tool and compaction parts
        # are not sent back by OpenAIChatModel either.
    if not texts and not calls:
        return None  # an empty assistant message is a 400 at the API
    msg: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def map_messages(model: Any, messages: list[ModelMessage], params: ModelRequestParameters) -> list[dict[str, Any]]:
    role = model.profile.get("openai_system_prompt_role") or "system"
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            _map_request(model, message, role, out)
        elif isinstance(message, ModelResponse) and (mapped := _map_response(message)) is not None:
            out.append(mapped)
    # Instructions go right after the leading system prompts, as OpenAIChatModel puts them.
    lead = next((i for i, m in enumerate(out) if m["role"] != role), len(out))
    if parts := model._get_instruction_parts(messages, params):
        out[lead:lead] = [{"role": role, "content": p.content} for p in parts]
    if not model.profile.get("openai_chat_supports_multiple_system_messages", True) and role != "user":
        lead = next((i for i, m in enumerate(out) if m["role"] != role), len(out))
        if lead > 1:
            out[:lead] = [{"role": role, "content": "\n\n".join(m["content"] for m in out[:lead])}]
    return out


def _tools_and_choice(model: Any, settings: dict[str, Any], params: ModelRequestParameters
                      ) -> tuple[list[dict[str, Any]], Any]:
    """OpenAIChatModel._get_tool_choice: 'required' when text output is not allowed, and so on."""
    profile = model.profile
    resolved = resolve_tool_choice(settings, params)  # type: ignore[arg-type]
    defs = params.declared_tool_defs
    forcing = resolved != "auto" and resolved != "none" and support_openai_tool_forcing(
        model.model_name, profile, settings, thinking=reasoning_active(profile, settings, params))  # type: ignore[arg-type]
    choice: Any
    if resolved in ("auto", "none"):
        choice = resolved
    elif resolved == "required":
        choice = "required" if forcing else "auto"
    else:
        mode, names = resolved
        effective = "auto" if mode == "auto" or not forcing else mode
        if mode == "required" and len(names) == 1 and forcing:
            choice = {"type": "function", "function": {"name": next(iter(names))}}
        elif profile.get("openai_chat_supports_allowed_tools", False):
            choice = {"type": "allowed_tools", "allowed_tools": {"mode": effective, "tools": [
                {"type": "function", "function": {"name": n}} for n in defs if n in names]}}
        else:
            defs = {k: v for k, v in defs.items() if k in names}
            choice = effective
    strict_ok = profile.get("openai_supports_strict_tool_definition", True)
    tools = []
    for t in defs.values():
        fn: dict[str, Any] = {"name": t.name, "description": t.description or "",
                              "parameters": t.parameters_json_schema}
        if t.strict and strict_ok:
            fn["strict"] = t.strict
        tools.append({"type": "function", "function": fn})
    return tools, (choice if tools else None)


def _response_format(profile: Any, params: ModelRequestParameters) -> dict[str, Any] | None:
    if params.output_mode == "native":
        o = params.output_object
        assert o is not None
        schema: dict[str, Any] = {"name": o.name or DEFAULT_OUTPUT_TOOL_NAME, "schema": o.json_schema}
        if o.description:
            schema["description"] = o.description
        if profile.get("openai_supports_strict_tool_definition", True):
            schema["strict"] = o.strict
        return {"type": "json_schema", "json_schema": schema}
    if params.output_mode == "prompted" and profile.get("supports_json_object_output", False):
        return {"type": "json_object"}
    return None


def _reasoning_effort(profile: Any, settings: dict[str, Any], params: ModelRequestParameters) -> Any:
    """OpenAIChatModel._translate_thinking; None means the field is not sent."""
    if effort := settings.get("openai_reasoning_effort"):
        return effort
    thinking = params.thinking
    if thinking is None or (thinking is False and "openai_chat_thinking_false_body" in profile):
        return None
    return resolve_openai_thinking_effort(
        thinking, profile, supports_max=profile.get("openai_chat_supports_max_reasoning_effort", False))


def build_body(model: Any, messages: list[ModelMessage], settings: dict[str, Any],
               params: ModelRequestParameters) -> dict[str, Any]:
    """The JSON body for one non-streamed request; ``settings`` are prepared (``prepare_request``)."""
    profile = model.profile
    tools, tool_choice = _tools_and_choice(model, settings, params)
    body: dict[str, Any] = {"model": model.model_name, "messages": map_messages(model, messages, params),
                            "stream": False}
    settings = dict(settings)  # the helpers below mutate the settings they are given
    drop_sampling_params_for_reasoning(profile, settings, params)  # type: ignore[arg-type]
    drop_unsupported_params(profile, settings)  # type: ignore[arg-type]
    if tools:
        body["tools"] = tools
        body["tool_choice"] = tool_choice
        if "parallel_tool_calls" in settings:
            body["parallel_tool_calls"] = settings["parallel_tool_calls"]
    if "max_tokens" in settings:
        completion = profile.get("openai_chat_supports_max_completion_tokens", True)
        body["max_completion_tokens" if completion else "max_tokens"] = settings["max_tokens"]
    for key, field in _PASSTHROUGH:
        if key in settings:
            body[field] = settings[key]
    if (response_format := _response_format(profile, params)) is not None:
        body["response_format"] = response_format
    if (effort := _reasoning_effort(profile, settings, params)) is not None:
        body["reasoning_effort"] = effort
    extra = settings.get("extra_body")
    false_body = profile.get("openai_chat_thinking_false_body")
    if false_body is not None and params.thinking is False and not settings.get("openai_reasoning_effort"):
        extra = {**false_body, **(extra or {})}
    if extra:
        body.update(extra)  # the SDK merges extra_body into the top level of the JSON the same way
    return body


# ---- the reply ------------------------------------------------------------------------------
_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_call", "content_filter": "content_filter",
           "function_call": "tool_call"}  # OpenAIChatModel's CHAT_FINISH_REASON_MAP; anything else -> None
_USAGE_KEYS = frozenset({"prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "total_tokens"})


def parse_completion(reply: Any, profile: Any, base_url: str, model_name: str) -> ModelResponse:
    """A completion -> ModelResponse, as OpenAIChatModel._process_response maps it."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        raise UnexpectedModelBehavior("Invalid response from openai chat completions endpoint: no choice with a "
                                      "message", json.dumps(reply)[:2000])
    choice, message = choices[0], choices[0]["message"]
    raw_finish = choice.get("finish_reason")
    details: dict[str, Any] = {}
    if isinstance(logprobs := choice.get("logprobs"), dict) and logprobs.get("content"):
        details["logprobs"] = [
            {"token": lp.get("token"), "bytes": lp.get("bytes"), "logprob": lp.get("logprob"),
             "top_logprobs": [{"token": t.get("token"), "bytes": t.get("bytes"), "logprob": t.get("logprob")}
                              for t in lp.get("top_logprobs") or []]}
            for lp in logprobs["content"]]
    if raw_finish:
        details["finish_reason"] = raw_finish
    for key in ("moderation", "service_tier"):
        if reply.get(key):
            details[key] = reply[key]
    if isinstance(created := reply.get("created"), (int, float)) and created:
        details["timestamp"] = number_to_datetime(created)
    parts: list[Any] = []
    # No finish reason: 'stop', as OpenAIChatModel assumes; one it does not know: None.
    finish = _FINISH.get(raw_finish if isinstance(raw_finish, str) and raw_finish else "stop")
    if message.get("refusal"):
        details.pop("finish_reason", None)
        details["refusal"] = message["refusal"]
        finish = "content_filter"
    else:
        parts = _reply_parts(message, profile)
    return ModelResponse(
        parts=parts, usage=_usage(reply, base_url, model_name), model_name=reply.get("model"),
        provider_details=details or None, provider_response_id=reply.get("id") or None, provider_name="openai",
        provider_url=base_url, canonical_system="openai", finish_reason=finish)  # type: ignore[arg-type]


def _reply_parts(message: dict[str, Any], profile: Any) -> list[Any]:
    parts: list[Any] = []
    custom = profile.get("openai_chat_thinking_field")
    for field in (custom, "reasoning", "reasoning_content"):
        if field and isinstance(value := message.get(field), str) and value:
            parts.append(ThinkingPart(id=field, content=value, provider_name="openai"))
            break
    content = message.get("content")
    if isinstance(content, list):  # some servers send content parts; their text is the content
        content = "".join(p if isinstance(p, str) else p.get("text", "") for p in content
                          if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")) or None
    if isinstance(content, str) and content:
        tags = profile.get("thinking_tags", ("<think>", "</think>"))
        if tags[0] in content:
            for p in split_content_into_text_and_thinking(content, tags):
                if isinstance(p, ThinkingPart):
                    p.id, p.provider_name = "content", "openai"
                parts.append(p)
        else:
            parts.append(TextPart(content))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        if call.get("type", "function") != "function" or "name" not in fn:
            raise UnexpectedModelBehavior(f"Unsupported tool call in the reply: {json.dumps(call)[:500]}")
        extra = call.get("extra_content")
        parts.append(ToolCallPart(fn["name"], fn.get("arguments"),
                                  tool_call_id=call.get("id") or generate_tool_call_id(),
                                  provider_name="openai" if extra else None,
                                  provider_details={"extra_content": extra} if extra else None))
    return parts


def _usage(reply: dict[str, Any], provider_url: str, model_name: str) -> RequestUsage:
    """pydantic-ai's map_usage for a chat completion, from the JSON."""
    raw = reply.get("usage")
    if not isinstance(raw, dict):
        return RequestUsage(unmeasured_requests=1)
    if raw.keys() <= _USAGE_KEYS and isinstance(p := raw.get("prompt_tokens"), int) \
            and isinstance(c := raw.get("completion_tokens"), int):
        return RequestUsage(input_tokens=p, output_tokens=c)  # the plain case, without genai-prices' extractor
    data = {k: ({kk: vv for kk, vv in v.items() if vv is not None} if isinstance(v, dict) else v)
            for k, v in raw.items() if v is not None}
    details = {k: v for k, v in data.items() if k not in _USAGE_KEYS and isinstance(v, int)}
    if isinstance(ctd := data.get("completion_tokens_details"), dict):
        details.update(ctd)
    usage = RequestUsage.extract({"model": model_name, "usage": data}, provider="openai", provider_url=provider_url,
                                 provider_fallback="openai", api_flavor="chat", details=details)
    if isinstance(ptd := data.get("prompt_tokens_details"), dict) and isinstance(ptd.get("cache_write_tokens"), int):
        usage.cache_write_tokens = ptd["cache_write_tokens"]
    return usage
