"""Issue #32, "wrong answers graded correct by sampling": only the same value at every point of the
domain the symbols' assumptions allow, or algebra, makes two answers equal.

Before the fix six points drawn inside (0.1, 0.9) decided: ``Abs(x)`` passed for ``x``, a step at
``x = 3`` or a ``floor(n/10)`` term was never seen. Now real and integer symbols are drawn over both
signs and several decades, untyped symbols over several decades, and an answer holding a function
whose value at sample points says little about other points (Abs, sign, floor, ceiling, frac, Mod,
Heaviside, Piecewise, Min, Max, DiracDelta, re, im, arg, conjugate, or an even power under a
fractional one such as ``sqrt(x**2)``) is equal only when algebra agrees.
"""

from __future__ import annotations

import pytest

from .helpers import grade_in_process, problem


def _template(declare: str, params: str) -> str:
    return f"import sympy as sp\n\n{declare}\n\ndef answer({params}):\n    y = ...\n    return y\n"


UNTYPED = _template('x = sp.Symbol("x")', "x")
REAL = _template('x = sp.Symbol("x", real=True)', "x")
POSITIVE = _template('x = sp.Symbol("x", positive=True)', "x")
INTEGER = _template('n = sp.Symbol("n", integer=True)', "n")
UNTYPED_N = _template('n = sp.Symbol("n")', "n")
POSITIVE_N = _template('n = sp.Symbol("n", integer=True, positive=True)', "n")
TWO_REAL = _template('x, t = sp.symbols("x t", real=True)', "x, t")

# (template, reference, candidate): all four of the issue's, each where the symbol is untyped,
# real, positive where it still differs
WRONG = {
    "Abs(x) for x (untyped)": (UNTYPED, "y = x", "return sp.Abs(x)"),
    "Abs(x) for x (real)": (REAL, "y = x", "return sp.Abs(x)"),
    "x for Abs(x) (real)": (REAL, "y = sp.Abs(x)", "return x"),
    "x*sqrt(x**4) for x**3 (untyped)": (UNTYPED, "y = x**3", "return x*sp.sqrt(x**4)"),
    "x*sqrt(x**2) for x**2 (real: a sign error)": (REAL, "y = x**2", "return x*sp.sqrt(x**2)"),
    "sqrt(x**2) for x (untyped)": (UNTYPED, "y = x", "return sp.sqrt(x**2)"),
    "a step at x = 3 (untyped)": (UNTYPED, "y = x", "return x + 100*sp.Heaviside(x - 3)"),
    "a step at x = 3 (positive)": (POSITIVE, "y = x", "return x + 100*sp.Heaviside(x - 3)"),
    "floor(n/10) (untyped)": (UNTYPED_N, "y = n**2", "return n**2 + 7*sp.floor(n/10)"),
    "floor(n/10) (integer)": (INTEGER, "y = n**2", "return n**2 + 7*sp.floor(n/10)"),
    "floor(n/10) (positive integer)": (POSITIVE_N, "y = n**2", "return n**2 + 7*sp.floor(n/10)"),
    "a float coefficient outside the tolerance (real)": (REAL, "y = 1.2345*sp.Abs(x)", "return 1.2346*sp.Abs(x)"),
    "Max(x, 0) for x (real)": (REAL, "y = x", "return sp.Max(x, 0)"),
    "conjugate(x) for x (untyped)": (UNTYPED, "y = x", "return sp.conjugate(x)"),
    "a sign error for negative x (real)": (REAL, "y = x**3", "return x**2*sp.sqrt(x**2)"),
}

RIGHT = {
    "sqrt(x**2) is Abs(x) for real x": (REAL, "y = sp.Abs(x)", "return sp.sqrt(x**2)"),
    "x*Abs(x) rewritten with sign (real)": (REAL, "y = x*sp.Abs(x)", "return x**2*sp.sign(x)"),
    "x*Abs(x) as x*sqrt(x**2) (real)": (REAL, "y = x*sp.Abs(x)", "return x*sp.sqrt(x**2)"),
    "sqrt(x**2) is x for positive x": (POSITIVE, "y = x", "return sp.sqrt(x**2)"),
    "x*sqrt(x**4) is x**3 for real x": (REAL, "y = x**3", "return x*sp.sqrt(x**4)"),
    "Max as Abs (real)": (REAL, "y = sp.Max(x, 0)", "return (x + sp.Abs(x))/2"),
    "a Piecewise written the other way round (real)": (
        REAL, "y = sp.Piecewise((x, x < 1), (x**2, True))", "return sp.Piecewise((x**2, x >= 1), (x, True))"),
    "Heaviside times a smooth factor, expanded (real)": (
        TWO_REAL, "y = sp.Heaviside(t)*(x + 1)**2", "return sp.Heaviside(t)*x**2 + 2*x*sp.Heaviside(t) + sp.Heaviside(t)"),
    "a float coefficient within the tolerance (real)": (REAL, "y = 1.2345*sp.Abs(x)", "return 1.23450000001*sp.Abs(x)"),
    "an identity numbers decide (untyped)": (UNTYPED, "y = sp.sin(x)**2", "return (1 - sp.cos(2*x))/2"),
    "a physicist's square root (untyped, positive by convention)": (
        _template('v, c = sp.symbols("v c")', "v, c"), "y = 1/sp.sqrt(1 - v**2/c**2)", "return c/sp.sqrt(c**2 - v**2)"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_answers_are_never_correct(name):
    template, reference, body = WRONG[name]
    verdict, reason = grade_in_process(problem(template, reference), _fill(template, body))
    assert verdict == "incorrect", f"{name}: {verdict} ({reason})"


@pytest.mark.parametrize("name", list(RIGHT))
def test_hard_positives_stay_correct(name):
    template, reference, body = RIGHT[name]
    verdict, reason = grade_in_process(problem(template, reference), _fill(template, body))
    assert verdict == "correct", f"{name}: {verdict} ({reason})"


def test_a_difference_past_the_old_window_is_found_and_named():
    verdict, reason = grade_in_process(problem(POSITIVE_N, "y = n**2"), _fill(POSITIVE_N, "return n**2 + 7*sp.floor(n/10)"))
    assert verdict == "incorrect" and "differs at n=" in reason, reason


def test_numbers_alone_never_make_a_step_function_equal():
    verdict, reason = grade_in_process(problem(UNTYPED, "y = x"), _fill(UNTYPED, "return sp.Abs(x)"))
    assert verdict == "incorrect" and "Abs" in reason, reason


def _fill(template: str, body: str) -> str:
    return template.replace("    y = ...\n    return y\n", f"    {body}\n")
