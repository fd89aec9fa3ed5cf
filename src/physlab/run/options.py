"""A run's options: everything that says how a run is made, built once by its entry point (the
command line, the Python API, a sweep) and recorded in the run, so that a resume continues the run
as it was made -- its model, its server, its key variable, its parameters and budget.

What an entry point was given becomes these options in one place: :mod:`physlab.run.entry`.

The key's variable is recorded by NAME (``api_key_env``), never the key. What a flag given at a
resume changes over the recorded options is said, one line each (:func:`merge`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from physlab.errors import UserError
from physlab.llm.usage import Budget
from physlab.tools.choice import ToolChoice

OutputMode = Literal["tool", "native", "constrained", "prompted", "auto"]
ConsoleMode = Literal["live", "lines", "json", "quiet"]
# How every strategy is set: PhysLab's defaults (its improvements on, each a switch), or each
# strategy's published setting (`--protocol paper`; the strategies' own parameter tables say what
# that sets). A --param given explicitly wins over either.
ProtocolName = Literal["physlab", "paper"]
PROTOCOLS: tuple[ProtocolName, ...] = ("physlab", "paper")

# The flag each option comes from on `physlab solve`, for what a resume says about it.
FLAGS: dict[str, str] = {
    "strategy": "--strategy", "model": "--model", "api_base": "--api-base", "api_key_env": "--api-key-env",
    "output_mode": "--output-mode", "models_config": "--models-config", "max_in_flight": "--max-in-flight",
    "seed": "--seed", "tools": "--tools", "protocol": "--protocol", "judge": "--judge",
}
BUDGET_FLAGS: dict[str, str] = {"max_calls": "--max-calls", "max_tokens": "--max-tokens",
                                "max_cost_usd": "--max-cost", "max_wall_s": "--max-wall"}
PARAM_FLAGS: dict[str, str] = {"max_iterations": "--max-iterations"}


class RunOptions(BaseModel):
    """How one run is made (a sweep cell is a run too). Fields are only ever added: a record
    written by an older PhysLab reads with the defaults, a newer one's extra fields are passed over."""

    model_config = ConfigDict(extra="ignore")

    strategy: str = Field(description="The strategy's name (`physlab strategies list`).")
    model: str = Field(description="provider:model, scripted:NAME or replay:PATH: plays every role without "
                                   "its own model.")
    role_models: dict[str, str] = Field(default_factory=dict, description="role -> provider:model.")
    api_base: str | None = Field(default=None, description="The server of openai:/anthropic:/google-gla: models.")
    api_key_env: str | None = Field(default=None, description="The NAME of the variable holding the key (never "
                                                              "the key); None: the provider's own variable.")
    output_mode: OutputMode | None = Field(default=None, description="How structured answers are asked for; "
                                                                     "None: each model's registry entry, else tool.")
    models_config: str | None = Field(default=None, description="The model registry file the run read (absolute).")
    params: dict[str, Any] = Field(default_factory=dict, description="The strategy's parameters as the user gave "
                                                                     "them (its defaults fill the rest).")
    budget: Budget = Field(default_factory=Budget)
    max_in_flight: int | None = Field(default=None, ge=1, description="This run's own cap on requests at once.")
    tools: ToolChoice | None = Field(default=None, description="The lab's tools beyond Python (--tools); None: "
                                                                "the default for the problem (ToolChoice.default), "
                                                                "which the runner records in its place.")
    seed: int = 0
    judge: str | None = Field(default=None, description="provider:model grading an answer whose reference is prose "
                                                        "(--judge); None: such an answer stays ungraded.")
    console: ConsoleMode | None = Field(default=None, description="The progress display the run was started "
                                                                  "with (a resume picks its own).")
    protocol: ProtocolName = Field(default="physlab", description="physlab: PhysLab's defaults; paper: every "
                                                                  "strategy at its published setting (params "
                                                                  "given explicitly win).")


def check_protocol(value: str | None, flag: str = "--protocol") -> ProtocolName | None:
    """A protocol's name as given (None: not given), or one UserError line naming the choices."""
    if value is None:
        return None
    for name in PROTOCOLS:
        if value == name:
            return name
    raise UserError(f"expected one of {', '.join(PROTOCOLS)}, got '{value}'", field=flag)


def registry_path(path: str | os.PathLike[str] | None, *, environment: bool = True) -> str | None:
    """The model registry file a run reads, as its options record it (absolute): ``path``, else
    (``environment``) ``$PHYSLAB_MODELS_CONFIG``; None: no registry."""
    chosen = path if path is not None else (os.environ.get("PHYSLAB_MODELS_CONFIG") or None) if environment else None
    return str(Path(chosen).expanduser().resolve()) if chosen else None


def given_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The options a command line gave, as :func:`merge` takes them: ``values`` without the ones
    left out (None, or an empty list or mapping)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None or (isinstance(value, (list, dict)) and not value):
            continue
        out[key] = value
    return out


def merge(recorded: RunOptions, given: Mapping[str, Any]) -> RunOptions:
    """``recorded`` with each option in ``given`` over it (``budget``, ``params`` and ``role_models``
    one entry at a time)."""
    data = recorded.model_dump()
    for key, value in given.items():
        if key == "budget":
            data["budget"].update(value.model_dump(exclude_none=True) if isinstance(value, Budget) else dict(value))
        elif key in ("params", "role_models"):
            data[key].update(dict(value))
        else:
            data[key] = value
    return RunOptions.model_validate(data)


def differences(before: RunOptions, after: RunOptions) -> list[str]:
    """A line for each option ``after`` changes from ``before``, named by its flag: what a resume
    says before it goes on ("--max-calls 500 overrides the recorded 400")."""
    notes: list[str] = []

    def say(flag: str, new: Any, old: Any, unset: str = "(none)") -> None:  # flag: "--seed" or "--param k="
        if new != old:
            sep = "" if flag.endswith("=") else " "
            notes.append(f"{flag}{sep}{new} overrides the recorded {unset if old is None else old}")

    for key, flag in FLAGS.items():
        say(flag, getattr(after, key), getattr(before, key))
    old_budget, new_budget = before.budget.model_dump(), after.budget.model_dump()
    for name in new_budget:
        say(BUDGET_FLAGS.get(name, f"--{name}"), new_budget[name], old_budget[name], "(no limit)")
    for name in after.params.keys() | before.params.keys():
        say(PARAM_FLAGS.get(name, f"--param {name}="), after.params.get(name), before.params.get(name), "(the default)")
    for role in after.role_models.keys() | before.role_models.keys():
        say(f"--role-model {role}=", after.role_models.get(role), before.role_models.get(role), "(the run's model)")
    return sorted(notes)

