"""A result's value written as a Python (SymPy) expression is drawn as math (physlab.web.pyexpr):
read with `ast`, never evaluated; anything but arithmetic stays text."""

from __future__ import annotations

import pytest

from physlab.web.markdown import claim_html, tex_value
from physlab.web.pyexpr import python_to_tex


@pytest.mark.parametrize("expr, tex", [
    ("(1 - p)**2/(1 + p)", "\\frac{{\\left(1 - p\\right)}^{2}}{1 + p}"),
    ("4*sp.pi*alpha**2/(3*s)", "\\frac{4 \\pi {\\alpha}^{2}}{3 s}"),
    ("-hbar*omega/2", "\\frac{-\\hbar \\omega}{2}"),
    ("sp.sqrt(L/g)*2*pi", "\\sqrt{\\frac{L}{g}} \\cdot 2 \\pi"),
    ("sp.Rational(16, 25)*p**2", "\\frac{16}{25} {p}^{2}"),
    ("m_e*c**2", "m_{e} {c}^{2}"),
])
def test_arithmetic_is_written_as_latex(expr, tex):
    assert python_to_tex(expr) == tex


@pytest.mark.parametrize("expr", ["__import__('os').system('x')", "p.__class__", "[x for x in y]", "f(x=1)",
                                  "'a' + 'b'", "x[0] + 1", "lambda: 1", "x if y else z", "a ^ b", "\\frac{a}{b}",
                                  "(" * 300 + "1" + ")" * 300])
def test_anything_else_is_left_as_text(expr):
    assert python_to_tex(expr) is None


def test_a_claim_that_states_its_value_draws_it_once():
    value = "(229376*p**5 - 253125)/((128*p**2 - 300*p + 225))"
    html, inline = claim_html(f"The fidelity is F(p) = {value}", value)
    assert inline and "<mfrac>" in html and "**" not in html and html.count("229376") == 1
    html, inline = claim_html("The fidelity was computed.", value)       # not stated: shown below it
    assert not inline and "229376" not in html
    assert "<code>" in tex_value("x[0] + <b>") and "<b>" not in tex_value("x[0] + <b>")
