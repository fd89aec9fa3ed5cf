"""Formulas written as text for a terminal (physlab.run.math_text): the text means what the formula
meant -- a fraction's parts keep their grouping -- and what it cannot write stays as written."""

from __future__ import annotations

import pytest

from physlab.run.math_text import markdown_to_text, math_to_text


@pytest.mark.parametrize("latex, text", [
    (r"E' = \frac{E}{1 + \frac{E}{m c^2}(1-\cos\theta)}", "E′ = E/(1 + (E/(m c²))(1-cos θ))"),
    (r"P = 1 - \frac{(1-p)^{4}}{1+p^2}", "P = 1 - (1-p)⁴/(1+p²)"),
    (r"\sigma = \frac{4\pi\alpha^2}{3s}", "σ = (4πα²)/(3s)"),            # not 4πα²/3s: that is (4πα²/3)·s
    (r"\tfrac{1}{\sqrt 2}(|0\rangle + |1\rangle)", "(1/√2)(|0⟩ + |1⟩)"),
    (r"T = 2\pi\sqrt{\frac{L}{g}}", "T = 2π√(L/g)"),
    (r"e^{-i k x}", "e^(-i k x)"),
    (r"\hbar\omega \le k_B T", "ħω ≤ k_B T"),
    (r"\left(\frac{a}{b}\right)^2", "(a/b)²"),
    (r"\sqrt[3]{x+1}", "(x+1)^(1/3)"),
])
def test_a_formula_reads_as_it_means(latex, text):
    assert math_to_text(latex) == text


@pytest.mark.parametrize("latex", [r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}", r"\xrightarrow{N\to\infty}",
                                   r"\frac{a}{b", r"a \\ b"])
def test_what_it_cannot_write_stays_as_written(latex):
    assert math_to_text(latex) == latex.strip()


def test_only_formulas_change_not_prices_or_code():
    md = ("It costs $5 and $10.\n\nSo $x^2 = \\alpha$ and\n$$\\frac{a}{b+c}$$\n"
          "```python\nprint('$\\\\alpha$')\n```\n")
    assert markdown_to_text(md) == ("It costs $5 and $10.\n\nSo x² = α and\na/(b+c)\n"
                                    "```python\nprint('$\\\\alpha$')\n```\n")
