"""The stand-in's habits: what real servers do on every request (see physlab.llm.standin.server).

:class:`Habits` is the configuration; :class:`HabitState` keeps what they need to remember between
requests (recent arrivals for an rpm limit, prompts seen for the prefix cache, replies cut by a cap
so they can be continued) and decides the refusals.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable

VLLM_TOOLS_REFUSED = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
CACHE_BLOCK = 16  # tokens per prefix-cache block (vLLM's default block size)


@dataclass
class Habits:
    """What the stand-in does on every request, like the real servers it plays (see the module doc)."""

    refuse_tools: bool = False
    default_max_tokens: int | None = None
    max_output_tokens: int | None = None
    context_window: int | None = None
    rpm: int | None = None
    rpm_window_s: float = 60.0
    rate_limit_style: str = "openai"
    usd_per_mtok: tuple[float, float] | None = None
    prefix_cache: bool = False
    api_key: str | None = None  # a request without "Authorization: Bearer <key>" gets a proxy's 401
    report_usage: bool = True  # False: replies carry no usage block (some servers and proxies send none)


Refusal = tuple[int, dict[str, Any], dict[str, str]]  # status, JSON body, headers


def _error(status: int, message: str, *, kind: str = "invalid_request_error", param: str | None = None,
           code: Any = None) -> Refusal:
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}, {}


def rate_limit_headers(wait_s: float, style: str) -> dict[str, str]:
    """Retry-After is whole seconds (RFC 9110); retry-after-ms (as OpenAI sends it) is exact; a LiteLLM
    proxy passes an upstream's on with its own prefix."""
    if style == "proxy":
        return {"llm_provider-retry-after": str(math.ceil(wait_s)),
                "llm_provider-retry-after-ms": str(int(wait_s * 1000))}
    return {"Retry-After": str(math.ceil(wait_s)), "retry-after-ms": str(int(wait_s * 1000))}


def rendered_prompt(body: dict[str, Any]) -> str:
    """The prompt as a chat template would lay it out (tools first, then the messages), for prefix caching."""
    parts = [json.dumps(body.get("tools") or [], sort_keys=True)]
    for msg in body.get("messages", []):
        parts.append(json.dumps({k: msg.get(k) for k in ("role", "content", "tool_calls", "tool_call_id")},
                                sort_keys=True))
    return "".join(parts)


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on prefix equality (C-speed slicing compares)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo




class HabitState:
    """What the habits remember between requests (one per server; thread-safe)."""

    def __init__(self, habits: Habits, prompt_tokens: Callable[[dict[str, Any]], int], faults: Counter) -> None:
        self.habits = habits
        self._prompt_tokens = prompt_tokens
        self._faults = faults
        self._lock = threading.Lock()
        self._arrivals: deque[float] = deque()  # request times, for the rpm habit
        self._prompts: list[str] = []  # prompts seen, for the prefix-cache habit
        self._cut: list[str] = []  # the full text of replies cut by a cap, to continue them when asked

    def refusal(self, body: dict[str, Any]) -> Refusal | None:
        """A refusal the server's habits give this request (None: it is answered)."""
        h = self.habits
        if h.rpm is not None:
            now = time.monotonic()
            with self._lock:
                while self._arrivals and now - self._arrivals[0] >= h.rpm_window_s:
                    self._arrivals.popleft()
                if len(self._arrivals) >= h.rpm:
                    wait = h.rpm_window_s - (now - self._arrivals[0])
                    self._faults["rpm"] += 1
                    status, payload, _ = _error(429, f"Rate limit reached: {h.rpm} requests per {h.rpm_window_s:g}s "
                                                     "(stand-in)", kind="rate_limit_error", code="rate_limit_exceeded")
                    return status, payload, rate_limit_headers(max(0.0, wait), h.rate_limit_style)
                self._arrivals.append(now)
        tools = [t for t in body.get("tools") or [] if t.get("type") == "function"]
        if h.refuse_tools and tools and body.get("tool_choice", "auto") != "none":
            self._faults["tools_refused"] += 1
            return 400, {"object": "error", "message": VLLM_TOOLS_REFUSED, "type": "BadRequestError",
                         "param": None, "code": 400}, {}
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if h.max_output_tokens is not None and cap and cap > h.max_output_tokens:
            self._faults["cap_refused"] += 1
            return _error(400, f"max_tokens is too large: {cap}. This model supports at most {h.max_output_tokens} "
                               f"completion tokens, whereas you provided {cap}.", param="max_tokens",
                          code="invalid_value")
        if h.context_window is not None:
            n = self._prompt_tokens(body)
            if n + (cap or 0) > h.context_window or n >= h.context_window:
                self._faults["context_refused"] += 1
                if cap:
                    text = (f"This model's maximum context length is {h.context_window} tokens. However, you "
                            f"requested {n + cap} tokens ({n} in the messages, {cap} in the completion). Please "
                            "reduce the length of the messages or completion.")
                else:
                    text = (f"This model's maximum context length is {h.context_window} tokens. However, your "
                            f"messages resulted in {n} tokens. Please reduce the length of the messages.")
                return 400, {"object": "error", "message": text, "type": "BadRequestError", "param": None,
                             "code": 400}, {}
        return None

    @staticmethod
    def _continued_from(body: dict[str, Any]) -> str:
        """The text of the assistant turn a continuation request carries ("" for any other request)."""
        msgs = body.get("messages", [])
        if len(msgs) >= 2 and msgs[-1].get("role") == "user" and msgs[-2].get("role") == "assistant" \
                and not msgs[-2].get("tool_calls") and isinstance(msgs[-2].get("content"), str):
            return msgs[-2]["content"]
        return ""

    def remember_cut(self, full: str) -> None:
        with self._lock:
            self._cut.append(full)

    def continuing(self, body: dict[str, Any]) -> tuple[str, str | None]:
        """(the start handed back, the rest of the reply) when this request hands back the start of
        a reply cut earlier and asks for more; ("", None) for any other request."""
        head = self._continued_from(body)
        if not head:
            return "", None
        with self._lock:
            full = next((f for f in reversed(self._cut) if f.startswith(head) and len(f) > len(head)), None)
        return (head, full[len(head):]) if full is not None else ("", None)

    def cached_tokens(self, body: dict[str, Any], n_prompt: int) -> int:
        """Tokens of this prompt's longest prefix seen in an earlier one, in whole cache blocks."""
        text = rendered_prompt(body)
        with self._lock:
            best = max((common_prefix(text, seen) for seen in self._prompts), default=0)
            self._prompts.append(text)
        tokens = min(n_prompt, best // 4)
        return tokens - tokens % CACHE_BLOCK
