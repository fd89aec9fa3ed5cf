"""ReplyCapModel: refuses a reply larger than any model writes (``max_reply_bytes``).

A server that answers with megabytes (a broken or hostile one: RSA fed 2 MB replies once wrote
120 MB of calls.jsonl in 24 calls, each aggregation prompt carrying earlier replies) would fill the
disk and every later prompt. Such a reply is not used: the try is recorded with its tokens (they
were served) and without its body, and the request fails with one line naming the setting. A
streamed reply is checked when its stream closes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm.errors import ReplyTooLarge, find_error
from physlab.llm.http_capture import ReplyOverflow
from physlab.llm.seam.attempts import Attempt, current_call
from physlab.llm.seam.role import SeamRole


def reply_bytes(resp: ModelResponse) -> int:
    """The size of what a reply brings: its text, thinking, tool-call arguments and files."""
    n = 0
    for part in resp.parts:
        content = getattr(part, "content", None)
        if isinstance(content, str):
            n += len(content.encode("utf-8", "surrogatepass"))
        elif content is not None and hasattr(content, "data"):  # a file the model returned
            n += len(getattr(content, "data", b"") or b"")
        args = getattr(part, "args", None)
        if isinstance(args, str):
            n += len(args.encode("utf-8", "surrogatepass"))
        elif isinstance(args, dict):
            n += len(json.dumps(args))
    return n


class ReplyCapModel(WrapperModel):
    def __init__(self, wrapped: Model, *, who: SeamRole, max_reply_bytes: int) -> None:
        super().__init__(wrapped)
        self.who = who
        self.max_reply_bytes = max_reply_bytes

    def _check(self, attempt: Attempt | None, resp: ModelResponse) -> None:
        size = reply_bytes(resp)
        if size <= self.max_reply_bytes:
            return
        error = ReplyTooLarge(f"{self.who.role}: the reply from {self.who.spec} was {size:,} bytes, more than the "
                              f"{self.max_reply_bytes:,} a reply may bring (max_reply_bytes in the model registry); "
                              f"it was not used, and calls.jsonl keeps its tokens but not its text")
        if attempt is not None:
            attempt.error = error
            attempt.refused = str(error)
            attempt.settle()
        raise error

    def _overflow(self, attempt: Attempt | None, exc: Exception) -> ReplyTooLarge | None:
        """The HTTP client cut a body past its bound (physlab.llm.http_capture): refused, as a reply over
        the cap is, without having read it whole."""
        cut = find_error(exc, ReplyOverflow)
        if cut is None:
            return None
        error = ReplyTooLarge(f"{self.who.role}: the reply from {self.who.spec} was cut off as it arrived ({cut}): "
                              f"no model writes that much beside the {self.max_reply_bytes:,} bytes a reply may bring "
                              "(max_reply_bytes in the model registry); it was not used")
        if attempt is not None:
            attempt.error = error
            attempt.refused = str(error)
            attempt.settle()
        return error

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        call = current_call()
        try:
            resp = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except Exception as exc:
            if (error := self._overflow(call.last, exc)) is not None:
                raise error from exc
            raise
        self._check(call.last, resp)
        return resp

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncIterator[StreamedResponse]:
        call = current_call()
        try:
            async with self.wrapped.request_stream(messages, model_settings, model_request_parameters,
                                                   run_context) as stream:
                yield stream
        except Exception as exc:
            if (error := self._overflow(call.last, exc)) is not None:
                raise error from exc
            raise
        attempt = call.last
        if attempt is not None and attempt.response is not None:
            self._check(attempt, attempt.response)
