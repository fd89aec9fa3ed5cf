"""Model names -> pydantic-ai models, and the per-run ModelSource strategies draw from.

    provider:model      any pydantic-ai provider (openai:, anthropic:, google-gla:, ...)
    + api_base          openai: any OpenAI-compatible server (vLLM, Ollama, LiteLLM proxy, the stand-in);
                        anthropic: a Messages API (a LiteLLM proxy's /v1/messages); google-gla: a
                        Gemini API base URL
    scripted:NAME       a registered deterministic scenario (physlab.llm.scripted)
    replay:PATH         a recorded run's calls.jsonl (physlab.llm.replay)

A run may give each role its own model (``role_models``, over the registry's ``roles:``, over the
run's model): each distinct model gets one provider model (one HTTP client), one output-mode state
and one record of its limits, shared by the roles that use it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.models import Model

from physlab.errors import UserError
from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.meter import RunMeter
from physlab.llm.output import OutputModeState, check_output_mode, mode_of
from physlab.llm.pricing import Pricer
from physlab.llm.replay import ReplayBook, resolve_calls_path
from physlab.llm.scripted import get_scenario, scripted_model
from physlab.llm.seam import SeamModel, seam_model
from physlab.llm.seam.limits import ModelLimits

_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google-gla": "GEMINI_API_KEY"}
BASE_URL_PROVIDERS = ("openai", "anthropic", "google-gla")
PLACEHOLDER_KEY = "api-key-not-set"


def parse_spec(spec: str) -> tuple[str, str]:
    provider, sep, name = spec.partition(":")
    if not sep or not provider or not name:
        raise UserError(f"model '{spec}' should be written provider:model (e.g. openai:gpt-4o, "
                        "scripted:echo, replay:runs/x/calls.jsonl)", field="--model")
    return provider, name


# The providers a model name starts with here, first for a "did you mean" (a misspelt provider is
# far likelier one of these than one of the hundreds of model names pydantic-ai knows).
OUR_PROVIDERS = (*BASE_URL_PROVIDERS, "scripted", "replay")


def check_provider(spec: str, provider: str) -> None:
    """A provider neither PhysLab nor pydantic-ai knows is one UserError line with the provider meant
    (``opnai:gpt-4o``: did you mean ``openai:gpt-4o``?) -- pydantic-ai's own hint matches the whole
    name against its catalogue and proposes another provider's model."""
    import difflib
    import typing

    from pydantic_ai.models import KnownModelName
    from pydantic_ai.providers import infer_provider_class

    if provider in OUR_PROVIDERS:
        return
    try:
        infer_provider_class(provider)
        return
    except ValueError:
        pass
    except Exception:  # noqa: BLE001 - a provider it knows whose SDK is not installed: said when it is built
        return
    theirs = sorted({name.split(":", 1)[0] for name in typing.get_args(KnownModelName.__value__) if ":" in name})
    close = (difflib.get_close_matches(provider, OUR_PROVIDERS, n=1, cutoff=0.6)
             or difflib.get_close_matches(provider, theirs, n=1, cutoff=0.75))
    name = spec.partition(":")[2]
    hint = (f"did you mean '{close[0]}:{name}'?" if close
            else f"PhysLab's providers: {', '.join(p + ':' for p in OUR_PROVIDERS)}")
    raise UserError(f"unknown provider '{provider}' in model '{spec}': {hint}", field="--model")


def check_model_name(spec: str, api_base: str | None = None) -> None:
    """What can be known of ``spec`` without a request: its form, a provider that exists (else the
    one meant), a scripted scenario that exists, a replay file that is there, and an --api-base that
    applies to it and is a usable URL (RunModels checks each run; a sweep checks its models before
    it records any cell)."""
    provider, rest = parse_spec(spec)
    check_provider(spec, provider)
    if provider == "scripted":
        get_scenario(rest)
    elif provider == "replay":
        resolve_calls_path(rest)
    if api_base is not None:
        if provider in ("scripted", "replay"):
            raise UserError(f"--api-base does not apply to {provider}: models ({spec})", field="--api-base")
        if provider not in BASE_URL_PROVIDERS:
            raise UserError(f"--api-base applies to {', '.join(p + ':' for p in BASE_URL_PROVIDERS)} models "
                            f"(got '{spec}'); an OpenAI-compatible server is addressed as openai:<served-name>",
                            field="--api-base")
        check_api_base(api_base)


def parse_role_models(items: Sequence[str] | Mapping[str, str] | None, *, field_name: str = "--role-model"
                      ) -> dict[str, str]:
    """``ROLE=provider:model`` items (repeatable on the command line) as a mapping, each model checked."""
    if not items:
        return {}
    pairs = items.items() if isinstance(items, Mapping) else [_split_role(i, field_name) for i in items]
    out: dict[str, str] = {}
    for role, spec in pairs:
        if not role or not isinstance(spec, str):
            raise UserError(f"expected ROLE=provider:model, got {role!r}={spec!r}", field=field_name)
        parse_spec(spec)
        out[role] = spec
    return out


def _split_role(item: str, field_name: str) -> tuple[str, str]:
    role, sep, spec = item.partition("=")
    if not sep or not role.strip() or not spec.strip():
        raise UserError(f"'{item}' should be ROLE=provider:model (e.g. reviewer=anthropic:claude-sonnet-4-5)",
                        field=field_name)
    return role.strip(), spec.strip()


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


@dataclass
class KeyInfo:
    key: str | None
    env: str | None
    note: str | None = None  # what to tell the user when no key is sent


def api_key(provider: str, api_key_env: str | None, *, api_base: str | None) -> KeyInfo:
    """The key for ``provider``: from ``api_key_env`` or the provider's variable. A hosted provider
    needs one (UserError naming the variable); a server at ``api_base`` may not, and then the
    returned note says that no key will be sent."""
    env = api_key_env or _KEY_ENV.get(provider)
    key = os.environ.get(env) if env else None
    if api_key_env and not key:
        raise UserError(f"environment variable {api_key_env} is not set", field="--api-key-env")
    if key:
        return KeyInfo(key, env)
    if api_base is None:
        if provider in _KEY_ENV:
            raise UserError(f"no API key for {provider}: set {env} (or name another variable with --api-key-env)",
                            field="--model")
        return KeyInfo(None, env)
    return KeyInfo(None, env, note=f"no API key was sent ({env or 'no key variable'} is not set); if the server "
                                   f"at {api_base} needs one, set it or name the variable with --api-key-env")


def endpoint_of(spec: str, registry: ModelRegistry, api_base: str | None = None,
                api_key_env: str | None = None) -> tuple[str | None, str | None] | None:
    """(the base URL, the key's variable) that ``spec``'s requests go to, as RunModels sends them:
    the registry entry's own server and variable, else the run's; None for a scripted or replayed
    model (no server). The base URL None is the provider's own endpoint."""
    provider, _ = parse_spec(spec)
    if provider in ("scripted", "replay"):
        return None
    defaults = registry.defaults_for(spec)
    return RunModels.api_base_for(spec, defaults, api_base), defaults.api_key_env or api_key_env or _KEY_ENV.get(provider)


def cap_field_for(defaults: ModelDefaults, api_base: str | None) -> str | None:
    """The request field an ``openai:`` model's output cap goes in: the registry's, else
    ``max_tokens`` at an OpenAI-compatible server (the name llama-cpp-python, Ollama and vLLM all
    read; llama-cpp-python ignores ``max_completion_tokens`` and generates to the end of its
    window), else None: pydantic-ai's choice for the provider's own API."""
    if defaults.output_cap_field is not None:
        return defaults.output_cap_field
    return "max_tokens" if api_base is not None else None


def build_provider_model(spec: str, *, api_base: str | None = None, api_key_env: str | None = None,
                         http_client: Any = None, key: KeyInfo | None = None, cap_field: str | None = None) -> Model:
    """The bare pydantic-ai model for ``provider:model`` (no recording; see RunModels). With
    ``http_client`` (physlab.llm.http_capture.http_client) the seam sees the response headers and
    usage blocks the SDKs drop; its owner closes it. Without one, the provider owns its client: use
    the model as an async context manager. Timeouts and the SDK's retries (off: the seam retries
    and records every attempt) are set per request by the seam's model settings."""
    provider, name = parse_spec(spec)
    if api_base is not None and provider not in BASE_URL_PROVIDERS:
        raise UserError(f"--api-base applies to {', '.join(p + ':' for p in BASE_URL_PROVIDERS)} models "
                        f"(got '{spec}'); an OpenAI-compatible server is addressed as openai:<served-name>",
                        field="--api-base")
    key = key or api_key(provider, api_key_env, api_base=api_base)
    secret = key.key or (PLACEHOLDER_KEY if api_base is not None else None)
    try:
        if provider == "openai":
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.profiles.openai import OpenAIModelProfile
            from pydantic_ai.providers.openai import OpenAIProvider

            # The cap's field is a profile setting of pydantic-ai's (merged over the provider's profile).
            profile = (OpenAIModelProfile(openai_chat_supports_max_completion_tokens=cap_field == "max_completion_tokens")
                       if cap_field is not None else None)
            return OpenAIChatModel(name, provider=OpenAIProvider(base_url=api_base, api_key=secret,
                                                                 http_client=http_client), profile=profile)
        if provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            return AnthropicModel(name, provider=AnthropicProvider(api_key=secret, base_url=_anthropic_base(api_base),
                                                                   http_client=http_client))
        if provider == "google-gla":
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            return GoogleModel(name, provider=GoogleProvider(api_key=secret, base_url=api_base,
                                                             http_client=http_client))
        from pydantic_ai.models import infer_model

        return infer_model(spec)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - pydantic-ai's UserError for unknown providers / missing keys
        raise UserError(f"cannot use model '{spec}': {str(exc).splitlines()[0]}", field="--model") from None


def _anthropic_base(api_base: str | None) -> str | None:
    """The Anthropic SDK appends /v1/messages itself: a proxy's base given as .../v1 (as for openai:)
    is accepted too."""
    if api_base is None:
        return None
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


@asynccontextmanager
async def open_provider(spec: str, *, api_base: str | None = None, api_key_env: str | None = None,
                        timeout_s: float = 600.0, cap_field: str | None = None,
                        max_reply_bytes: int = ModelDefaults().max_reply_bytes) -> AsyncIterator[Model]:
    """A provider model for ``spec`` with the seam's HTTP client, open for the block (a sweep shares
    one between its cells)."""
    from physlab.llm.http_capture import http_client, wire_bytes

    client = http_client(timeout_s, wire_bytes(max_reply_bytes))
    try:
        model = build_provider_model(spec, api_base=api_base, api_key_env=api_key_env, http_client=client,
                                     cap_field=cap_field)
        async with model:
            yield model
    finally:
        await client.aclose()


@dataclass
class _Endpoint:
    """One model of a run: its base model(s), defaults, price, output mode and known limits."""

    spec: str
    kind: str  # scripted | replay | provider
    defaults: ModelDefaults
    state: OutputModeState
    limits: ModelLimits
    pricer: Pricer | None = None
    scenario: Any = None
    scenario_name: str = ""
    book: ReplayBook | None = None
    base: Model | None = None
    api_base: str | None = None
    key: KeyInfo | None = None
    roles: list[str] = field(default_factory=list)
    slots: AbstractConcurrencyLimiter | None = None  # the server's own (registry `slots`), after the run's


class RunModels:
    """The ModelSource of one run: ``for_role(role)`` gives the model seam (physlab.llm.seam: its
    layers composed around the model that role plays) bound to the run's meter (calls.jsonl,
    budget) and in-flight limiters. Models for one role are cached.

    Use it as an async context manager (``async with RunModels(...) as models``): a provider model
    built here is closed on exit. Provider models passed in (``provider`` for the run's model,
    ``providers`` by spec) stay open, their caller's to close: a sweep builds one per model and
    shares it between its cells, so they reuse its connections instead of each opening its own."""

    def __init__(self, spec: str, *, meter: RunMeter, limiters: Sequence[AbstractConcurrencyLimiter] = (),
                 api_base: str | None = None, api_key_env: str | None = None,
                 registry: ModelRegistry | None = None, retry: RetryPolicy | None = None,
                 provider: Model | None = None, providers: Mapping[str, Model] | None = None,
                 role_models: Mapping[str, str] | None = None, output_mode: str | None = None,
                 events: Callable[..., None] | None = None) -> None:
        self.name = spec
        self.meter = meter
        self.limiters = tuple(limiters)
        self.retry = retry
        self.registry = registry or ModelRegistry()
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.output_mode = check_output_mode(output_mode)
        self.events = events
        self.role_models = {**parse_role_models(self.registry.roles, field_name="roles"),
                            **parse_role_models(role_models)}
        self.defaults = self.registry.defaults_for(spec)
        kind, _ = parse_spec(spec)
        self.kind = kind if kind in ("scripted", "replay") else "provider"
        self._shared = dict(providers or {})
        if provider is not None:
            self._shared[spec] = provider
        self._roles: dict[str, SeamModel] = {}
        self._endpoints: dict[str, _Endpoint] = {}
        self._clients: list[Any] = []  # the HTTP clients of the provider models built here
        check_model_name(spec, api_base)
        for s in dict.fromkeys([spec, *self.role_models.values()]):
            self._endpoint(s)

    # ---- the models of the run ----------------------------------------------------------------
    def spec_for(self, role: str) -> str:
        return self.role_models.get(role, self.name)

    def _endpoint(self, spec: str) -> _Endpoint:
        if spec in self._endpoints:
            return self._endpoints[spec]
        provider, rest = parse_spec(spec)
        defaults = self.registry.defaults_for(spec)
        mode = self.output_mode or defaults.output_mode or "tool"
        if provider == "scripted":
            mode = "tool"  # a scenario plays tool calls
        if mode == "constrained" and provider not in ("openai", "replay"):
            raise UserError(f"output mode constrained is for openai: models (an OpenAI-compatible server that holds "
                            f"a reply to a schema, such as llama.cpp's); {spec} is not one: use native or prompted",
                            field="--output-mode" if self.output_mode else "output_mode")
        ep = _Endpoint(spec=spec, kind=provider if provider in ("scripted", "replay") else "provider",
                       defaults=defaults, state=OutputModeState(configured=mode),
                       limits=ModelLimits(declared_max_output=defaults.truncation_max_output_tokens,
                                          window=defaults.context_window))
        if defaults.slots is not None and provider not in ("scripted", "replay"):
            from pydantic_ai.concurrency import ConcurrencyLimiter

            ep.slots = ConcurrencyLimiter(defaults.slots)  # no more out at once than the server generates
        ep.state.on_change = lambda reason, s=spec: self._say(
            "output_mode", f"{s}: {reason}; output mode auto -> prompted for the rest of the run")
        if provider == "scripted":
            ep.scenario, ep.scenario_name = get_scenario(rest)(), rest
            ep.pricer = Pricer(spec, defaults, free=True)
        elif provider == "replay":
            ep.book = ReplayBook(rest)
            ep.state.configured = ep.book.output_mode  # the recorded run's requests, sent the same way
        else:
            ep.api_base = self.api_base_for(spec, defaults, self.api_base)
            ep.pricer = Pricer(spec, defaults)
            ep.key = api_key(provider, defaults.api_key_env or self.api_key_env, api_base=ep.api_base)
            if spec in self._shared:
                ep.base = self._shared[spec]
            else:
                from physlab.llm.http_capture import http_client, wire_bytes

                client = http_client(defaults.timeout_s, wire_bytes(defaults.max_reply_bytes))
                self._clients.append(client)
                ep.base = build_provider_model(spec, api_base=ep.api_base, http_client=client, key=ep.key,
                                               cap_field=cap_field_for(defaults, ep.api_base))
            if ep.key.note:
                self._say("notice", f"{spec}: {ep.key.note}")
        self._endpoints[spec] = ep
        return ep

    @staticmethod
    def api_base_for(spec: str, defaults: ModelDefaults, api_base: str | None) -> str | None:
        """The registry entry's own server ("default": the provider's), else the run's --api-base."""
        if defaults.api_base is not None:
            if defaults.api_base == "default":
                return None
            check_api_base(defaults.api_base)
            return defaults.api_base
        if api_base is not None and parse_spec(spec)[0] in BASE_URL_PROVIDERS:
            return api_base
        return None

    def _say(self, kind: str, text: str) -> None:
        if self.events is not None:
            try:
                self.events(kind, text=text)
                return
            except Exception:  # noqa: BLE001 - a broken display must not stop the run
                pass
        print(f"physlab: {text}", file=sys.stderr)

    def for_role(self, role: str) -> SeamModel:
        if role not in self._roles:
            ep = self._endpoint(self.spec_for(role))
            ep.roles.append(role)
            if ep.scenario is not None:
                base: Model = scripted_model(ep.scenario, role, ep.scenario_name)
            elif ep.book is not None:
                base = ep.book.model_for(role)
            else:
                assert ep.base is not None
                base = ep.base
            limiters = (*self.limiters, ep.slots) if ep.slots is not None else self.limiters
            self._roles[role] = seam_model(
                base, role=role, spec=ep.spec, meter=self.meter, limiters=limiters,
                defaults=ep.defaults, retry=self.retry or ep.defaults.retry,
                cost=ep.pricer if ep.pricer is not None else (ep.book.cost_of if ep.book else None),
                model_label=ep.book.model_of if ep.book else None, output_state=ep.state, limits=ep.limits,
                events=self.events, endpoint=ep.api_base, key_note=ep.key.note if ep.key else None,
                secrets=(ep.key.key,) if ep.key and ep.key.key else ())
        return self._roles[role]

    def limits(self, spec: str | None = None) -> ModelLimits:
        """What is known so far of a model's limits: the registry's, and what its server's refusals
        said (the run's model unless ``spec`` names another)."""
        return self._endpoint(spec or self.name).limits

    def output_modes(self) -> dict[str, str]:
        """Each model's output mode as the run ends (``auto`` that fell back says so)."""
        return {s: (ep.state.configured if not ep.state.fell_back else f"auto -> prompted ({ep.state.fell_back})")
                for s, ep in self._endpoints.items()}

    def models_by_role(self) -> dict[str, str]:
        return {role: m.spec for role, m in sorted(self._roles.items())}

    def unused_role_models(self) -> list[str]:
        """Roles given their own model that no request of the run played (a misspelt role?)."""
        return sorted(r for r in self.role_models if r not in self._roles)

    def describe_failure(self, exc: BaseException) -> str | None:
        """A line naming the role and output mode, and what to try, for a model that could not
        produce the structured output asked of it (pydantic-ai's 'Exceeded maximum output retries')."""
        from pydantic_ai.exceptions import UnexpectedModelBehavior

        if not isinstance(exc, UnexpectedModelBehavior) or "retries" not in str(exc):
            return None
        missed = [m for m in self._roles.values() if getattr(m, "output_misses", 0)]  # the output-mode layer's count
        last = self.meter.records[-1] if self.meter.records else None
        model = missed[-1] if missed else (self._roles.get(last.role) if last else None)
        if model is None:
            return None
        mode = mode_of(model)
        other = {"tool": "prompted (or auto)", "native": "constrained or prompted", "constrained": "prompted",
                 "prompted": "native, constrained or tool"}[mode]
        return (f"{model.role}: the model ({model.spec}) did not produce the structured output asked of it in "
                f"'{mode}' output mode ({str(exc).splitlines()[0]}); try --output-mode {other}, a larger model for "
                f"this role (--role-model {model.role}=...), or a server with tool calling enabled")

    # ---- lifecycle ----------------------------------------------------------------------------
    async def open(self) -> RunModels:
        """Nothing to open (the provider models are ready when built); kept so a run reads
        ``await models.open()`` ... ``await models.aclose()``."""
        return self

    async def __aenter__(self) -> RunModels:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP clients of the provider models built here (idempotent)."""
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()
