"""The stand-in's habits: what real servers do on every request (see physlab.llm.standin.server).

:class:`Habits` is the configuration (``Habits.llama_cpp_python()`` is the set a real
llama-cpp-python server showed with Gemma 3 270M, issue #47); :class:`HabitState` keeps what they
need to remember between requests (recent arrivals for an rpm limit, prompts seen for the prefix
cache, replies cut by a cap so they can be continued), decides the refusals, and renders a request
as the model would see it (a system message dropped, a list of text parts mangled).
"""

from __future__ import annotations

import html
import json
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

VLLM_TOOLS_REFUSED = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
# llama-cpp-python's 500 for a response_format it does not take (its request model's validation error)
LLAMA_FORMAT_REFUSED = ("1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                        "'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}', 'ctx': {{'expected': "
                        "\"'text' or 'json_object'\"}}}}\n\n  POST /v1/chat/completions")
# What a small model writes when it does not follow the instructions (Gemma 3 270M's first reply, verbatim)
SMALL_MODEL_TEXT = "\n\nI'm sorry for the long answer. But I"
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
    # ---- what llama-cpp-python showed (issue #47); the defaults are a server that does none of it
    cap_fields: tuple[str, ...] = ("max_tokens", "max_completion_tokens")  # the output-cap names it honours
    window_counts_cap: bool = True  # False: only the prompt is held against the window; a reply stops at its end
    rambles: bool = False  # the model never stops on its own: a free reply runs to the cap (or the window)
    follows_instructions: bool = True  # False: junk text, unless a schema constrains it (then a valid instance)
    response_formats: tuple[str, ...] | None = None  # the response_format types taken (None: all); else a 500
    json_schema_refusal: str = "validation"  # the 500's message: "validation" (names the field) or "empty"
    constrains_json_object: bool = False  # json_object with a "schema": the reply is held to it (a grammar)
    tool_choice_auto_only: bool = False  # tools with any tool_choice but "auto"/"none": a 500 with an empty message
    drops_system: bool = False  # the chat format leaves system messages out (llama-cpp-python's "gemma")
    mangles_parts: str | None = None  # a list of text parts: "escaped" (as a Python list) or "dropped"
    single_slot: bool = False  # one request generates at a time; the others queue (and a left one runs on)
    stream_usage: bool = True  # False: a stream carries no usage chunk, even when asked for one
    tokenize_path: str | None = None  # its tokenizer endpoint ("/extras/tokenize": llama-cpp-python)

    @classmethod
    def llama_cpp_python(cls, chat_format: str = "chatml-function-calling", **overrides: Any) -> Habits:
        """What ``python -m llama_cpp.server`` showed with Gemma 3 270M (issue #47): ``max_tokens``
        honoured and ``max_completion_tokens`` ignored; ``json_schema`` refused (500) and
        ``json_object`` + ``schema`` constrained; one request at a time; no usage in streams; the
        window said only when a prompt overflows it; a model that rambles and does not follow
        instructions. ``chatml-function-calling`` takes tools only with ``tool_choice: "auto"`` and
        mangles a list of parts; ``gemma`` drops the system message (and the parts)."""
        base: dict[str, Any] = dict(
            cap_fields=("max_tokens",), window_counts_cap=False, rambles=True, follows_instructions=False,
            response_formats=("text", "json_object"), constrains_json_object=True, single_slot=True,
            stream_usage=False, tokenize_path="/extras/tokenize")
        if chat_format == "chatml-function-calling":
            base.update(tool_choice_auto_only=True, mangles_parts="escaped")
        elif chat_format == "gemma":
            base.update(drops_system=True, mangles_parts="dropped")
        elif chat_format != "chatml":
            raise ValueError(f"unknown chat format {chat_format!r} (chatml-function-calling, gemma, chatml)")
        return cls(**{**base, **overrides})


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
        fmt = (body.get("response_format") or {}).get("type")
        if h.response_formats is not None and fmt is not None and fmt not in h.response_formats:
            self._faults["format_refused"] += 1
            text = LLAMA_FORMAT_REFUSED.format(kind=fmt) if h.json_schema_refusal == "validation" else ""
            return _error(500, text, kind="internal_server_error")
        tools = [t for t in body.get("tools") or [] if t.get("type") == "function"]
        if h.refuse_tools and tools and body.get("tool_choice", "auto") != "none":
            self._faults["tools_refused"] += 1
            return 400, {"object": "error", "message": VLLM_TOOLS_REFUSED, "type": "BadRequestError",
                         "param": None, "code": 400}, {}
        if h.tool_choice_auto_only and tools and body.get("tool_choice", "auto") not in ("auto", "none"):
            self._faults["tool_choice_refused"] += 1
            return _error(500, "", kind="internal_server_error")
        cap = self.cap(body)
        if h.max_output_tokens is not None and cap and cap > h.max_output_tokens:
            self._faults["cap_refused"] += 1
            return _error(400, f"max_tokens is too large: {cap}. This model supports at most {h.max_output_tokens} "
                               f"completion tokens, whereas you provided {cap}.", param="max_tokens",
                          code="invalid_value")
        if h.context_window is not None:
            n = self._prompt_tokens(body)
            if (h.window_counts_cap and n + (cap or 0) > h.context_window) or n >= h.context_window:
                self._faults["context_refused"] += 1
                if cap:
                    text = (f"This model's maximum context length is {h.context_window} tokens. However, you "
                            f"requested {n + cap} tokens ({n} in the messages, {cap} in the completion). Please "
                            "reduce the length of the messages or completion.")
                else:
                    text = (f"This model's maximum context length is {h.context_window} tokens. However, your "
                            f"messages resulted in {n} tokens. Please reduce the length of the messages.")
                if not h.window_counts_cap:  # llama-cpp-python: OpenAI's error shape
                    return _error(400, text, param="messages", code="context_length_exceeded")
                return 400, {"object": "error", "message": text, "type": "BadRequestError", "param": None,
                             "code": 400}, {}
        return None

    def cap(self, body: dict[str, Any]) -> int | None:
        """The output cap of ``body`` this server honours (a name it does not know is ignored)."""
        for name in ("max_completion_tokens", "max_tokens"):
            if name in self.habits.cap_fields and body.get(name):
                return int(body[name])
        return None

    def as_seen(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as the model sees it through the chat format: system messages dropped, a list
        of parts rendered as the escaped Python list llama-cpp-python's templates make of it."""
        h = self.habits
        if not (h.drops_system or h.mangles_parts):
            return body
        msgs = []
        for m in body.get("messages", []):
            if h.drops_system and m.get("role") in ("system", "developer"):
                continue
            if h.mangles_parts and isinstance(m.get("content"), list):
                m = {**m, "content": "" if h.mangles_parts == "dropped" else html.escape(repr(m["content"]))}
            msgs.append(m)
        return {**body, "messages": msgs}

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
