"""A run's options: everything that says how a run is made, built once by its entry point (the
command line, the Python API, a sweep) and recorded in the run, so that a resume continues the run
as it was made -- its model, its server, its key variable, its parameters and budget.

:func:`prepare` is the one front door of `physlab solve` and the Python API: what they were given
(:class:`Given`), parsed, over the recorded options at a resume, and the strategy built with them.

The key's variable is recorded by NAME (``api_key_env``), never the key. What a flag given at a
resume changes over the recorded options is said, one line each (:func:`merge`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Protocol, Sequence

from pydantic import BaseModel, ConfigDict, Field

from physlab.errors import UserError
from physlab.llm.usage import Budget
from physlab.tools.choice import ToolChoice

if TYPE_CHECKING:
    from physlab.run.runner import Scaffold

OutputMode = Literal["tool", "native", "prompted", "auto"]
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


def flag_of(option: str) -> str:
    """How `physlab solve` names an option in its error lines (its flag)."""
    named = {**FLAGS, **BUDGET_FLAGS, "role_models": "--role-model"}
    return named.get(option, "--" + option.replace("_", "-"))


@dataclass
class Given:
    """What an entry point was given, as given (None: not given): `physlab solve`'s flags and the
    Python API's arguments alike. :meth:`parsed` reads each value the one way."""

    strategy: str | None = None
    model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    output_mode: str | None = None
    role_models: Sequence[str] | Mapping[str, str] | None = None
    models_config: str | os.PathLike[str] | None = None
    max_in_flight: int | None = None
    seed: int | None = None
    params: Mapping[str, Any] | None = None
    budget: Mapping[str, Any] | None = None
    tools: str | None = None
    protocol: str | None = None
    console: str | None = None
    judge: str | None = None

    def parsed(self, name: Callable[[str], str] = flag_of) -> dict[str, Any]:
        """The options given, each checked (a bad value: one UserError line naming the option as the
        entry point calls it, ``name(option)``), without those not given: what :func:`merge` takes."""
        from physlab.llm.models import parse_role_models
        from physlab.llm.output import check_output_mode

        return given_options({
            "strategy": self.strategy, "model": self.model, "api_base": self.api_base,
            "api_key_env": self.api_key_env,
            "output_mode": check_output_mode(self.output_mode, field_name=name("output_mode")),
            "role_models": parse_role_models(self.role_models, field_name=name("role_models")),
            "models_config": registry_path(self.models_config, environment=False),
            "max_in_flight": self.max_in_flight, "seed": self.seed, "params": dict(self.params or {}),
            "budget": dict(self.budget or {}), "console": self.console, "judge": self.judge,
            "tools": ToolChoice.parse(self.tools, name("tools")) if self.tools is not None else None,
            "protocol": check_protocol(self.protocol, name("protocol"))})


class Strategies(Protocol):
    """What :func:`prepare` asks of the strategy registry (:mod:`physlab.strategies.registry`, handed
    down by the entry point: runs stand below the strategies)."""

    DEFAULT: str

    def session_params(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def build(self, name: str, params: Mapping[str, Any] | None = None,
              protocol: ProtocolName = "physlab") -> Scaffold: ...


def prepare(given: Given, resume: Path | None, strategies: Strategies, *, name: Callable[[str], str] = flag_of,
            yes: bool = False, session: Mapping[str, Any] | None = None) -> tuple[RunOptions, Scaffold]:
    """A run's options and its strategy, the one way every entry point makes them: what was
    ``given`` (parsed; ``name`` says how the entry point calls an option in an error line), over the
    options the run in ``resume`` recorded (:func:`physlab.run.resume.resume_options`; ``yes``: go on
    with what a record not written here chooses) or, for a new run, over the defaults (the model in
    ``$PHYSLAB_MODEL``, the registry in ``$PHYSLAB_MODELS_CONFIG``); the strategy built with its
    parameters, the protocol's, and ``session`` (what acts on this session only, never recorded:
    where a resume starts)."""
    chosen = given.parsed(name)
    if resume is not None:
        from physlab.run.resume import resume_options

        options, _ = resume_options(resume, chosen, yes=yes)
    else:
        chosen.setdefault("model", os.environ.get("PHYSLAB_MODEL"))
        chosen.setdefault("models_config", registry_path(None))
        options = RunOptions.model_validate({"strategy": strategies.DEFAULT, **chosen})
    once = strategies.session_params(options.params)  # where this session starts: not recorded
    return options, strategies.build(options.strategy, {**options.params, **once, **(session or {})}, options.protocol)
