"""A package's front door that imports each name it hands on from its module on first use (PEP 562).

The command line imports every capability's package to register its commands; a help text should
not pay for the grader, the sandbox, the model seam or the strategies. ``problems``, ``sandbox``,
``grading``, ``llm`` and ``strategies`` open this way.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, tuple[str, ...]]) -> tuple[Callable[[str], Any],
                                                                           Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, for the names ``where`` maps each module to;
    a name, once imported, is kept in the package so the next use costs nothing."""
    modules = {name: module for module, names in where.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(modules[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *modules})

    return __getattr__, __dir__
