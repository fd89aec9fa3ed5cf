"""Per-model defaults from a small registry YAML (output caps, output mode, retry policy, prices,
reasoning effort, prompt caching, endpoint), and the model each role plays.

Format (``--models-config FILE`` or ``$PHYSLAB_MODELS_CONFIG``)::

    models:
      "openai:qwen3-32b":            # exact model spec, the bare model name, or a glob ("openai:qwen*")
        max_output_tokens: 8192      # the cap every request is sent with (none: the server's default)
        truncation_max_output_tokens: 32768  # the model's own maximum: a truncated reply is re-asked up to it
        truncation_retries: 2        # finish_reason=length: re-ask this many times, then continue the text
        context_window: 32768        # prompt + reply, when the server does not say (it is also discovered)
        output_mode: auto            # tool | native | constrained | prompted | auto (see physlab.llm.output)
        output_cap_field: max_tokens # the name the server reads the cap under (default: max_tokens at an api_base)
        slots: 1                     # requests the server generates at once (llama-cpp-python: 1)
        reasoning_effort: high       # pydantic-ai `thinking`: minimal|low|medium|high|xhigh|max|true|false
        free: true                   # or a price for a model genai-prices does not know:
        input_usd_per_mtok: 0.0
        output_usd_per_mtok: 0.0
        cache_read_usd_per_mtok: 0.0
        cache_write_usd_per_mtok: 0.0
        prompt_cache: true           # pydantic-ai's `cache` setting (Anthropic cache points, ...)
        retry: {max_attempts: 6, max_wait_s: 600}
        api_base: http://127.0.0.1:4000/v1   # this model's own server ("default": the provider's own)
        api_key_env: LITELLM_KEY
        timeout_s: 900
        max_reply_bytes: 1048576     # a larger reply is refused (default: 1 MiB)
        max_record_bytes: 2097152    # no calls.jsonl line grows past this (default: 2 MiB)
    roles:                           # a model per role, over --model (--role-model overrides these)
      reviewer: "anthropic:claude-sonnet-4-5"
      computer: "openai:qwen3-32b"

Prices: a proxy's stated cost first, then the registry, then genai-prices (behind ``--api-base``
too), else 0 ("unpriced"); ``free: true`` makes a model cost 0.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from physlab.errors import UserError

OutputMode = Literal["tool", "native", "constrained", "prompted", "auto"]
OUTPUT_MODES: tuple[str, ...] = ("tool", "native", "constrained", "prompted", "auto")
CapField = Literal["max_tokens", "max_completion_tokens"]


class RetryPolicy(BaseModel):
    """How transient failures are retried (each attempt is recorded in calls.jsonl).

    A rate limit (429) is waited out for up to ``max_wait_s`` in total, as long as the server says
    (``Retry-After``, ``retry-after-ms``, LiteLLM's ``llm_provider-retry-after(-ms)``), plus jitter;
    other transient failures (5xx, timeouts, dropped connections, unusable replies) are retried at
    most ``max_attempts`` times (the first try included) with jittered exponential backoff."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=4, ge=1)
    backoff_s: float = Field(default=1.0, ge=0)  # first delay without a server hint; doubles each time
    max_backoff_s: float = Field(default=30.0, ge=0)
    max_wait_s: float = Field(default=600.0, ge=0, description="Total seconds one request may spend waiting.")
    jitter: float = Field(default=0.2, ge=0, le=1, description="Spread added to every delay (fraction).")
    max_retry_after_s: float | None = Field(default=None, ge=0, description="A longer wait one server "
                                            "asks for is cut to this (default: max_wait_s).")


class ModelDefaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_output_tokens: int | None = Field(default=None, ge=1)
    reasoning_effort: str | bool | None = None
    output_mode: OutputMode | None = None
    output_cap_field: CapField | None = Field(default=None, description=(
        "The field the output cap is sent in: max_completion_tokens (OpenAI's name, what its API reads) or "
        "max_tokens (what llama-cpp-python, Ollama and most OpenAI-compatible servers read; llama-cpp-python "
        "ignores the other). Default: max_completion_tokens for the provider's own API, max_tokens at an "
        "api_base; `physlab models check` finds the one a server honours."))
    slots: int | None = Field(default=None, ge=1, description=(
        "Requests the server generates at once (llama-cpp-python: 1). The run sends no more than this at a "
        "time, and a request that timed out is not sent again while the server still generates for it."))
    free: bool = False
    input_usd_per_mtok: float | None = Field(default=None, ge=0)
    output_usd_per_mtok: float | None = Field(default=None, ge=0)
    cache_read_usd_per_mtok: float | None = Field(default=None, ge=0)
    cache_write_usd_per_mtok: float | None = Field(default=None, ge=0)
    truncation_retries: int = Field(default=2, ge=0)
    truncation_max_output_tokens: int | None = Field(default=None, ge=1)
    continuations: int = Field(default=2, ge=0, description="A text reply still cut at the maximum is "
                               "continued (the model asked for the rest) this many times.")
    context_window: int | None = Field(default=None, ge=1)
    min_reply_tokens: int = Field(default=256, ge=1, description="Under a token or cost cap, a request "
                                  "for which fewer output tokens than this are left waits for the requests in "
                                  "flight to give back what they did not use; with none in flight it is sent "
                                  "with what is left.")
    prompt_cache: bool | str | dict[str, Any] | None = None
    retry: RetryPolicy | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 600.0
    max_reply_bytes: int = Field(default=1 << 20, ge=1024, description=(
        "A reply larger than this (text, thinking and tool-call arguments, in bytes) is refused: not used "
        "and not stored. Default 1 MiB: twice what 128k output tokens, the largest output cap models offer, "
        "come to at about 4 bytes a token; only a broken or hostile server sends more."))
    max_record_bytes: int = Field(default=2 << 20, ge=4096, description=(
        "No calls.jsonl line grows past this (bytes): a longer one leaves out the request's messages, then "
        "the response, and says so in its note (replay then serves it without comparing the request). "
        "Default 2 MiB: a reply at max_reply_bytes beside a prompt of about 250k tokens."))
    # Deprecated: the lean `direct` client is gone; both values now mean the provider's SDK (a
    # registry that still says `direct` gets one warning line from ModelRegistry.load).
    client: Literal["sdk", "direct"] = "sdk"

    @property
    def has_price(self) -> bool:
        return self.input_usd_per_mtok is not None or self.output_usd_per_mtok is not None

    def price(self, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0,
              cache_write_tokens: int = 0) -> float:
        """The registry's price of a request (cached input at its own price when one is given)."""
        inp = self.input_usd_per_mtok or 0.0
        read = self.cache_read_usd_per_mtok if self.cache_read_usd_per_mtok is not None else inp
        write = self.cache_write_usd_per_mtok if self.cache_write_usd_per_mtok is not None else inp
        plain = max(0, input_tokens - cache_read_tokens - cache_write_tokens)
        return (plain * inp + cache_read_tokens * read + cache_write_tokens * write
                + output_tokens * (self.output_usd_per_mtok or 0.0)) / 1e6


class ModelRegistry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: dict[str, ModelDefaults] = {}
    roles: dict[str, str] = {}

    def defaults_for(self, spec: str) -> ModelDefaults:
        """Defaults for ``provider:model``: exact spec, then bare model name, then the first glob."""
        if spec in self.models:
            return self.models[spec]
        bare = spec.split(":", 1)[-1]
        if bare in self.models:
            return self.models[bare]
        for pattern, d in self.models.items():
            if fnmatch.fnmatchcase(spec, pattern) or fnmatch.fnmatchcase(bare, pattern):
                return d
        return ModelDefaults()

    @classmethod
    def load(cls, path: str | Path | None = None) -> ModelRegistry:
        """Load the registry from ``path``, else ``$PHYSLAB_MODELS_CONFIG``, else an empty registry."""
        if path is None:
            path = os.environ.get("PHYSLAB_MODELS_CONFIG") or None
        if path is None:
            return cls()
        p = Path(path)
        try:
            raw: Any = yaml.safe_load(p.read_text())
        except OSError as exc:
            raise UserError(f"cannot read model registry ({exc.strerror})", path=p) from None
        except yaml.YAMLError as exc:
            raise UserError(f"not valid YAML ({str(exc).splitlines()[0]})", path=p) from None
        if raw is None:
            return cls()
        if not isinstance(raw, dict) or not isinstance(raw.get("models", {}), dict):
            raise UserError("expected a mapping 'models: {<provider:model>: {...}}'", path=p, field="models")
        if not isinstance(raw.get("roles", {}) or {}, dict):
            raise UserError("expected a mapping 'roles: {<role>: <provider:model>}'", path=p, field="roles")
        unknown = sorted(set(raw) - {"models", "roles"})
        if unknown:
            raise UserError(f"unknown top-level key '{unknown[0]}' (expected models, roles)", path=p,
                            field=unknown[0])
        try:
            registry = cls.model_validate({"models": raw.get("models") or {}, "roles": raw.get("roles") or {}})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise UserError(err["msg"], path=p, field=loc) from None
        direct = [name for name, d in registry.models.items() if d.client == "direct"]
        if direct:
            print(f"warning: {p}: field '{direct[0]}.client': 'direct' is no longer available; requests go "
                  "through the openai SDK (remove the key: the next release refuses it)", file=sys.stderr)
        return registry
