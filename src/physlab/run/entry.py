"""The one front door of a run's options: what `physlab solve` and the Python API were given
(:class:`Given`: flags or arguments, each read the one way), over the options a resumed run recorded
(or, for a new run, the defaults), and the strategy built with them (:func:`prepare`). The strategy
registry is handed down by the entry point (runs stand below the strategies).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from physlab.run.options import (
    BUDGET_FLAGS,
    FLAGS,
    ProtocolName,
    RunOptions,
    check_protocol,
    given_options,
    registry_path,
)
from physlab.run.resume import resume_options
from physlab.tools.choice import ToolChoice

if TYPE_CHECKING:
    from physlab.run.runner import Scaffold


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
        options, _ = resume_options(resume, chosen, yes=yes)
    else:
        chosen.setdefault("model", os.environ.get("PHYSLAB_MODEL"))
        chosen.setdefault("models_config", registry_path(None))
        options = RunOptions.model_validate({"strategy": strategies.DEFAULT, **chosen})
    once = strategies.session_params(options.params)  # where this session starts: not recorded
    return options, strategies.build(options.strategy, {**options.params, **once, **(session or {})}, options.protocol)
