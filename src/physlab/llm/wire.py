"""What goes over the wire and into calls.jsonl: requests and responses as JSON, and the form
replay compares them in."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings


def dump_response(resp: ModelResponse) -> dict[str, Any]:
    return ModelMessagesTypeAdapter.dump_python([resp], mode="json")[0]


def load_response(data: dict[str, Any]) -> ModelResponse:
    msg = ModelMessagesTypeAdapter.validate_python([data])[0]
    assert isinstance(msg, ModelResponse)
    return msg


def dump_settings(settings: ModelSettings) -> dict[str, Any]:
    return json.loads(json.dumps(dict(settings), default=str))


def dump_request(messages: list[ModelMessage], settings: ModelSettings | None,
                 params: ModelRequestParameters | None) -> dict[str, Any]:
    out: dict[str, Any] = {"messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json")}
    if settings:
        out["settings"] = dump_settings(settings)
    if params is not None:
        out["tools"] = [t.name for t in params.function_tools]
        out["output_tools"] = [t.name for t in params.output_tools]
        if params.output_mode not in ("text", "tool", "auto"):
            out["output_mode"] = params.output_mode
    return out


_VOLATILE_KEYS = frozenset({"timestamp", "run_id", "conversation_id", "model_id"})


def normalize_messages(dumped: Any) -> Any:
    """A dumped message list without the fields that differ between two runs of the same
    conversation (timestamps, run ids, generated tool-call ids) - what replay compares to detect
    divergence."""
    if isinstance(dumped, dict):
        return {k: normalize_messages(v) for k, v in dumped.items() if k not in _VOLATILE_KEYS}
    if isinstance(dumped, list):
        return [normalize_messages(v) for v in dumped]
    return dumped
