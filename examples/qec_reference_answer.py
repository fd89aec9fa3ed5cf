"""A candidate answer for the built-in problem examples/quantum_error_correction_main (CritPt's
public [[4,2,2]] example), filled with CritPt's published reference. Used by the README demo:

    physlab grade examples/quantum_error_correction_main examples/qec_reference_answer.py
"""

import sympy as sp

p = sp.symbols("p")


def answer(p):
    r"""Logical state fidelity of the post-selected |00>_AB state as a function of p."""
    numerator = (sp.Rational(16, 25) * p**2 - sp.Rational(128, 125) * p**3
                 + sp.Rational(2048, 3375) * p**4 - sp.Rational(32768, 253125) * p**5)
    acceptance = (1 - sp.Rational(68, 15) * p + sp.Rational(704, 75) * p**2 - sp.Rational(32768, 3375) * p**3
                  + sp.Rational(253952, 50625) * p**4 - sp.Rational(262144, 253125) * p**5)
    F_logical = 1 - numerator / acceptance
    return F_logical
