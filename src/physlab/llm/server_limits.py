"""What a server's refusal says, read from its status, headers and message: how long to wait, the
largest output cap it accepts, its context window, and whether it refuses tool calls.

The wordings are the servers' own (OpenAI, vLLM, Anthropic, LiteLLM, Ollama); pydantic-ai already
classifies a context overflow (``ModelContextWindowExceededError``) and reads ``Retry-After`` /
``retry-after-ms`` (``retry_after``); the numbers in the messages and the proxy-prefixed headers
are read here because no library does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai.exceptions import ModelAPIError, ModelContextWindowExceededError, ModelHTTPError

from physlab.llm.redact import redact_text


def message_of(exc: BaseException) -> str:
    """The server's error text (the body's message when there is one), on one line, token-shaped
    strings redacted (:mod:`physlab.llm.redact`)."""
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        err = body.get("error", body)
        text = str(err.get("message") if isinstance(err, dict) else err) if err else ""
        if not text:
            text = json.dumps(body)[:2000]
    elif isinstance(body, (str, bytes)):
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
    return redact_text(" ".join((text or str(exc)).split()))


# ---- rate limits -----------------------------------------------------------------------------

_WAIT_HEADERS_MS = ("retry-after-ms", "llm_provider-retry-after-ms")
_WAIT_HEADERS_S = ("retry-after", "llm_provider-retry-after")


def retry_after_s(exc: BaseException, headers: Mapping[str, str] | None = None) -> float | None:
    """Seconds the server asked us to wait: pydantic-ai's reading of ``retry-after-ms`` /
    ``Retry-After``, else the same headers as a LiteLLM proxy passes an upstream's on
    (``llm_provider-retry-after(-ms)``)."""
    ra = getattr(exc, "retry_after", None)
    if ra is not None:
        return float(ra)
    hdrs = {k.lower(): v for k, v in ((getattr(exc, "headers", None) or headers or {}).items())}
    for name in _WAIT_HEADERS_MS:
        if (v := _number(hdrs.get(name))) is not None:
            return v / 1000
    for name in _WAIT_HEADERS_S:
        if (v := _number(hdrs.get(name))) is not None:
            return v
    return None


def _number(raw: str | None) -> float | None:
    try:
        v = float(raw) if raw is not None else None
    except ValueError:
        return None
    return v if v is not None and math.isfinite(v) and v >= 0 else None


# ---- output caps and context windows ----------------------------------------------------------

@dataclass(frozen=True)
class LimitRefusal:
    """A 400 that says the request is too large: ``kind`` is "cap" (the output cap is above what the
    model allows) or "context" (prompt + cap exceed its window). Numbers are None when not said."""

    kind: str
    max_output: int | None = None
    window: int | None = None
    prompt_tokens: int | None = None


_CAP_PATTERNS = (
    re.compile(r"supports at most (\d+) completion tokens", re.I),               # OpenAI
    re.compile(r"max_tokens: \d+ > (\d+), which is the maximum", re.I),          # Anthropic
    re.compile(r"max(?:imum)?[_ ](?:completion[_ ])?tokens?\D{0,40}?(?:at most|<=|≤|maximum(?: of| is)?|limit(?: of| is)?)\s*(\d+)", re.I),
)
_WINDOW = re.compile(r"(?:maximum context length|context (?:length|window)(?: limit)?)(?: is| of)? (\d+)", re.I)
_PROMPT = (re.compile(r"(\d+) in the messages", re.I), re.compile(r"(?:has|with|contains) (\d+) input tokens", re.I),
           re.compile(r"prompt (?:has|is|contains) (\d+) tokens", re.I))
_CAP_WORDS = re.compile(r"max_(?:completion_)?tokens|max_new_tokens|completion tokens|output tokens", re.I)


def limit_refusal(exc: BaseException) -> LimitRefusal | None:
    """A refusal because the request is too large, read from the error (None for any other)."""
    if not isinstance(exc, ModelAPIError):
        return None
    status = getattr(exc, "status_code", None)
    context = isinstance(exc, ModelContextWindowExceededError)
    if status not in (400, 413, 422) and not context:
        return None
    text = message_of(exc)
    window = _int(_WINDOW, text)
    prompt = next((int(m.group(1)) for p in _PROMPT if (m := p.search(text))), None)
    for pat in _CAP_PATTERNS:
        if m := pat.search(text):
            return LimitRefusal("cap", max_output=int(m.group(1)), window=window, prompt_tokens=prompt)
    if context or window is not None or "context" in text.lower():
        return LimitRefusal("context", window=window, prompt_tokens=prompt)
    if _CAP_WORDS.search(text) and re.search(r"too (?:large|long|many|big)|exceed|greater than|must be", text, re.I):
        return LimitRefusal("cap")
    return None


def _int(pat: re.Pattern[str], text: str) -> int | None:
    m = pat.search(text)
    return int(m.group(1)) if m else None


# ---- tool calling -----------------------------------------------------------------------------

_TOOL_WORDS = re.compile(r"tool|function[ _-]?call", re.I)


def refuses_tools(exc: BaseException) -> bool:
    """The server refused the request because it carried tools (vLLM without a tool parser: '"auto"
    tool choice requires --enable-auto-tool-choice and --tool-call-parser'; Ollama: 'does not
    support tools'; a proxy's 'does not support parameters: [tools, tool_choice]')."""
    if not isinstance(exc, ModelHTTPError) or exc.status_code not in (400, 404, 422, 500, 501):
        return False
    text = message_of(exc)
    return bool(_TOOL_WORDS.search(text)) and bool(
        re.search(r"requires|not support|unsupported|not enabled|not available|enable-auto-tool-choice|"
                  r"tool[-_ ]call[-_ ]parser|not allowed|invalid", text, re.I))


# ---- a request's shape refused -------------------------------------------------------------------

# A server's validation of the request body (pydantic's, as llama-cpp-python and vLLM answer; OpenAI's
# "Unrecognized request argument"): deterministic, whatever the status (llama-cpp-python says it
# with a 500). Group 1 names the field when the message does.
_SHAPE = (
    re.compile(r"'loc': \('body', '([\w.]+)'(?:, '([\w.]+)')?", re.I),
    re.compile(r"validation error.{0,200}?\bbody[.\s]+([\w.]+)", re.I | re.S),
    re.compile(r"Unrecognized request argument supplied: (\w+)", re.I),
    re.compile(r"(?:unsupported|unknown|invalid) (?:parameter|value|field)[:\s]+'?([\w.]+)", re.I),
    re.compile(r"Input should be '[^']+'(?: or '[^']+')*"),
)


def refused_shape(exc: BaseException) -> str | None:
    """The part of the request a server refused as malformed ("response_format.type", "tools"...;
    "the request" when it does not say), None when the failure is not such a refusal."""
    if not isinstance(exc, ModelHTTPError) or exc.status_code in (401, 403, 404, 408, 409, 413, 429):
        return None
    text = message_of(exc)
    for pat in _SHAPE:
        if m := pat.search(text):
            groups = [g for g in m.groups() if g] if m.groups() else []
            return ".".join(groups) or "the request"
    return None


def silent_500(exc: BaseException) -> bool:
    """A 5xx with no message at all: how llama-cpp-python answers a request its chat format cannot
    render (tools with ``tool_choice: "required"`` under ``chatml-function-calling``)."""
    if not (isinstance(exc, ModelHTTPError) and exc.status_code >= 500):
        return False
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(err, dict) and "message" in err:
        return not str(err["message"] or "").strip()
    return not (body.strip() if isinstance(body, str) else body)


# ---- token estimates --------------------------------------------------------------------------

def estimate_tokens(payload: Any, *, chars_per_token: float = 3.0) -> int:
    """A generous token count for ``payload`` (a JSON-able request) before it is sent: real
    tokenizers give about 4 characters a token for English and 3 for code and LaTeX, so 3 errs on
    the side of holding the budget. Images count a fixed 1,000."""
    images = 0

    def walk(x: Any) -> int:
        nonlocal images
        if isinstance(x, str):
            return len(x)
        if isinstance(x, dict):
            if x.get("kind") == "binary" or x.get("media_type", "").startswith("image/"):
                images += 1
                return 0
            return sum(walk(v) for k, v in x.items() if k not in ("timestamp", "part_kind", "tool_call_id"))
        if isinstance(x, (list, tuple)):
            return sum(walk(v) for v in x)
        return 0

    chars = walk(payload)
    return int(math.ceil(chars / chars_per_token)) + 1000 * images + 16
