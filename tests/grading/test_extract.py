"""Answer extraction from model output and template reading (no code runs)."""

from __future__ import annotations

from physlab.grading import extract_code, extract_final_answer, fill_template, template_spec

TEMPLATE = '''import sympy as sp

N, l = sp.symbols('N l', positive=True, integer=True)
p = sp.symbols('p', real=True)
k_12 = sp.symbols('k_{12}')
lambda_ = sp.Symbol('lambda')

def answer(N, p, l, k_12, lambda_, hbar):
    S0 = ...  # a SymPy expression of inputs
    S1 = ...
    return S0, S1
'''


def test_extract_last_python_block():
    text = "a\n```python\nx = 1\n```\nb\n```py\ndef answer():\n    return 2\n```\nthe end"
    assert extract_code(text).startswith("def answer")
    assert extract_code("```\ndef answer():\n    return 1\n```") == "def answer():\n    return 1\n"
    assert extract_code("```json\n{}\n```") is None


def test_extract_plain_python_and_none():
    src = "import sympy as sp\ndef answer(p):\n    return p\n"
    assert extract_code(src) == src
    assert extract_code("The answer is 42.") is None
    assert extract_code("") is None
    broken = "def answer(p):\n    return (p +\n"
    assert extract_code(broken) == broken  # the grader reports the syntax error


def test_extract_final_answer():
    assert extract_final_answer("work\nFinal Answer: $x^2$\n") == "x^2"
    assert extract_final_answer(r"so \boxed{\frac{1}{2}} and \boxed{\sqrt{\frac{a}{b}}}") == r"\sqrt{\frac{a}{b}}"
    assert extract_final_answer(r"Final answer: \boxed{E = mc^{2}} done") == "E = mc^{2}"
    assert extract_final_answer("nothing here") is None


def test_fill_template():
    out = fill_template(TEMPLATE, {"S0": "N*p", "S1": "l"})
    assert "    S0 = N*p\n" in out and "    S1 = l\n" in out and "..." not in out
    assert "S1 = ..." in fill_template(TEMPLATE, {"S0": "1"})


def test_template_spec_reads_symbols_and_assumptions():
    spec = template_spec(TEMPLATE)
    assert spec.function == "answer"
    params = {p: (d, a) for p, d, a in spec.params}
    assert params["N"] == ("N", {"positive": True, "integer": True})
    assert params["p"] == ("p", {"real": True})
    assert params["k_12"] == ("k_{12}", {})
    assert params["lambda_"] == ("lambda", {})
    assert params["hbar"] == ("hbar", {})  # undeclared: a plain symbol
    table = spec.symbols_json()  # keyed by the matching name: no braces, backslashes, underscores
    assert table["k12"] == ["k_{12}", {}] and table["lambda"] == ["lambda", {}]
    assert template_spec(None).params is None
    assert template_spec("def broken(:").params is None
