"""The seam between a context that does not fit and the code that assembled it.

A role's prompt is built from windows over a growing state. When the model's server says the prompt
does not fit its context window even with the smallest useful reply, the recording model raises
:class:`~physlab.llm.errors.ContextTooLong`; :func:`fitting` then asks the builder for the same
prompt one level shorter (level 0 is the full context; each level should drop more of the older,
optional material and never the problem or the task) and sends it again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from physlab.llm.errors import ContextTooLong, find_error

T = TypeVar("T")

MAX_LEVELS = 4


async def fitting(call: Callable[[int], Awaitable[T]], *, levels: int = MAX_LEVELS,
                  on_shrink: Callable[[int, ContextTooLong], None] | None = None) -> T:
    """``await call(0)``; on ContextTooLong, ``await call(1)``, ... up to ``levels``; then the last
    ContextTooLong propagates (nothing shorter can be sent)."""
    level = 0
    while True:
        try:
            return await call(level)
        except Exception as exc:
            found = context_too_long(exc)
            if found is None or level >= levels:
                raise
            level += 1
            if on_shrink is not None:
                on_shrink(level, found)



def context_too_long(exc: BaseException | None) -> ContextTooLong | None:
    """The ContextTooLong in ``exc`` or its causes (pydantic-ai and task groups may wrap it)."""
    return find_error(exc, ContextTooLong)
