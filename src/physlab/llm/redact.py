"""Secrets out of what a server says: the one redaction every server-provided text goes through
before PhysLab prints it or keeps it (calls.jsonl, metrics.json, state.json, LOG.md, the run's git
history, `models check`, the CritPt export).

A careless proxy answers 401 with "Incorrect API key provided: <the key>", and may pass on an
upstream's key in its message. :func:`redact` replaces the keys in use (which the caller names) and
any token-shaped string (the forms API keys and bearer tokens are issued in) with ``[redacted]``.
A model's reply (:func:`redact_reply`) loses the keys in use only: its text is physics, where a
token-like shape (``hf_…`` variables, "bearer", code reading ``api_key``) is no secret.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the pydantic-ai types only: this module stays light (the CritPt export uses it)
    from pydantic_ai.messages import ModelResponse

REDACTED = "[redacted]"
MIN_SECRET = 8  # a shorter "key" would redact ordinary words; no provider issues one

# The shapes keys and tokens are issued in (providers' documented prefixes), and a bearer token or
# api_key value written out in a message, whatever its shape.
_TOKENS = re.compile(
    r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{10,}"               # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"   # GitHub
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"                    # AWS access key ids
    r"|\bAIza[0-9A-Za-z_\-]{30,}"                        # Google API keys
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"                  # Slack
    r"|\bhf_[A-Za-z0-9]{20,}"                            # Hugging Face
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # JSON web tokens
)
_SAID = re.compile(r"(?i)(\bbearer\s+|\b(?:x-)?api[_-]?key[\"']?\s*[:=]\s*[\"']?)([^\s\"',;)]{8,})")


def redact_keys(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with each of ``secrets`` (the keys in use), as written or JSON-escaped, replaced by
    ``[redacted]``; nothing else changes."""
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
        escaped = json.dumps(secret)[1:-1]  # inside a JSON string (a tool call's arguments)
        if escaped != secret:
            text = text.replace(escaped, REDACTED)
    return text


def redact_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with each of ``secrets`` and every token-shaped string replaced by ``[redacted]``."""
    text = _TOKENS.sub(REDACTED, redact_keys(text, secrets))
    return _SAID.sub(lambda m: m.group(1) + REDACTED, text)


def _each(value: Any, fix: Callable[[str], str]) -> Any:
    """``value`` (strings, mappings, lists) with ``fix`` applied to every string, keys and values alike."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, dict):
        return {_each(k, fix): _each(v, fix) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_each(v, fix) for v in value]
    return value


def redact(value: Any, *secrets: str) -> Any:
    """``value`` (a server's message, or its JSON answer: strings, mappings, lists) with the keys in
    use (``secrets``) and token-shaped strings redacted, keys and values alike."""
    return _each(value, lambda text: redact_text(text, secrets))


def redact_keys_in(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` (strings, mappings, lists) with the keys in use redacted, and nothing else."""
    return _each(value, lambda text: redact_keys(text, secrets)) if secrets else value


# What a reply says beside the model's words: the server's own, redacted like its error messages.
_SERVER_FIELDS = ("model_name", "provider_response_id", "provider_details")


def redact_reply(resp: ModelResponse, secrets: tuple[str, ...]) -> ModelResponse:
    """A model's reply (a pydantic-ai ``ModelResponse``) with the keys in use taken out of its text,
    thinking, tool-call arguments and tool returns, and token-shaped strings out of what the server
    says beside them; the same object when there was nothing to take out."""
    parts = [_part(p, secrets) for p in resp.parts]
    changed: dict[str, Any] = {}
    for name in _SERVER_FIELDS:
        said = getattr(resp, name, None)
        if said is not None and (clean := redact(said, *secrets)) != said:
            changed[name] = clean
    if any(a is not b for a, b in zip(parts, resp.parts)):
        changed["parts"] = parts
    return dataclasses.replace(resp, **changed) if changed else resp


def _part(part: Any, secrets: tuple[str, ...]) -> Any:
    if not secrets or not dataclasses.is_dataclass(part) or isinstance(part, type):
        return part
    changed = {}
    for name in ("content", "args"):  # text and thinking, a tool call's arguments, a tool's return
        value = getattr(part, name, None)
        if isinstance(value, (str, dict, list)) and (clean := redact_keys_in(value, secrets)) != value:
            changed[name] = clean
    return dataclasses.replace(part, **changed) if changed else part
