"""The model seam: every request a strategy makes goes through these pydantic-ai wrapper models,
each adding one concern around ``request()`` (and ``request_stream()``) and delegating the rest,
the way pydantic-ai's own ``ConcurrencyLimitedModel`` and ``InstrumentedModel`` are built.
:func:`seam_model` composes them, outermost first:

- :class:`~.boundary.SeamModel` - opens each request's ledger of tries, the settings the seam always
  sends, one named ModelFailure for what no layer recovered from;
- :class:`~.output_mode.OutputModeModel` - the output mode, tools in the text, ``auto``'s fallback;
- :class:`~.limits.LimitsModel` - truncation and context-window recovery;
- :class:`~.waits.RetryModel` - rate limits waited out, transient failures retried;
- :class:`~.budget.BudgetModel` - each try's budget reserved before it is sent;
- :class:`~.reply_cap.ReplyCapModel` - a reply larger than any model writes is refused;
- in-flight slots (:mod:`.slots`: pydantic-ai ``ConcurrencyLimitedModel``\\ s, the meter's count);
- :class:`~.call_log.CallLogModel` - one calls.jsonl line per try;
- :class:`~.capture.HttpCaptureModel` - what the HTTP layer saw of each try;
- :class:`~.user_turn.OneStringModel` - a user turn in parts sent as one string where cache points buy nothing.

The layers of one request share its :class:`~.attempts.Call` (see :mod:`.attempts`); what a layer
decides about a try is a typed value (:mod:`.decisions`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model

from physlab.llm.defaults import ModelDefaults, RetryPolicy
from physlab.llm.meter import RunMeter
from physlab.llm.output import OutputModeState
from physlab.llm.pricing import Pricer
from physlab.llm.seam.boundary import SeamModel
from physlab.llm.seam.budget import BudgetModel
from physlab.llm.seam.call_log import CallLogModel
from physlab.llm.seam.capture import HttpCaptureModel
from physlab.llm.seam.limits import LimitsModel, ModelLimits
from physlab.llm.seam.output_mode import OutputModeModel
from physlab.llm.seam.reply_cap import ReplyCapModel
from physlab.llm.seam.role import SeamRole
from physlab.llm.seam.slots import in_flight_slots
from physlab.llm.seam.user_turn import OneStringModel
from physlab.llm.seam.waits import RetryModel

__all__ = ["ModelLimits", "SeamModel", "seam_model"]


def seam_model(wrapped: Model, *, role: str, spec: str, meter: RunMeter,
               limiters: Sequence[AbstractConcurrencyLimiter] = (), defaults: ModelDefaults | None = None,
               retry: RetryPolicy | None = None, cost: Pricer | Callable[[ModelResponse], float] | None = None,
               model_label: Callable[[ModelResponse], str] | None = None,
               output_state: OutputModeState | None = None, limits: ModelLimits | None = None,
               events: Callable[..., None] | None = None, endpoint: str | None = None,
               key_note: str | None = None, rng: random.Random | None = None,
               secrets: tuple[str, ...] = ()) -> SeamModel:
    """``wrapped`` (a provider's, scripted or replayed model) as ``role`` of a run metered by ``meter``.
    ``output_state`` and ``limits`` are shared by the roles that use one model; ``cost`` prices a
    reply (a Pricer, or a function for replayed ones); ``endpoint`` and ``key_note`` name the server
    and the key in error messages; ``secrets`` (the key the requests carry) is redacted from what the
    server says; ``events`` receives the console's notices."""
    defaults = defaults or ModelDefaults()
    who = SeamRole(role=role, spec=spec, endpoint=endpoint, key_note=key_note, events=events, secrets=secrets)
    limits = limits or ModelLimits(declared_max_output=defaults.truncation_max_output_tokens,
                                   window=defaults.context_window)
    model: Model = HttpCaptureModel(OneStringModel(wrapped), timeout_s=defaults.timeout_s, meter=meter)
    model = CallLogModel(model, who=who, meter=meter, cost=cost, model_label=model_label,
                           max_record_bytes=defaults.max_record_bytes)
    model = in_flight_slots(model, limiters, meter)  # outside the recording: latency leaves out the wait
    model = ReplyCapModel(model, who=who, max_reply_bytes=defaults.max_reply_bytes)
    model = BudgetModel(model, meter=meter, limits=limits, min_reply_tokens=defaults.min_reply_tokens,
                        pricer=cost if isinstance(cost, Pricer) else None)
    model = RetryModel(model, who=who, policy=retry or defaults.retry or RetryPolicy(), meter=meter, rng=rng,
                       slots=defaults.slots)
    model = LimitsModel(model, who=who, defaults=defaults, limits=limits)
    model = OutputModeModel(model, who=who, state=output_state or OutputModeState())
    return SeamModel(model, who=who, defaults=defaults)
