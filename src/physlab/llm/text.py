"""One plain-text model request: a prompt (and earlier turns) in, the reply's text out.

Most scaffold steps are one question with a text reply and no tools (solve, rewrite, vote, judge,
review). pydantic-ai's ``direct.model_request`` sends exactly that request through the same model
(so the model seam still records, meters, limits and retries it); an ``Agent`` around it would
add a run graph, capability contexts and output validation that a plain reply never uses -- about
half of the client CPU per request in a many-cell sweep (see benchmarks/sweep_efficiency.py).
Steps that call tools keep using ``Agent``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import Model


async def ask_text(model: Model, prompt: Any, *, system: str | None = None,
                   settings: dict[str, Any] | None = None,
                   history: Sequence[ModelMessage] | None = None) -> tuple[str, list[ModelMessage]]:
    """Send ``prompt`` (text, or a list of text and pydantic-ai ``BinaryContent`` parts) after
    ``history`` with ``system`` as the instructions; return (the reply's text, every message so
    far, for a follow-up). A reply without text gives "" (the caller finds no answer in it)."""
    request = ModelRequest(parts=[UserPromptPart(prompt)], instructions=system)
    messages: list[ModelMessage] = [*history, request] if history else [request]
    response = await model_request(model, messages, model_settings=settings)  # type: ignore[arg-type]
    return response.text or "", [*messages, response]
