"""What the recording model does with a failed request: retry it (and after how long), send it
again changed (a lower output cap, tools in the text), ask the caller for a shorter context, or give
up with a message that names the cause and what to try."""

from __future__ import annotations

import random
from dataclasses import dataclass

import tenacity
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequestTimeout,
    UnexpectedModelBehavior,
)

from physlab.llm import advice
from physlab.llm.defaults import RetryPolicy
from physlab.llm.errors import BudgetExceeded, ReplayError, find_error
from physlab.llm.http_capture import ReplyDeadline, ReplyOverflow
from physlab.llm.redact import redact_text
from physlab.llm.server_limits import message_of, refused_shape

TOOLS_HINT = advice.TOOLS_HINT


def transient(exc: BaseException) -> str | None:
    """A short kind for a failure worth retrying, None for one that is not."""
    if isinstance(exc, (BudgetExceeded, ReplayError, ContentFilterError)) or find_error(exc, ReplyOverflow):
        return None
    if isinstance(exc, ModelHTTPError):
        if exc.status_code == 429:
            return "rate_limited"
        if refused_shape(exc) is not None:  # the same request would be refused the same way
            return None
        if exc.status_code >= 500 or exc.status_code in (408, 409):
            return f"http_{exc.status_code}"
        return None
    if isinstance(exc, (ModelConnectionError, ModelRequestTimeout)):
        return "connection"
    if isinstance(exc, ModelRateLimitError):
        return "rate_limited"
    if isinstance(exc, ModelAPIError) and not isinstance(exc, ModelAuthenticationError):
        return "api_error"
    if isinstance(exc, (UnexpectedModelBehavior, IndexError)):  # e.g. empty `choices`
        return "invalid_reply"
    return None


def timed_out(exc: BaseException | str | None) -> bool:
    """The try got no whole reply in time (the SDK's timeout, or the try's deadline)."""
    if not isinstance(exc, BaseException):
        return False
    return isinstance(exc, ModelRequestTimeout) or find_error(exc, ReplyDeadline) is not None


def describe(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """The exception's type and its server's message, on one line (calls.jsonl ``error``), with the
    keys in use (``secrets``) and token-shaped strings redacted: a server may echo the key it got."""
    status = getattr(exc, "status_code", None)
    text = message_of(exc) if isinstance(exc, ModelAPIError) else (str(exc).splitlines()[0] if str(exc) else "")
    return redact_text(f"{type(exc).__name__}: " + (f"HTTP {status}: " if status else "") + text, secrets)[:500]


def named_cause(exc: BaseException, *, role: str, url: str | None, key_note: str | None,
                model: str, secrets: tuple[str, ...] = ()) -> str:
    """One line for a failure that will not be retried (or no longer): what happened, where, and
    what to try (the server's words redacted: :func:`describe`)."""
    where, said = (f" at {url}" if url else ""), describe(exc, secrets)
    if isinstance(exc, ModelAuthenticationError) or getattr(exc, "status_code", None) in (401, 403):
        hint = key_note or "check the API key (--api-key-env NAME names the variable that holds it)"
        return f"{role}: the server{where} refused the credentials ({said}); {hint}"
    if isinstance(exc, ModelNotFoundError) or getattr(exc, "status_code", None) == 404:
        return (f"{role}: the server{where} does not serve model '{model.split(':', 1)[-1]}' "
                f"({said}); check the name it serves (GET {url or ''}/models)")
    if isinstance(exc, (ModelConnectionError, ModelRequestTimeout)):
        what = "timed out" if isinstance(exc, ModelRequestTimeout) else "could not be reached"
        return f"{role}: {url or 'the model server'} {what} ({said})"
    return f"{role}: model request failed{where}: {said}"


@dataclass
class Waiting:
    """The waits of one logical request (its retries share the policy's total)."""

    policy: RetryPolicy
    waited: float = 0.0
    failures: int = 0

    def delay(self, hint: float | None, *, rng: random.Random) -> float | None:
        """Seconds to wait before the next try (None: the total wait is spent). A server's hint is
        waited out with a little jitter on top (clients told the same second do not all return at
        once); without one, exponential backoff with jitter."""
        p = self.policy
        if hint is not None:
            cut = p.max_retry_after_s if p.max_retry_after_s is not None else p.max_wait_s
            delay = min(hint, cut) * (1 + rng.uniform(0, p.jitter / 2))
        else:
            delay = backoff_s(p, self.failures) * (1 - p.jitter / 2 + rng.uniform(0, p.jitter / 2))
        left = p.max_wait_s - self.waited
        if left <= 0 and delay > 0:
            return None
        delay = max(0.0, min(delay, left))
        self.waited += delay
        return delay


def backoff_s(policy: RetryPolicy, failures: int) -> float:
    """The wait after the ``failures``-th failure without a server's hint: tenacity's exponential
    back-off (the library pydantic-ai's own retries use), ``backoff_s`` doubled at each failure after
    the first, at most ``max_backoff_s``. The jitter on top stays :meth:`Waiting.delay`'s: it draws
    from the run's own random source (a seed replays the waits), where tenacity's draws from the
    process-wide one; a server's ``Retry-After`` is read from the headers the seam captured
    (:func:`physlab.llm.server_limits.retry_after_s`, LiteLLM's too), which pydantic-ai's
    ``wait_retry_after`` cannot see (it reads an httpx error's response)."""
    state = tenacity.RetryCallState(tenacity.Retrying(), None, (), {})
    state.attempt_number = max(1, failures)
    return float(tenacity.wait_exponential(multiplier=policy.backoff_s, max=policy.max_backoff_s)(state))
