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


# ------------------------------------------------- issue 32: fences are scanned linearly


class _Counting:
    """A compiled pattern that counts the characters each call is given (steps, not seconds)."""

    def __init__(self, pattern):
        self.pattern, self.chars = pattern, 0

    def match(self, s, *a):
        self.chars += len(s)
        return self.pattern.match(s, *a)

    def fullmatch(self, s, *a):
        self.chars += len(s)
        return self.pattern.fullmatch(s, *a)


def test_unclosed_fences_are_read_in_linear_steps(monkeypatch):
    """The attack: 40 KB of unclosed fences (31 s on the event loop with the old regex)."""
    from physlab.grading import extract

    counters = {name: _Counting(getattr(extract, name)) for name in ("_OPEN", "_CLOSE")}
    for name, counter in counters.items():
        monkeypatch.setattr(extract, name, counter)
    for attack in ("```python\n" * 4000, "~~~\n" * 10_000, "````\n```python\n" * 2000, "```" + "\n" * 40_000):
        extract.fenced_blocks(attack)
        extract.extract_code(attack)
        spent = sum(c.chars for c in counters.values())
        # each line is looked at a bounded number of times (here: at most 3 characters per character)
        assert spent <= 3 * 2 * len(attack), (attack[:12], spent, len(attack))
        for c in counters.values():
            c.chars = 0


def test_fence_attacks_end_quickly_everywhere_fences_are_read():
    """The same replies through every reader of fences the host runs (a generous bound: the
    quadratic readers took 20 s to minutes on these; now well under a second)."""
    import concurrent.futures as cf

    from physlab.grading.extract import extract_written
    from physlab.grading.hipho import _json_block
    from physlab.llm.text_tools import _json_object

    attacks = ["```python\n" * 8000, "```json\n{" * 4000, " " * 40_000 + "x", "\\[" * 20_000,
               "<think>" * 6000, "The answer is " * 3000]
    calls = [extract_code, extract_written, _json_object, lambda t: _safe(_json_block, t)]
    with cf.ThreadPoolExecutor(1) as pool:
        for attack in attacks:
            for fn in calls:
                pool.submit(fn, attack).result(timeout=20)


def _safe(fn, text):
    try:
        return fn(text)
    except ValueError:
        return None


def test_fences_read_as_before():
    text = "a\n```python\nx = 1\n```\n~~~\ny\n~~~\n````\nz\n```\nq\n``` \n```py\nopen"
    from physlab.grading.extract import fenced_blocks

    assert fenced_blocks(text) == [("python", "x = 1\n"), ("", "y\n"), ("", "z\n")]
