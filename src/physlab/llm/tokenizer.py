"""Counting a request's tokens the way its server does, before it is sent: ``physlab models check``
holds the lab's real first requests against the server's window in the server's own tokens
(issue #47: a character estimate said ~3.8K where llama-cpp-python counted ~6.3K).

Servers that say it: llama-cpp-python (``POST /extras/tokenize {"input"}``), llama.cpp's
llama-server (``POST /tokenize {"content"}``, and its window and slots in ``GET /props``), vLLM (``POST
/tokenize {"model", "prompt"}``, with ``max_model_len``). A server that offers none is estimated
from characters (:data:`CHARS_PER_TOKEN`): a tokenizer package would be the next best, but the ones
that know today's models fetch their vocabularies from the network on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4  # English prose; code and LaTeX run nearer 3


def _root(api_base: str) -> str:
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


@dataclass
class ServerTokenizer:
    """One server's tokenizer endpoint (``kind``: llama-cpp-python, llama.cpp or vLLM)."""

    kind: str
    url: str
    field: str
    model: str | None = None
    window: int | None = None  # what the endpoint said of the context window, when it did
    slots: int | None = None  # requests it generates at once, when known (llama-cpp-python: one)

    async def count(self, client: Any, text: str) -> int:
        body: dict[str, Any] = {self.field: text}
        if self.model is not None:
            body["model"] = self.model
        r = await client.post(self.url, json=body)
        r.raise_for_status()
        data = r.json()
        if isinstance(data.get("count"), int):
            return int(data["count"])
        return len(data["tokens"])


async def find_tokenizer(client: Any, api_base: str, model: str) -> ServerTokenizer | None:
    """The server's tokenizer endpoint, tried with a word; None when it offers none (any failure)."""
    root = _root(api_base)
    candidates = (ServerTokenizer("llama-cpp-python", f"{root}/extras/tokenize", "input"),
                  ServerTokenizer("vLLM", f"{root}/tokenize", "prompt", model=model),
                  ServerTokenizer("llama.cpp", f"{root}/tokenize", "content"))
    for tok in candidates:
        try:
            r = await client.post(tok.url, json={tok.field: "ready", **({"model": model} if tok.model else {})})
            data = r.json() if r.status_code == 200 else None
        except Exception:  # noqa: BLE001 - not this server's endpoint
            continue
        if not isinstance(data, dict) or not isinstance(data.get("tokens", data.get("count")), (list, int)):
            continue
        if isinstance(data.get("max_model_len"), int):
            tok.window = int(data["max_model_len"])
        if tok.kind == "llama.cpp":
            tok.window, tok.slots = await _props(client, root)
        if tok.kind == "llama-cpp-python":
            tok.slots = 1  # one model instance behind a lock: requests are generated one after another
        return tok
    return None


async def _props(client: Any, root: str) -> tuple[int | None, int | None]:
    """llama-server's window and slots (``GET /props``: ``default_generation_settings.n_ctx``,
    ``total_slots``)."""
    try:
        r = await client.get(f"{root}/props")
        data = r.json()
    except Exception:  # noqa: BLE001 - an older server: no props
        return None, None
    if not isinstance(data, dict):
        return None, None
    settings = data.get("default_generation_settings")
    n = settings.get("n_ctx") if isinstance(settings, dict) else data.get("n_ctx")
    slots = data.get("total_slots")
    return (int(n) if isinstance(n, int) else None), (int(slots) if isinstance(slots, int) else None)
