"""Strategy parameters: one pydantic model per scaffold, like the lab's ``LabSettings``.

Values come typed from ``--param KEY=VALUE`` (a YAML scalar), a ``--config`` YAML file or a sweep's
``--param`` (JSON); :meth:`StrategyParams.parse` validates them strictly (``true`` is no number,
``"5"`` no integer) into the strategy's model or raises one ``UserError`` line (unknown key, wrong
type, out of range). Every field says where its default comes from (``source``: a seed paper's
file and section, or PhysLab's own choice and why), which the model's JSON schema carries;
``physlab strategies show NAME`` prints it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from physlab.errors import UserError

# The four seed documents (DESIGN.md: where they give a number, that number is the default). A
# source names its seed file, so the code can tell them apart; ``cite`` names the paper instead,
# as a reader cites it (``physlab strategies show``).
PHYSICS_INTERN = "seed 000_dd0601bf2cd9213d.txt (physics-intern)"
MINIONS = "seed 001_9f18fe12820138a3.txt (PhysicsMinions)"
TPBENCH = "seed 002_ceab526c39556c16.txt (TPBench test-time scaling)"
SCALAR = "seed 003_7316701f887a3352.txt (SCALAR)"

PAPERS = {
    "000_dd0601bf2cd9213d.txt": "the physics-intern paper",
    "001_9f18fe12820138a3.txt": "PhysicsMinions (arXiv:2509.24855)",
    "002_ceab526c39556c16.txt": "Gao et al., Test-time Scaling Techniques in Theoretical Physics (TPBench)",
    "003_7316701f887a3352.txt": "SCALAR (arXiv:2605.06772)",
}
_SEED = re.compile(r"seed (\d{3}_[0-9a-f]{16}\.txt)(?: \([^)]*\))?")


def cite(source: str) -> str:
    """``source`` as a reader cites it: each seed file's name replaced by its paper's."""
    return _SEED.sub(lambda m: PAPERS.get(m.group(1), m.group(0)), source)


def param(default: Any, description: str, source: str, **constraints: Any) -> Any:
    """A parameter field: its default, what it means, and where the default comes from."""
    return Field(default, description=description, json_schema_extra={"source": source}, **constraints)


class StrategyParams(BaseModel):
    """A strategy's parameters (none for this base). Subclasses add fields made with :func:`param`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # For fields a subclass inherits from a model it does not own (the lab's LabSettings): where
    # their defaults come from, and what they mean when the field itself does not say.
    sources: ClassVar[dict[str, str]] = {}
    descriptions: ClassVar[dict[str, str]] = {}
    # Named settings of several parameters at once (``--param preset=NAME``): each preset's values
    # for the parameters it sets; ``default_preset`` names the defaults themselves.
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    default_preset: ClassVar[str] = "default"

    @classmethod
    def preset_values(cls, key: str) -> dict[str, Any]:
        """The parameter's value under each preset ({} when no preset sets it)."""
        if not any(key in values for values in cls.presets.values()):
            return {}
        default = cls.model_fields[key].get_default(call_default_factory=True)
        return {cls.default_preset: default, **{name: values.get(key, default) for name, values in cls.presets.items()}}
    # What each protocol other than PhysLab's sets (physlab.strategies.protocols): protocol -> the
    # values that give the published setting where a default departs from it.
    protocols: ClassVar[dict[str, dict[str, Any]]] = {}

    @property
    def sees_reference(self) -> bool:
        """The run hands this strategy the reference solution (``RunEnvironment.reference_solution``).
        False for every solver; only a paper setting that conditions a prompt on the answer key
        says True, and such runs are marked reference-conditioned."""
        return False

    @classmethod
    def from_max_iterations(cls, n: int) -> dict[str, Any]:
        """What ``--max-iterations N`` stands for when the model has no ``max_iterations`` field
        (given explicitly, a value wins): nothing for a strategy without iterations."""
        return {}

    @classmethod
    def parse(cls, strategy: str, values: Mapping[str, Any] | None) -> Self:
        """The parameters from user values, or one UserError line naming the strategy and the key."""
        data = dict(values or {})
        if "max_iterations" not in cls.model_fields and "max_iterations" in data:
            n = data.pop("max_iterations")
            if isinstance(n, int) and not isinstance(n, bool):
                data = {**cls.from_max_iterations(n), **data}
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise _one_line(strategy, cls, exc) from None


def _one_line(strategy: str, cls: type[StrategyParams], exc: ValidationError) -> UserError:
    err = exc.errors()[0]
    key = ".".join(str(x) for x in err["loc"])
    if err["type"] == "extra_forbidden":
        known = ", ".join(cls.model_fields) or "none"
        return UserError(f"strategy {strategy}: unknown --param '{key}'; expected one of: {known}")
    msg = str(err["msg"]).removeprefix("Value error, ")
    if not key:  # a check across fields (model_validator): the message names its keys
        return UserError(f"strategy {strategy}: {msg}")
    return UserError(f"strategy {strategy}: --param {key}: {msg[:1].lower() + msg[1:]} (got {err.get('input')!r})")


class ModelParams(StrategyParams):
    """Parameters of every scaffold that sends its own requests: the sampling temperature."""

    temperature: float | None = param(
        None, "Sampling temperature of every request (unset: the provider's default).",
        "PhysLab: the provider's default, as the papers' own runs (the seeds that fix one override it)",
        ge=0.0, le=2.0)


class SamplingParams(ModelParams):
    """Parameters of the scaffolds that sample many requests at once (RSA, TPBench)."""

    concurrency: int = param(
        8, "Requests of this run in flight at once (also capped by --max-in-flight).",
        "PhysLab: a fair share of a provider's rate limit; the papers do not bound it", ge=1, le=256)
