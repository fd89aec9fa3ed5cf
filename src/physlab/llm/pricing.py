"""What one request cost, and where that figure came from (``price_source`` in calls.jsonl):

1. ``proxy`` - the cost the server stated for this response (LiteLLM's ``x-litellm-response-cost``
   header): what the proxy will charge, whatever the model;
2. ``free`` / ``registry`` - the model registry says the model is free, or gives its price;
3. ``genai-prices`` - the price genai-prices knows for the model (also behind ``--api-base``: a
   LiteLLM proxy in front of ``gpt-4o`` is still ``gpt-4o``), cache reads and writes at their own
   prices;
4. ``unpriced`` - nothing knows a price (a self-served model): 0, until the registry gives one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic_ai.messages import ModelResponse
from pydantic_ai.usage import RequestUsage

from physlab.llm.defaults import ModelDefaults

COST_HEADERS = ("x-litellm-response-cost", "llm_provider-x-litellm-response-cost")


def stated_cost(headers: Mapping[str, str] | None) -> float | None:
    """The cost a proxy stated for the response, in USD (None when it did not)."""
    for name in COST_HEADERS:
        raw = (headers or {}).get(name)
        if raw is None:
            continue
        try:
            value = float(str(raw).strip().removesuffix("USD").strip())
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


@dataclass
class Pricer:
    """Prices the responses of one model spec."""

    spec: str
    defaults: ModelDefaults
    free: bool = False  # scripted models

    def price(self, resp: ModelResponse | None, headers: Mapping[str, str] | None, *, input_tokens: int = 0,
              output_tokens: int = 0, cache_read: int = 0, cache_write: int = 0) -> tuple[float, str]:
        """(cost in USD, its source) of one served reply; ``resp`` may be None for an unusable reply
        whose usage the HTTP layer saw (then the token counts are given)."""
        if (cost := stated_cost(headers)) is not None:
            return cost, "proxy"
        if resp is not None:
            u = resp.usage
            input_tokens, output_tokens = u.input_tokens, u.output_tokens
            cache_read, cache_write = u.cache_read_tokens, u.cache_write_tokens
        if self.free or self.defaults.free:
            return 0.0, "free"
        if self.defaults.has_price:
            return self.defaults.price(input_tokens, output_tokens, cache_read, cache_write), "registry"
        priced = self._genai(resp, input_tokens, output_tokens, cache_read, cache_write)
        if priced is not None:
            return priced, "genai-prices"
        return 0.0, "unpriced"

    def _genai(self, resp: ModelResponse | None, inp: int, out: int, read: int, write: int) -> float | None:
        name = self.spec.split(":", 1)[-1]
        probe = resp if resp is not None and resp.model_name else ModelResponse(
            parts=[], model_name=name, provider_name=self.spec.split(":", 1)[0],
            usage=RequestUsage(input_tokens=inp, output_tokens=out, cache_read_tokens=read,
                               cache_write_tokens=write))
        for candidate in _candidates(probe, name):
            try:
                return float(candidate.cost().total_price)
            except Exception:  # noqa: BLE001 - genai-prices does not know it under this name
                continue
        return None

    def per_token(self) -> tuple[float, float]:
        """(USD per input token, USD per output token) before a request is sent, to reserve a
        cost budget; (0, 0) when no price is known ahead (a proxy's stated cost arrives after)."""
        if self.free or self.defaults.free:
            return 0.0, 0.0
        if self.defaults.has_price:
            return (self.defaults.input_usd_per_mtok or 0.0) / 1e6, (self.defaults.output_usd_per_mtok or 0.0) / 1e6
        inp = self._genai(None, 1_000_000, 0, 0, 0)
        out = self._genai(None, 0, 1_000_000, 0, 0)
        return (inp or 0.0) / 1e6, (out or 0.0) / 1e6


def _candidates(resp: ModelResponse, spec_name: str) -> list[ModelResponse]:
    """The response as served, then under the name the user gave (a proxy may answer with its
    deployment's name, e.g. 'openai/gpt-4o' or a dated snapshot), then without the provider's URL
    (an ``--api-base`` server is not the provider genai-prices would match by URL)."""
    from dataclasses import replace

    out = [resp]
    if resp.provider_url:
        out.append(replace(resp, provider_url=None))
    served = resp.model_name or ""
    for name in {spec_name, served.rsplit("/", 1)[-1]} - {served}:
        if name:
            out.append(replace(resp, model_name=name, provider_url=None))
    return out

