"""Model names -> pydantic-ai models, and the per-run ModelSource strategies draw from.

    provider:model      any pydantic-ai provider (openai:, anthropic:, google-gla:, ...)
    openai:NAME + api_base   any OpenAI-compatible server (vLLM, Ollama, LiteLLM proxy, the stand-in);
                        registry ``client: direct`` swaps the SDK for physlab.llm.direct_openai
    scripted:NAME       a registered deterministic scenario (physlab.llm.scripted)
    replay:PATH         a recorded run's calls.jsonl (physlab.llm.replay)
"""

from __future__ import annotations

import os
from typing import Any

from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model

from physlab.errors import UserError
from physlab.llm.defaults import ModelDefaults, ModelRegistry
from physlab.llm.limiter import InFlightLimiter
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


_SSL_CONTEXT: Any = None


def _http_client(timeout_s: float) -> Any:
    """A fresh HTTP client per run that reuses one default SSL context: building the context loads
    the CA bundle (~0.15 s of CPU on the event loop), which stalled every other cell of a sweep
    each time a run started (added by the bench developer; the verify settings are the SDK's
    defaults, the context is read-only once built)."""
    global _SSL_CONTEXT
    from openai import DefaultAsyncHttpxClient

    if _SSL_CONTEXT is None:
        import httpx2

        _SSL_CONTEXT = httpx2.create_ssl_context()
    return DefaultAsyncHttpxClient(verify=_SSL_CONTEXT, timeout=timeout_s)


def build_provider_model(spec: str, *, api_base: str | None = None, api_key_env: str | None = None,
                         defaults: ModelDefaults | None = None) -> Model:
    """The bare pydantic-ai model for ``provider:model`` (no recording; see RunModels)."""
    defaults = defaults or ModelDefaults()
    provider, name = parse_spec(spec)
    if defaults.client == "direct":
        if provider != "openai":
            raise UserError(f"client: direct only applies to openai: models (got '{spec}'); remove it from "
                            "this model's registry entry", field="client")
        from physlab.llm.direct_openai import DirectOpenAIModel

        key = _api_key("openai", api_key_env, required=api_base is None)
        return DirectOpenAIModel(name, base_url=api_base or "https://api.openai.com/v1", api_key=key,
                                 timeout_s=defaults.timeout_s)
    if provider == "openai":
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        key = _api_key("openai", api_key_env, required=api_base is None)
        # Our RecordingModel does the retrying (and records each attempt), so the SDK's is off.
        client = AsyncOpenAI(base_url=api_base, api_key=key or "api-key-not-set", max_retries=0,
                             timeout=defaults.timeout_s, http_client=_http_client(defaults.timeout_s))
        return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))
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


class ProviderPool:
    """Provider models shared by the runs of one process, e.g. a sweep's cells: instead of a new
    pydantic-ai model + SDK client + HTTP connection pool per run (~4 ms of CPU to build, and a
    fresh connection each time), a run leases one that at most ``runs_per_client`` running runs
    share. Not one client for all: httpcore re-checks every idle keep-alive connection of a pool
    (a socket poll each) whenever a request starts or ends, so a single pool behind hundreds of
    cells costs O(cells) per request. The direct client (``client: direct``, aiohttp) has no such
    cost: its connector hands out idle connections from a per-host deque, so one client serves every
    run (building another costs ~1 ms of CPU: the model profile, a new session). Whoever creates the
    pool closes it; runs return their lease. Not process-global: two sweeps in one process each own
    theirs."""

    def __init__(self, runs_per_client: int = 8) -> None:
        self.runs_per_client = max(1, runs_per_client)
        self._clients: dict[tuple[Any, ...], list[list[Any]]] = {}  # key -> [[model, leases], ...]

    def acquire(self, spec: str, *, api_base: str | None, api_key_env: str | None,
                defaults: ModelDefaults) -> Model:
        shards = self._clients.setdefault((spec, api_base, api_key_env, defaults.timeout_s, defaults.client), [])
        cap = self.runs_per_client if defaults.client == "sdk" else float("inf")
        free = [s for s in shards if s[1] < cap]
        if free:
            shard = min(free, key=lambda s: s[1])
        else:
            shard = [build_provider_model(spec, api_base=api_base, api_key_env=api_key_env,
                                          defaults=defaults), 0]
            shards.append(shard)
        shard[1] += 1
        return shard[0]

    def release(self, model: Model) -> None:
        for shards in self._clients.values():
            for shard in shards:
                if shard[0] is model:
                    shard[1] = max(0, shard[1] - 1)
                    return

    @property
    def clients(self) -> int:
        return sum(len(s) for s in self._clients.values())

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for shards in clients.values():
            for model, _ in shards:
                await close_provider_model(model)


async def close_provider_model(model: Model | None) -> None:
    """Close the SDK client behind a provider model (its HTTP connections), if it has one, or the
    HTTP session of a DirectOpenAIModel."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:  # noqa: BLE001 - closing must not mask the run's outcome
            pass
        return
    client = getattr(getattr(model, "_provider", None), "client", None)
    if client is not None and hasattr(client, "close"):
        try:
            await client.close()
        except Exception:  # noqa: BLE001 - closing must not mask the run's outcome
            pass


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
    meter (calls.jsonl, budget) and in-flight limiter. Models for one role are cached. With a
    ``providers`` pool the provider model comes from (and stays open in) the pool."""

    def __init__(self, spec: str, *, meter: RunMeter, limiter: InFlightLimiter | None = None,
                 api_base: str | None = None, api_key_env: str | None = None,
                 registry: ModelRegistry | None = None, retry: RetryPolicy | None = None,
                 providers: ProviderPool | None = None) -> None:
        self.name = spec
        self.meter = meter
        self.limiter = limiter or InFlightLimiter(None)
        self.retry = retry or RetryPolicy()
        self.registry = registry or ModelRegistry()
        self.defaults = self.registry.defaults_for(spec)
        provider, rest = parse_spec(spec)
        self.kind = provider if provider in ("scripted", "replay") else "provider"
        self._roles: dict[str, RecordingModel] = {}
        self._scenario: Any = None
        self._book: ReplayBook | None = None
        self._base: Model | None = None
        self._providers = providers
        check_model_name(spec, api_base)
        if provider == "scripted":
            self._scenario = get_scenario(rest)()
            self._scenario_name = rest
        elif provider == "replay":
            self._book = ReplayBook(rest)
        elif providers is not None:
            self._base = providers.acquire(spec, api_base=api_base, api_key_env=api_key_env,
                                           defaults=self.defaults)
        else:
            self._base = build_provider_model(spec, api_base=api_base, api_key_env=api_key_env,
                                              defaults=self.defaults)
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
                base, role=role, spec=self.name, meter=self.meter, limiter=self.limiter,
                defaults=self.defaults, retry=self.retry, cost=self._cost,
                model_label=self._book.model_of if self._book else None)
        return self._roles[role]

    async def aclose(self) -> None:
        if self._providers is not None:
            if self._base is not None:
                self._providers.release(self._base)
        else:
            await close_provider_model(self._base)
