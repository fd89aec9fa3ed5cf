"""What a pool's warm workers import before their first run: the whole scientific stack, or only
the part a command's runs need.

A worker that serves many runs (a solve, a sweep) imports the stack once and every run forked from
it starts with it loaded. A command that makes one or two runs (``physlab grade``, ``physlab
sandbox run``) would pay seconds of CPU per worker for modules its run never uses; it asks for what
the run imports instead. Isolation is the same either way: what is preloaded is imported before
any request exists, and the runs are forked, confined and limited as always.
"""

from __future__ import annotations

import ast

from physlab.sandbox._zygote_common import SCIENTIFIC_STACK

FULL: tuple[str, ...] = SCIENTIFIC_STACK
NONE: tuple[str, ...] = ()
# The grader's two stages (physlab.grading.rt): SymPy for every answer, the LaTeX reader for a
# written one and for a LaTeX reference; pint, NumPy and the rest are imported by a run that needs them.
GRADING: tuple[str, ...] = ("sympy", "mpmath", "latex2sympy2_extended")


def check(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` in the stack's order; a name outside it is a maintainer's mistake."""
    unknown = [n for n in names if n not in SCIENTIFIC_STACK]
    if unknown:
        raise ValueError(f"not in the sandbox's scientific stack: {', '.join(unknown)}")
    return tuple(n for n in SCIENTIFIC_STACK if n in names)


def for_script(code: str) -> tuple[str, ...]:
    """The stack's modules a Python script imports by name (``import scipy.linalg``, ``from sympy
    import x``): a warm worker for this one script preloads those, as the lab's warm workers have
    them, and nothing else. The script is only parsed (``ast``), never run here; a script that does
    not parse preloads nothing (it fails the same way in the sandbox)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return NONE
    packages: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            packages.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            packages.add(node.module.split(".")[0])
    return tuple(n for n in SCIENTIFIC_STACK if n.split(".")[0] in packages)
