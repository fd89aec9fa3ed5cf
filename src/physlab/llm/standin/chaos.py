"""Chaos for the stand-in: a responder wrapper that, at random, misbehaves the way real servers
and real models do — a reply in plain text instead of a tool call, truncated or malformed tool
arguments, an unknown tool — and, once attached to a server, has the server answer the next
request with a transport fault (429 with a short Retry-After, 500, a dropped connection).

    chaos = ChaosResponder(RandomToolResponder(seed=3), seed=3, rate=0.2)
    with StandinServer(chaos) as srv:
        chaos.attach(srv)
        ...
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any

from physlab.llm.standin.fuzz_schema import request_seed
from physlab.llm.standin.responders import Reply, Responder, as_reply

IN_BAND = ("text", "truncated", "malformed_json", "unknown_tool")
TRANSPORT = ("rate_limit", "server_error", "drop")


class ChaosResponder:
    def __init__(self, inner: Responder, *, seed: int = 0, rate: float = 0.15,
                 kinds: tuple[str, ...] = IN_BAND + TRANSPORT) -> None:
        self.inner = inner
        self.seed = seed
        self.seen: dict[int, int] = {}
        self.rate = rate
        self.kinds = kinds
        self.server: Any = None
        self.injected: dict[str, int] = {}
        self._lock = threading.Lock()

    def attach(self, server: Any) -> ChaosResponder:
        """Let transport faults through: they are injected into ``server`` for its next request."""
        self.server = server
        return self

    def __call__(self, body: dict[str, Any]) -> Reply:
        reply = as_reply(self.inner(body))
        with self._lock:
            # Decided by the request itself (and how often it came, so a retried request can get
            # through), not by arrival order: a run's chaos is the same whatever runs concurrently.
            key = request_seed(self.seed, body)
            self.seen[key] = n = self.seen.get(key, 0) + 1
            rng = random.Random(request_seed(self.seed, body, n))
            if rng.random() >= self.rate:
                return reply
            usable = [k for k in self.kinds if k in IN_BAND or self.server is not None]
            kind = rng.choice(usable)
            self.injected[kind] = self.injected.get(kind, 0) + 1
        if kind == "rate_limit":
            self.server.inject("rate_limit", retry_after=0.05)
        elif kind in TRANSPORT:
            self.server.inject(kind)
        elif kind == "text":
            return Reply(content="I think the answer follows from the previous results.")
        elif reply.tool_calls:
            name, args = reply.tool_calls[0]
            text = args if isinstance(args, str) else json.dumps(args)
            if kind == "truncated":
                return Reply(tool_calls=[(name, text[: max(1, len(text) // 2)])], finish_reason="length")
            if kind == "malformed_json":
                return Reply(tool_calls=[(name, text.rstrip("}") + ', "oops')])
            return Reply(tool_calls=[("no_such_tool", text)])
        return reply
