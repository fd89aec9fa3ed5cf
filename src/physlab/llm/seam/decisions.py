"""What a layer of the model seam does about one try's outcome, as typed values: each layer decides
with a function of the outcome and what it knows, then acts on the decision (settling the try with
the decision's note, which is what calls.jsonl says about it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SendAgain:
    """Send the request again, after ``wait_s`` seconds (a rate limit, a transient failure) or at
    once (the output mode fell back)."""

    note: str
    wait_s: float = 0.0
    rate_limited: bool = False


@dataclass(frozen=True)
class LowerCap:
    """The server refused the output cap or the context: send again with ``max_tokens=cap``.
    ``max_output`` is what that taught about the model's largest cap (kept for the rest of the run)."""

    cap: int
    note: str
    max_output: int | None = None


@dataclass(frozen=True)
class RaiseCap:
    """A reply cut by the cap: ask again with ``max_tokens=cap``."""

    cap: int
    note: str


@dataclass(frozen=True)
class AskRest:
    """A text reply cut at the model's maximum: ask for the rest and join the parts."""

    note: str


@dataclass(frozen=True)
class Keep:
    """Return the reply as it is (``note`` says why, when it is cut)."""

    note: str | None = None


@dataclass(frozen=True)
class Shorten:
    """The prompt does not fit the context window: the caller has to send a shorter one
    (ContextTooLong)."""

    note: str
    notice: str  # what the console says
    detail: str
    window: int | None = None
    prompt_tokens: int | None = None


@dataclass(frozen=True)
class GiveUp:
    """Not this layer's to recover: ``error`` replaces the original one (a ModelFailure naming the
    cause and what to try), or the original goes on (None) to the layers above."""

    error: Exception | None = None


OnFailure = SendAgain | LowerCap | Shorten | GiveUp
OnCutReply = RaiseCap | AskRest | Keep | Shorten
