"""Model names -> pydantic-ai models, and the per-run ModelSource strategies draw from.

    provider:model      any pydantic-ai provider (openai:, anthropic:, google-gla:, ...)
    openai:NAME + api_base   any OpenAI-compatible server (vLLM, Ollama, LiteLLM proxy, the stand-in)
    scripted:NAME       a registered deterministic scenario (physlab.llm.scripted)
    replay:PATH         a recorded run's calls.jsonl (physlab.llm.replay)
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack
from typing import Any, Sequence

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model

from physlab.errors import UserError
from physlab.llm.defaults import ModelDefaults, ModelRegistry
from physlab.llm.meter import RunMeter
from physlab.llm.recording import RecordingModel, RetryPolicy
from physlab.llm.replay import ReplayBook, resolve_calls_path
from physlab.llm.scripted import get_scenario, scripted_model

_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google-gla": "GEMINI_API_KEY"}


def parse_spec(spec: str) -> tuple[str, str]:
    provider, sep, name = spec.partition(":")
    if not sep or not provider or not name:
        raise UserError(f"model '{spec}' should be written provider:model (e.g. openai:gpt-4o, "
                        "scripted:echo, replay:runs/x/calls.jsonl)", field="--model")
    return provider, name


def check_model_name(spec: str, api_base: str | None = None) -> None:
    """What can be known of ``spec`` without a request: its form, a scripted scenario that exists,
    a replay file that is there, and an --api-base that applies to it and is a usable URL
    (RunModels checks each run; a sweep checks its models before it records any cell)."""
    provider, rest = parse_spec(spec)
    if provider == "scripted":
        get_scenario(rest)
    elif provider == "replay":
        resolve_calls_path(rest)
    if api_base is not None:
        if provider in ("scripted", "replay"):
            raise UserError(f"--api-base does not apply to {provider}: models ({spec})", field="--api-base")
        check_api_base(api_base)


def check_api_base(api_base: str) -> None:
    """A base URL the HTTP clients can use: http(s)://host[:port][/path]. Anything else would only
    show up as a connection error after every retry."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(api_base)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0-65535
    except ValueError as exc:
        raise UserError(f"{api_base!r} is not a usable URL ({exc})", field="--api-base") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"{api_base!r} is not an http(s) URL; expected e.g. http://localhost:8000/v1",
                        field="--api-base")


def _api_key(provider: str, api_key_env: str | None, required: bool) -> str | None:
    env = api_key_env or _KEY_ENV.get(provider)
    key = os.environ.get(env) if env else None
    if api_key_env and not key:
        raise UserError(f"environment variable {api_key_env} is not set", field="--api-key-env")
    if required and not key:
        raise UserError(f"no API key for {provider}: set {env} (or name another variable with --api-key-env)",
                        field="--model")
    return key


def build_provider_model(spec: str, *, api_base: str | None = None, api_key_env: str | None = None) -> Model:
    """The bare pydantic-ai model for ``provider:model`` (no recording; see RunModels). Its provider
    owns its HTTP client: use the model as an async context manager (``async with model:``) and the
    client is closed on exit. Timeouts and the SDK's retries (off: RecordingModel retries and records
    every attempt) are set per request by RecordingModel's model settings."""
    provider, name = parse_spec(spec)
    if provider == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        key = _api_key("openai", api_key_env, required=api_base is None)
        return OpenAIChatModel(name, provider=OpenAIProvider(base_url=api_base, api_key=key or "api-key-not-set"))
    if api_base is not None:
        raise UserError(f"--api-base only applies to openai: models (got '{spec}'); an OpenAI-compatible "
                        f"server is addressed as openai:<served-model-name>", field="--api-base")
    key = _api_key(provider, api_key_env, required=False)
    try:
        if provider == "anthropic" and key:
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            return AnthropicModel(name, provider=AnthropicProvider(api_key=key))
        if provider == "google-gla" and key:
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            return GoogleModel(name, provider=GoogleProvider(api_key=key))
        from pydantic_ai.models import infer_model

        return infer_model(spec)
    except UserError:
        raise
    except Exception as exc:  # pydantic-ai's UserError for unknown providers / missing keys
        raise UserError(f"cannot use model '{spec}': {str(exc).splitlines()[0]}", field="--model") from None


def _price_fn(spec: str, defaults: ModelDefaults, local: bool):
    def cost(resp: ModelResponse) -> float:
        if defaults.has_price:
            return defaults.price(resp.usage.input_tokens, resp.usage.output_tokens)
        if local:
            return 0.0  # a model served by the user (vLLM, Ollama...): free unless priced in the registry
        try:
            return float(resp.cost().total_price)
        except Exception:  # genai-prices does not know it: 0, the registry can set a price
            return 0.0

    return cost


class RunModels:
    """The ModelSource of one run: ``for_role(role)`` gives a RecordingModel bound to the run's
    meter (calls.jsonl, budget) and in-flight limiters. Models for one role are cached.

    Use it as an async context manager (``async with RunModels(...) as models``): a provider model
    built here is closed on exit. A ``provider`` model passed in stays open, its caller's to close:
    a sweep builds one per model and shares it between its cells, so they reuse its connections
    instead of each opening its own (the SDK's intended use: one client, many requests)."""

    def __init__(self, spec: str, *, meter: RunMeter, limiters: Sequence[AbstractConcurrencyLimiter] = (),
                 api_base: str | None = None, api_key_env: str | None = None,
                 registry: ModelRegistry | None = None, retry: RetryPolicy | None = None,
                 provider: Model | None = None) -> None:
        self.name = spec
        self.meter = meter
        self.limiters = tuple(limiters)
        self.retry = retry or RetryPolicy()
        self.registry = registry or ModelRegistry()
        self.defaults = self.registry.defaults_for(spec)
        kind, rest = parse_spec(spec)
        self.kind = kind if kind in ("scripted", "replay") else "provider"
        self._roles: dict[str, RecordingModel] = {}
        self._scenario: Any = None
        self._book: ReplayBook | None = None
        self._base: Model | None = None
        self._owned: Model | None = None  # the provider model this run built (and closes)
        self._stack = AsyncExitStack()
        check_model_name(spec, api_base)
        if kind == "scripted":
            self._scenario = get_scenario(rest)()
            self._scenario_name = rest
        elif kind == "replay":
            self._book = ReplayBook(rest)
        elif provider is not None:
            self._base = provider
        else:
            self._base = self._owned = build_provider_model(spec, api_base=api_base, api_key_env=api_key_env)
        self._cost = (self._book.cost_of if self._book else
                      _price_fn(spec, self.defaults, local=api_base is not None or self.kind == "scripted"))

    def for_role(self, role: str) -> RecordingModel:
        if role not in self._roles:
            if self._scenario is not None:
                base: Model = scripted_model(self._scenario, role, self._scenario_name)
            elif self._book is not None:
                base = self._book.model_for(role)
            else:
                assert self._base is not None
                base = self._base
            self._roles[role] = RecordingModel(
                base, role=role, spec=self.name, meter=self.meter, limiters=self.limiters,
                defaults=self.defaults, retry=self.retry, cost=self._cost,
                model_label=self._book.model_of if self._book else None)
        return self._roles[role]

    async def open(self) -> "RunModels":
        """Open the provider model this run built (its HTTP client is closed by :meth:`aclose`)."""
        if self._owned is not None:
            await self._stack.enter_async_context(self._owned)
            self._owned = None  # entered once
        return self

    async def __aenter__(self) -> "RunModels":
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close what this run opened (idempotent)."""
        await self._stack.aclose()
