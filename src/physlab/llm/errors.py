"""Exceptions raised on the model path."""

from __future__ import annotations

from typing import TypeVar


class BudgetExceeded(Exception):
    """A Budget limit was reached. Strategies catch it and end cleanly (status partially_complete
    or no_answer), never with a traceback. ``limit`` names the limit (e.g. "max_calls")."""

    def __init__(self, limit: str, detail: str = "") -> None:
        self.limit = limit
        super().__init__(f"budget exhausted: {limit}" + (f" ({detail})" if detail else ""))


class ModelFailure(Exception):
    """A model request failed for good after bounded retries (recorded in calls.jsonl)."""


class ReplayError(ModelFailure):
    """A ``replay:`` model ran out of recorded responses for a role, or the run asked for something
    other than what was recorded (the replay diverged)."""


class ReplyTooLarge(ModelFailure):
    """A reply larger than ``max_reply_bytes`` (no model writes that much): not used, and not stored."""


class ContextTooLong(BudgetExceeded):
    """The request does not fit the model's context window, even with the smallest useful output
    cap. The caller can assemble a shorter context and ask again (the lab drops its older windows
    first, never the problem or the role's task; see :func:`physlab.llm.context_fit.fitting`); a
    caller that cannot treats it as the hard limit it is, like a spent budget (``limit`` is
    "context_window"): it stops with the best answer it has. ``window`` and ``prompt_tokens`` are
    what the server said (None when it did not)."""

    def __init__(self, role: str, *, window: int | None = None, prompt_tokens: int | None = None,
                 detail: str = "") -> None:
        self.role = role
        self.window = window
        self.prompt_tokens = prompt_tokens
        said = ", ".join(x for x in (f"window {window} tokens" if window else "",
                                     f"prompt {prompt_tokens} tokens" if prompt_tokens else "") if x)
        super().__init__("context_window", f"{role}: the prompt does not fit the model's context window"
                         + (f" ({said})" if said else "") + (f": {detail}" if detail else ""))


E = TypeVar("E", bound=BaseException)


def find_error(exc: BaseException | None, kind: type[E]) -> E | None:
    """The first ``kind`` in ``exc`` itself, the members of an exception group, or the chain of
    causes and contexts: pydantic-ai, task groups and ``raise ... from`` wrap our errors, and a
    strategy or the lab must still see that a budget ran out or the model failed for good."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, kind):
            return e
        if isinstance(e, BaseExceptionGroup):
            todo[:0] = list(e.exceptions)
        todo.append(e.__cause__ or e.__context__)
    return None


def budget_error(exc: BaseException | None) -> BudgetExceeded | None:
    """The BudgetExceeded inside ``exc`` (see :func:`find_error`), or None."""
    return find_error(exc, BudgetExceeded)
