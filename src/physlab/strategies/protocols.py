"""The protocols a strategy can be set by: ``physlab`` (PhysLab's defaults, its improvements on,
each one a parameter) or ``paper`` (every strategy at its published setting: one flag,
``--protocol paper``, on `physlab solve`, `physlab bench run` and the Python API).

A strategy's parameter model says what the paper protocol changes (``StrategyParams.protocols``);
its defaults are the rest. A parameter given explicitly (``--param``, ``--max-iterations``) wins
over the protocol, and :func:`overrides` says so, one line each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from physlab.run.options import PARAM_FLAGS, PROTOCOLS, ProtocolName
from physlab.strategies.params import StrategyParams


def protocol_values(params_model: type[StrategyParams], protocol: ProtocolName) -> dict[str, Any]:
    """The parameter values ``protocol`` sets for a strategy (none under physlab)."""
    if protocol not in PROTOCOLS:  # a caller's typo, not the user's: the flag's choices are checked
        raise ValueError(f"unknown protocol {protocol!r} (expected one of {PROTOCOLS})")
    return dict(params_model.protocols.get(protocol, {}))


def with_protocol(params_model: type[StrategyParams], params: Mapping[str, Any] | None,
                  protocol: ProtocolName) -> dict[str, Any]:
    """The values a strategy is built with: the protocol's, then the ones given over them."""
    return {**protocol_values(params_model, protocol), **dict(params or {})}


def defaults_under(params_model: type[StrategyParams], name: str, protocol: ProtocolName) -> dict[str, Any]:
    """Every parameter's default under ``protocol`` (a preset the protocol sets expanded)."""
    return params_model.parse(name, protocol_values(params_model, protocol)).model_dump(mode="json")


def overrides(params_model: type[StrategyParams], name: str, params: Mapping[str, Any] | None,
              protocol: ProtocolName) -> list[str]:
    """A line for each parameter given that departs from what ``protocol`` alone sets ("--param
    vote=equivalence overrides the paper protocol's vote=exact"); none under physlab, whose
    defaults a --param is expected to change."""
    given = dict(params or {})
    if protocol == "physlab" or not given:
        return []
    alone = defaults_under(params_model, name, protocol)
    built = params_model.parse(name, with_protocol(params_model, given, protocol)).model_dump(mode="json")
    notes = []
    for key in given:
        if key in built and built[key] != alone.get(key):
            flag = f"{PARAM_FLAGS[key]} " if key in PARAM_FLAGS else f"--param {key}="
            notes.append(f"{flag}{_shown(built[key])} overrides the {protocol} protocol's {key}={_shown(alone.get(key))}")
    return notes


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
