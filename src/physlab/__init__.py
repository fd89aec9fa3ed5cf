"""PhysLab: a workbench for AI-assisted theoretical physics.

From Python (docs/api.md)::

    import physlab
    problems = physlab.load_problems("examples")
    attempt = physlab.solve("examples/quantum_error_correction_main", "oneshot", "openai:gpt-4o")
    verdict = physlab.grade("examples/quantum_error_correction_main", attempt.answer_code)

``import physlab`` stays cheap: these names import their machinery (SymPy, pydantic-ai, the
sandbox) on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from physlab.version import __version__

_API = ("solve", "solve_async", "grade", "grade_async", "load_problems", "load_problem")
__all__ = ["__version__", *_API]

if TYPE_CHECKING:
    from physlab.api import grade, grade_async, load_problem, load_problems, solve, solve_async  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _API:
        from physlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'physlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
