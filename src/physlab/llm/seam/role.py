"""Who a request is for and where it goes, shared by the layers of one role's seam: the role, the
model spec, the server, the key notice, and the run's event sink for what the console shows
(``rate_limited``, ``context_too_long``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from physlab.llm import failures as F
from physlab.llm.errors import BudgetExceeded, ModelFailure


@dataclass(frozen=True)
class SeamRole:
    role: str
    spec: str
    endpoint: str | None = None  # the server's base URL, when the run names one
    key_note: str | None = None  # what to say when no API key is sent
    events: Callable[..., None] | None = None
    # the keys its requests carry: redacted from whatever the server says (physlab.llm.redact)
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def emit(self, kind: str, **data: Any) -> None:
        if self.events is None:
            return
        try:
            self.events(kind, role=self.role, model=self.spec, **data)
        except Exception:  # noqa: BLE001 - a broken display must not stop a request
            pass

    def failure(self, exc: BaseException, url: str | None = None, suffix: str = "") -> ModelFailure:
        """One line for a request that failed for good: what happened, where, and what to try."""
        cause = F.named_cause(exc, role=self.role, url=url or self.endpoint, key_note=self.key_note,
                              model=self.spec, secrets=self.secrets)
        return ModelFailure(cause + suffix)


def is_named(exc: BaseException) -> bool:
    """Errors that already say what they mean (a spent budget, a failure named by a layer, a replay
    that diverged): they reach the caller unchanged."""
    return isinstance(exc, (BudgetExceeded, ModelFailure))
