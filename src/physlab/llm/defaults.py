"""Per-model defaults from a small registry YAML (max output tokens, reasoning effort, prices,
truncation policy, timeout).

Format (``--models-config FILE`` or ``$PHYSLAB_MODELS_CONFIG``)::

    models:
      "openai:qwen3-32b":            # exact model spec, the bare model name, or a glob ("openai:qwen*")
        max_output_tokens: 8192
        reasoning_effort: high       # pydantic-ai `thinking`: minimal|low|medium|high|xhigh|max|true|false
        input_usd_per_mtok: 0.0      # prices for models genai-prices does not know
        output_usd_per_mtok: 0.0
        truncation_retries: 1        # finish_reason=length: re-ask this many times ...
        truncation_max_output_tokens: 32768   # ... with a cap raised up to this
        timeout_s: 900

Local models (an ``--api-base`` server) cost 0 unless a price is set here.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from physlab.errors import UserError


class ModelDefaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_output_tokens: int | None = None
    reasoning_effort: str | bool | None = None
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    truncation_retries: int = 1
    truncation_max_output_tokens: int | None = None
    timeout_s: float = 600.0
    # Deprecated: the lean `direct` client is gone; both values now mean the provider's SDK (a
    # registry that still says `direct` gets one warning line from ModelRegistry.load).
    client: Literal["sdk", "direct"] = "sdk"

    @property
    def has_price(self) -> bool:
        return self.input_usd_per_mtok is not None or self.output_usd_per_mtok is not None

    def price(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * (self.input_usd_per_mtok or 0.0)
                + output_tokens * (self.output_usd_per_mtok or 0.0)) / 1e6


class ModelRegistry(BaseModel):
    models: dict[str, ModelDefaults] = {}

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
    def load(cls, path: str | Path | None = None) -> "ModelRegistry":
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
        try:
            registry = cls.model_validate({"models": raw.get("models") or {}})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise UserError(err["msg"], path=p, field=loc) from None
        direct = [name for name, d in registry.models.items() if d.client == "direct"]
        if direct:
            print(f"warning: {p}: field '{direct[0]}.client': 'direct' is no longer available; requests go "
                  "through the openai SDK (remove the key: the next release refuses it)", file=sys.stderr)
        return registry
