"""Table-driven agreement test: for tier-1/tier-2 style references, the reference itself and
equivalent rewrites grade correct, wrong variants grade incorrect, unfilled/broken ones invalid.

Runs the grader's stage-1/stage-2 logic in-process (the candidates here are our own, trusted);
the sandboxed path is exercised in test_grader.py on a subset of the same table."""

from __future__ import annotations

import pytest

from .helpers import QEC_DEN, QEC_NUM, QEC_TEMPLATE, grade_in_process, problem, qec_problem

QEC = qec_problem()
QEC_EXPR = f"1 - {QEC_NUM} / {QEC_DEN}"

GR_TEMPLATE = '''import sympy as sp

G, M, c, r = sp.symbols("G M c r", positive=True)

def answer(G, M, c, r):
    """Redshift factor and ISCO radius."""
    z = ...
    r_isco = ...
    return (z, r_isco)
'''
GR = problem(GR_TEMPLATE, "z = 1/sp.sqrt(1 - 2*G*M/(c**2*r)) - 1\nr_isco = 6*G*M/c**2")

ISING_TEMPLATE = '''import sympy as sp

N = sp.symbols("N", integer=True, positive=True)
J = sp.symbols("J", real=True)
beta = sp.symbols("beta", positive=True)

def answer(N, J, beta):
    Z = ...
    f = ...
    return {"Z": Z, "f": f}
'''
ISING = problem(ISING_TEMPLATE, "Z = (2*sp.cosh(beta*J))**N + (2*sp.sinh(beta*J))**N\n"
                                "f = -sp.log(2*sp.cosh(beta*J))/beta")

OSC_TEMPLATE = '''import sympy as sp

x, k = sp.symbols("x k", real=True)

def answer(x, k):
    psi = ...
    return psi
'''
OSC = problem(OSC_TEMPLATE, "psi = sp.exp(-x**2/2)*sp.cos(k*x)*sp.pi")

NUM_TEMPLATE = '''import sympy as sp

def answer():
    eta = ...
    return eta
'''
ETA = problem(NUM_TEMPLATE, "eta = 1 - sp.sqrt(sp.Rational(8, 9))")
ETA_CRITPT = problem(NUM_TEMPLATE, "eta = 1 - sp.sqrt(sp.Rational(8, 9))", extra={"format": "critpt"})
ETA_NUMBER = problem(NUM_TEMPLATE, "0.0572", fmt="number")
TINY = problem(NUM_TEMPLATE, "eta = sp.Rational(1, 2**99)")

ZERO_TEMPLATE = '''import sympy as sp

t = sp.symbols("t", positive=True)

def answer(t):
    commutator = ...
    return (commutator, t)
'''
# A component that vanishes identically, written unsimplified: evalf leaves "0.e-172" noise.
ZERO_FORM = problem(ZERO_TEMPLATE, "commutator = sp.sin(t)**2 + sp.cos(t)**2 - 1")
ZERO_EXACT = problem(ZERO_TEMPLATE, "commutator = 0")

PAIR_TEMPLATE = '''import sympy as sp

def answer():
    S_classical = ...
    S_quantum = ...
    return (S_classical, S_quantum)
'''
PAIR = problem(PAIR_TEMPLATE, "S_classical = 2\nS_quantum = 2*sp.sqrt(2)")

MAT_TEMPLATE = '''import sympy as sp

theta = sp.symbols("theta", real=True)

def answer(theta):
    R = ...
    return R
'''
MAT = problem(MAT_TEMPLATE, "R = sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])")

LATEX_TEMPLATE = '''import sympy as sp

alpha, c, m_e = sp.symbols("alpha c m_e", positive=True)

def answer(alpha, c, m_e):
    E = ...
    return E
'''
LATEX = problem(LATEX_TEMPLATE, r"$E = \frac{1}{2} \alpha^2 m_e c^2$", fmt="latex")
LATEX_JUXT = problem(LATEX_TEMPLATE, r"\alpha c", fmt="latex")

CASES = [
    # ---- QEC rational function (CritPt example)
    ("qec reference", QEC, f"F_logical = {QEC_EXPR}\nreturn F_logical", "correct"),
    ("qec factored", QEC, f"return sp.factor({QEC_EXPR})", "correct"),
    ("qec together", QEC, f"return sp.together({QEC_EXPR})", "correct"),
    ("qec own symbol", QEC, f"p = sp.Symbol('p')\nreturn {QEC_EXPR}", "correct"),
    ("qec positive symbol", QEC, f"p = sp.Symbol('p', positive=True)\nreturn {QEC_EXPR}", "correct"),
    ("qec floats 12 digits", QEC, "return 1 - (0.64*p**2 - 1.024*p**3 + 0.606814814815*p**4 - 0.12945382716*p**5)"
     " / (1 - 4.53333333333*p + 9.38666666667*p**2 - 9.70903703704*p**3 + 5.01633580247*p**4"
     " - 1.03563061728*p**5)", "correct"),
    ("qec x2", QEC, f"return 2*({QEC_EXPR})", "incorrect"),
    ("qec sign flip", QEC, f"return 1 + {QEC_NUM} / {QEC_DEN}", "incorrect"),
    ("qec missing term", QEC, "return 1 - (sp.Rational(16, 25)*p**2 - sp.Rational(128, 125)*p**3) / " + QEC_DEN,
     "incorrect"),
    ("qec unfilled", QEC, "F_logical = ...\nreturn F_logical", "invalid"),
    # ---- GR formula with positive symbols, tuple answer
    ("gr reference", GR, "return (1/sp.sqrt(1 - 2*G*M/(c**2*r)) - 1, 6*G*M/c**2)", "correct"),
    ("gr rewritten", GR, "return (sp.sqrt(c**2*r)/sp.sqrt(c**2*r - 2*G*M) - 1, 3*(2*G*M)/c**2)", "correct"),
    ("gr list", GR, "return [1/sp.sqrt(1 - 2*G*M/(c**2*r)) - 1, 6*G*M/c**2]", "correct"),
    ("gr swapped", GR, "return (6*G*M/c**2, 1/sp.sqrt(1 - 2*G*M/(c**2*r)) - 1)", "incorrect"),
    ("gr wrong factor", GR, "return (1/sp.sqrt(1 - G*M/(c**2*r)) - 1, 6*G*M/c**2)", "incorrect"),
    ("gr too few", GR, "return (1/sp.sqrt(1 - 2*G*M/(c**2*r)) - 1,)", "incorrect"),
    ("gr arguments swapped", GR, "return (1/sp.sqrt(1 - 2*G*c/(M**2*r)) - 1, 6*G*M/c**2)", "incorrect"),
    # ---- exp/trig (cosh vs exponentials), dict answer, integer symbol
    ("ising reference", ISING, "return {'Z': (2*sp.cosh(beta*J))**N + (2*sp.sinh(beta*J))**N,"
     " 'f': -sp.log(2*sp.cosh(beta*J))/beta}", "correct"),
    ("ising exp rewrite", ISING, "return {'f': -sp.log(sp.exp(beta*J) + sp.exp(-beta*J))/beta,"
     " 'Z': (sp.exp(beta*J) + sp.exp(-beta*J))**N + (sp.exp(beta*J) - sp.exp(-beta*J))**N}", "correct"),
    ("ising sign", ISING, "return {'Z': (2*sp.cosh(beta*J))**N - (2*sp.sinh(beta*J))**N,"
     " 'f': -sp.log(2*sp.cosh(beta*J))/beta}", "incorrect"),
    ("ising missing key", ISING, "return {'Z': (2*sp.cosh(beta*J))**N + (2*sp.sinh(beta*J))**N}", "incorrect"),
    ("osc reference", OSC, "return sp.exp(-x**2/2)*sp.cos(k*x)*sp.pi", "correct"),
    ("osc exp form", OSC, "return sp.pi*(sp.exp(-x**2/2 + sp.I*k*x) + sp.exp(-x**2/2 - sp.I*k*x))/2", "correct"),
    ("osc 2pi", OSC, "return sp.exp(-x**2/2)*sp.cos(k*x)*2*sp.pi", "incorrect"),
    ("osc sin", OSC, "return sp.exp(-x**2/2)*sp.sin(k*x)*sp.pi", "incorrect"),
    # ---- numbers
    ("eta exact", ETA, "return 1 - 2*sp.sqrt(2)/3", "correct"),
    ("eta float 12 digits", ETA, "return 0.0571909584179", "correct"),
    # the precision policy (rt/precision.py): a number is judged at the digits it states...
    ("eta float 4 digits", ETA, "return 0.05719", "correct"),
    ("eta float 4 digits misrounded", ETA, "return 0.05718", "incorrect"),
    ("eta float 1 digit", ETA, "return 0.06", "incorrect"),
    # ...except under CritPt's rule (an exact form or 12 significant digits)
    ("eta float 4 digits, CritPt", ETA_CRITPT, "return 0.05719", "incorrect"),
    ("eta float 12 digits, CritPt", ETA_CRITPT, "return 0.0571909584179", "correct"),
    ("eta python float", ETA, "import math\nreturn 1 - math.sqrt(8/9)", "correct"),
    ("eta numpy float", ETA, "import numpy as np\nreturn np.float64(1 - np.sqrt(8/9))", "correct"),
    ("number ref exact cand", ETA_NUMBER, "return 1 - sp.sqrt(sp.Rational(8, 9))", "correct"),
    ("number ref off", ETA_NUMBER, "return 0.0580", "incorrect"),
    ("tiny exact", TINY, "return sp.Rational(1, 2**99)", "correct"),
    ("tiny vs 2**-98", TINY, "return sp.Rational(1, 2**98)", "incorrect"),
    ("tiny float vs 2**-98", TINY, "return 2.0**-98", "incorrect"),
    ("tiny float", TINY, "return 2.0**-99", "correct"),
    # ---- a component that is identically zero (unsimplified on one side)
    ("zero ref form, cand 0", ZERO_FORM, "return (0, t)", "correct"),
    ("zero ref form, cand 0.0", ZERO_FORM, "return (0.0, t)", "correct"),
    ("zero ref form, cand other form", ZERO_FORM, "return (2*sp.sin(t)*sp.cos(t) - sp.sin(2*t), t)", "correct"),
    ("zero ref, cand zero form", ZERO_EXACT, "return (sp.atan(t) + sp.atan(1/t) - sp.pi/2, t)", "correct"),
    ("zero ref form, cand tiny", ZERO_FORM, "return (sp.Rational(1, 10**9), t)", "incorrect"),
    ("zero ref form, cand exp(-t)", ZERO_FORM, "return (sp.exp(-1000*t), t)", "incorrect"),
    # ---- tuple of numbers
    ("pair reference", PAIR, "return (2, 2*sp.sqrt(2))", "correct"),
    ("pair sqrt8", PAIR, "return (sp.Integer(2), sp.sqrt(8))", "correct"),
    ("pair sympy tuple", PAIR, "return sp.Tuple(2, 2*sp.sqrt(2))", "correct"),
    ("pair swapped", PAIR, "return (2*sp.sqrt(2), 2)", "incorrect"),
    ("pair half unfilled", PAIR, "return (2, ...)", "invalid"),
    # ---- matrix
    ("matrix reference", MAT, "return sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])",
     "correct"),
    ("matrix exp form", MAT, "c = (sp.exp(sp.I*theta) + sp.exp(-sp.I*theta))/2\n"
     "s = (sp.exp(sp.I*theta) - sp.exp(-sp.I*theta))/(2*sp.I)\nreturn sp.Matrix([[c, -s], [s, c]])", "correct"),
    ("matrix nested list", MAT, "return [[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]]", "correct"),
    ("matrix transposed", MAT, "return sp.Matrix([[sp.cos(theta), sp.sin(theta)], [-sp.sin(theta), sp.cos(theta)]])",
     "incorrect"),
    ("matrix wrong shape", MAT, "return sp.Matrix([[sp.cos(theta), -sp.sin(theta)]])", "incorrect"),
    # ---- LaTeX references (math-verify would misread these)
    ("latex m_e", LATEX, "return alpha**2*m_e*c**2/2", "correct"),
    ("latex m_e own symbols", LATEX, "a, cc, m = sp.symbols('alpha c m_e')\nreturn a**2*m*cc**2/2", "correct"),
    ("latex m_e x2", LATEX, "return alpha**2*m_e*c**2", "incorrect"),
    ("latex alpha c", LATEX_JUXT, "return alpha*c", "correct"),
    ("latex alpha only", LATEX_JUXT, "return alpha", "incorrect"),
    # ---- invalid
    ("syntax error", QEC, "return (p +", "invalid"),
    ("exception", QEC, "return 1/0", "invalid"),
    ("returns None", QEC, "x = p", "invalid"),
    ("returns string", QEC, "return 'p**2'", "invalid"),
    ("returns object", QEC, "return object()", "invalid"),
]


@pytest.mark.parametrize("name,prob,body,expected", CASES, ids=[c[0] for c in CASES])
def test_agreement(name, prob, body, expected):
    from .helpers import fill

    code = fill(prob.answer_template, body)
    verdict, reason = grade_in_process(prob, code)
    assert verdict == expected, f"{name}: {verdict} ({reason})"


def test_wrong_arity_is_invalid():
    code = "import sympy as sp\ndef answer(p, q):\n    return p\n"
    verdict, reason = grade_in_process(QEC, code)
    assert verdict == "invalid" and "arity" in reason


def test_reasons_never_contain_the_reference():
    code = "import sympy as sp\ndef answer(p):\n    return 2*p\n"
    verdict, reason = grade_in_process(QEC, code)
    assert verdict == "incorrect"
    assert "253125" not in reason and "Rational" not in reason


def test_template_fallback_placeholder():
    assert QEC_TEMPLATE.count("...") == 1


SET_TEMPLATE = '''import sympy as sp

chi, kappa, k = sp.symbols("chi kappa k", real=True)

def answer(chi, kappa, k):
    omega = ...  # a set of SymPy expressions
    return omega
'''
SETP = problem(SET_TEMPLATE, "omega = {sp.sqrt(kappa/chi)*k**2, -sp.sqrt(kappa/chi)*k**2}")
EQ_TEMPLATE = '''import sympy as sp

x, y = sp.symbols("x y", positive=True)

def answer(x, y):
    rel = ...
    return rel
'''
EQP = problem(EQ_TEMPLATE, "rel = sp.Eq(y, 2*x + 1)")
LATEX_NUM = problem(NUM_TEMPLATE, r"\boxed{2.5 \times 10^{3}}", fmt="latex")
SUBSCRIPT_TEMPLATE = '''import sympy as sp

k_12, t = sp.symbols("k_{12} t", positive=True)

def answer(k_12, t):
    phase = ...
    return phase
'''
SUBP = problem(SUBSCRIPT_TEMPLATE, "phase = sp.exp(sp.I*k_12*t)")

MORE = [
    ("set reordered", SETP, "return {-k**2*sp.sqrt(kappa/chi), k**2*sp.sqrt(kappa/chi)}", "correct"),
    # sqrt(kappa)/sqrt(chi) != sqrt(kappa/chi) for real (possibly negative) symbols
    ("set branch", SETP, "return {-k**2*sp.sqrt(kappa)/sp.sqrt(chi), k**2*sp.sqrt(kappa/chi)}", "incorrect"),
    ("set as list", SETP, "return [-sp.sqrt(kappa/chi)*k**2, sp.sqrt(kappa/chi)*k**2]", "correct"),
    ("set FiniteSet", SETP, "return sp.FiniteSet(-sp.sqrt(kappa/chi)*k**2, sp.sqrt(kappa/chi)*k**2)", "correct"),
    ("set wrong member", SETP, "return {sp.sqrt(kappa/chi)*k**2, -sp.sqrt(kappa/chi)*k}", "incorrect"),
    ("eq rearranged", EQP, "return sp.Eq(2*x + 1 - y, 0)", "correct"),
    ("eq flipped sides", EQP, "return sp.Eq(2*x + 1, y)", "correct"),
    ("eq wrong", EQP, "return sp.Eq(y, 2*x - 1)", "incorrect"),
    ("latex number", LATEX_NUM, "return 2500", "correct"),
    ("latex number off", LATEX_NUM, "return 2600", "incorrect"),
    ("subscript own symbol", SUBP, "kk = sp.Symbol('k_12')\nreturn sp.exp(sp.I*kk*t)", "correct"),
    ("subscript cos form", SUBP, "return sp.cos(k_12*t) + sp.I*sp.sin(k_12*t)", "correct"),
    ("subscript conj", SUBP, "return sp.exp(-sp.I*k_12*t)", "incorrect"),
]


@pytest.mark.parametrize("name,prob,body,expected", MORE, ids=[c[0] for c in MORE])
def test_agreement_more(name, prob, body, expected):
    from .helpers import fill

    verdict, reason = grade_in_process(prob, fill(prob.answer_template, body))
    assert verdict == expected, f"{name}: {verdict} ({reason})"
