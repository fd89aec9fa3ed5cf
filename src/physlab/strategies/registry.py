"""Strategy names -> factories. Imports are lazy, so a strategy that is unfinished (or whose module
fails to import) does not break the CLI: asking for it gives a one-line error (exit 2).

To add a strategy, add an entry to ``_BUILTIN`` ("module:attribute"; the attribute is called with
no arguments and returns an object with ``name`` and ``async run(ctx) -> Attempt``; parameters
come from ``ctx.params``), or call :func:`register_strategy` at runtime.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from physlab.errors import UserError

StrategyFactory = Callable[[], Any]

_BUILTIN: dict[str, str] = {
    "lab": "physlab.lab.strategy:LabStrategy",
    "oneshot": "physlab.strategies.oneshot:OneShot",
    "two-step": "physlab.strategies.two_step:TwoStep",
    "rsa": "physlab.strategies.rsa:RSA",
    "manager": "physlab.strategies.manager:Manager",
    "tpbench-vote": "physlab.strategies.tpbench_vote:TPBenchVote",
    "tpbench-bon": "physlab.strategies.tpbench_bon:TPBenchBestOfN",
    "tpbench-weak": "physlab.strategies.tpbench_weak:TPBenchWeak",
    "tpbench-sympy": "physlab.strategies.tpbench_sympy:TPBenchSympy",
    "multi-round": "physlab.strategies.multi_round:MultiRound",
    "minions": "physlab.strategies.minions.strategy:Minions",
    "scalar": "physlab.strategies.scalar.strategy:Scalar",
}
_EXTRA: dict[str, StrategyFactory | str] = {}


def register_strategy(name: str, factory: StrategyFactory | str) -> None:
    """Add or replace a strategy (a factory, or a "module:attribute" string imported lazily)."""
    _EXTRA[name] = factory


def names() -> list[str]:
    """Every strategy name the CLI accepts (whether or not its module is finished)."""
    return sorted(set(_BUILTIN) | set(_EXTRA))


def _resolve(target: StrategyFactory | str, name: str) -> StrategyFactory:
    if callable(target):
        return target
    module, _, attr = target.partition(":")
    try:
        mod = importlib.import_module(module)
        return getattr(mod, attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"strategy '{name}' is not available yet ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else target})", field="--strategy") from None


def available() -> list[str]:
    """The strategies whose modules import (tries each import)."""
    ok = []
    for n in names():
        try:
            _resolve(_EXTRA.get(n) or _BUILTIN[n], n)
            ok.append(n)
        except UserError:
            pass
    return ok


def get_factory(name: str) -> StrategyFactory:
    target = _EXTRA.get(name) or _BUILTIN.get(name)
    if target is None:
        raise UserError(f"unknown strategy '{name}' (expected one of: {', '.join(names())})", field="--strategy")
    return _resolve(target, name)


def create(name: str) -> Any:
    """A fresh strategy object for one run."""
    return get_factory(name)()


list_strategies = names
