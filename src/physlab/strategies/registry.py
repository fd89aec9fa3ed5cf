"""Strategy names -> Strategy classes: the one place a scaffold is added.

Modules are imported when a strategy is first asked for, so the command line does not import every
scaffold (and pydantic-ai's agent machinery) to start. To add a strategy, add its
"module:Class" to ``_BUILTIN``, or call :func:`register_strategy` at runtime (tests, plugins).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any

from physlab.errors import UserError
from physlab.run.options import ProtocolName
from physlab.strategies.base import Strategy
from physlab.strategies.protocols import overrides, with_protocol

_BUILTIN: dict[str, str] = {
    "lab": "physlab.strategies.lab:LabStrategy",
    "oneshot": "physlab.strategies.oneshot:OneShot",
    "two-step": "physlab.strategies.two_step:TwoStep",
    "rsa": "physlab.strategies.rsa:RSA",
    "manager": "physlab.strategies.manager:Manager",
    "tpbench-vote": "physlab.strategies.tpbench.vote:TPBenchVote",
    "tpbench-bon": "physlab.strategies.tpbench.best_of_n:TPBenchBestOfN",
    "tpbench-weak": "physlab.strategies.tpbench.weak:TPBenchWeak",
    "tpbench-sympy": "physlab.strategies.tpbench.sympy_check:TPBenchSympy",
    "multi-round": "physlab.strategies.multi_round:MultiRound",
    "minions": "physlab.strategies.minions.strategy:Minions",
    "scalar": "physlab.strategies.scalar.strategy:Scalar",
}
_EXTRA: dict[str, type[Strategy]] = {}
DEFAULT = "lab"  # `physlab solve` without --strategy (DESIGN.md)


def register_strategy(name: str, cls: type[Strategy]) -> None:
    """Add or replace a strategy."""
    _EXTRA[name] = cls


def names() -> list[str]:
    """Every strategy name ``--strategy`` accepts."""
    return sorted(set(_BUILTIN) | set(_EXTRA))


def get(name: str) -> type[Strategy]:
    """The Strategy class for ``--strategy NAME`` (one UserError line for an unknown name)."""
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in _BUILTIN:
        close = difflib.get_close_matches(name, names(), n=1, cutoff=0.6)
        hint = f": did you mean '{close[0]}'?" if close else ""
        raise UserError(f"unknown strategy '{name}'{hint} (expected one of: {', '.join(names())})", field="--strategy")
    module, _, attr = _BUILTIN[name].partition(":")
    return getattr(importlib.import_module(module), attr)


# Parameters that act on one session only -- where a resume starts (the lab's ``--resume DIR@N``) --
# and so are given to the strategy but never recorded among the run's options.
SESSION_PARAMS = ("resume_iteration",)


def session_params(params: dict[str, Any]) -> dict[str, Any]:
    """Take the session-only parameters out of ``params`` (the run's options keep the rest)."""
    return {k: params.pop(k) for k in SESSION_PARAMS if k in params}


def build(name: str, params: Mapping[str, Any] | None = None, protocol: ProtocolName = "physlab") -> Strategy:
    """The strategy ``--strategy NAME`` built with the user's parameter values over the protocol's
    (``--protocol``: physlab, or paper for its published setting; one UserError line for an unknown
    name or a bad value): what every entry point hands ``physlab.run.runner.run``."""
    kind = get(name)
    return kind(kind.Params.parse(name, with_protocol(kind.Params, params, protocol)))


def protocol_notes(name: str, params: Mapping[str, Any] | None, protocol: ProtocolName) -> list[str]:
    """What an entry point says before it runs: each --param that departs from the protocol."""
    return overrides(get(name).Params, name, params, protocol)
