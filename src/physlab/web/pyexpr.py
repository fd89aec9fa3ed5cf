"""A value written as a Python (SymPy) expression -- `(229376*p**5 - 253125)/(128*p**2 + 225)`, as the
lab's results carry them -- as LaTeX, for the dashboard to draw as math.

The text is only parsed (``ast.parse``), never evaluated: numbers, names, + - * / **, unary minus
and calls of a few named functions are written out; anything else (attributes other than a module
prefix, subscripts, keywords, comprehensions, strings) makes it None and the page shows the text as
code. ``sympy.latex`` would need the expression built, which on the trusted side means evaluating
model-written text; this writes what the text says instead.
"""

from __future__ import annotations

import ast

MAX_CHARS = 2000
_MODULES = {"sp", "sympy", "np", "numpy", "math", "mp", "mpmath", "cmath"}
_FUNCTIONS = {"sqrt": None, "exp": None, "log": "\\ln", "ln": "\\ln", "sin": "\\sin", "cos": "\\cos",
              "tan": "\\tan", "sinh": "\\sinh", "cosh": "\\cosh", "tanh": "\\tanh", "asin": "\\arcsin",
              "acos": "\\arccos", "atan": "\\arctan", "Abs": None, "abs": None, "Rational": None}
_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "lamda",
          "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega", "Gamma", "Delta",
          "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega", "hbar", "ell"}
_CONSTANTS = {"pi": "\\pi", "E": "e", "I": "i", "oo": "\\infty", "inf": "\\infty"}
# precedence: higher binds tighter
_SUM, _PRODUCT, _UNARY, _POWER, _ATOM = 1, 2, 3, 4, 5


class _Refused(Exception):
    pass


def python_to_tex(text: str) -> str | None:
    """LaTeX for ``text`` when it is a plain arithmetic expression, else None."""
    text = (text or "").strip()
    if not text or len(text) > MAX_CHARS or not any(op in text for op in ("*", "/", "+", "-", "(")):
        return None
    try:
        tree = ast.parse(text, mode="eval")
        tex, _ = _tex(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _Refused):
        return None
    return tex


def _tex(node: ast.AST) -> tuple[str, int]:
    """(LaTeX, precedence) of one node."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return str(node.value), _ATOM  # (a minus sign is a UnaryOp in Python's tree)
    if isinstance(node, ast.Name):
        return _name(node.id), _ATOM
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _MODULES:
        return _name(node.attr), _ATOM
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _wrapped(node.operand, _UNARY + 1 if isinstance(node.operand, ast.UnaryOp) else _PRODUCT)
        return ("-" if isinstance(node.op, ast.USub) else "+") + inner, _UNARY
    if isinstance(node, ast.BinOp):
        return _binop(node)
    if isinstance(node, ast.Call):
        return _call(node), _ATOM
    raise _Refused(type(node).__name__)


def _wrapped(node: ast.AST, at_least: int) -> str:
    tex, prec = _tex(node)
    return tex if prec >= at_least else f"\\left({tex}\\right)"


def _binop(node: ast.BinOp) -> tuple[str, int]:
    op = node.op
    if isinstance(op, (ast.Add, ast.Sub)):
        left = _wrapped(node.left, _SUM)
        right = _wrapped(node.right, _PRODUCT if isinstance(op, ast.Sub) else _SUM)
        if isinstance(op, ast.Add) and right.startswith("-"):
            return f"{left} {right}", _SUM
        return f"{left} {'+' if isinstance(op, ast.Add) else '-'} {right}", _SUM
    if isinstance(op, ast.Mult):
        left, right = _wrapped(node.left, _PRODUCT), _wrapped(node.right, _POWER)
        dot = " \\cdot " if right[:1].isdigit() or right.startswith("-") else " "
        return f"{left}{dot}{right}", _PRODUCT
    if isinstance(op, ast.Div):
        top, _ = _tex(node.left)
        bottom, _ = _tex(node.right)
        return f"\\frac{{{_bare(top)}}}{{{_bare(bottom)}}}", _ATOM
    if isinstance(op, ast.Pow):
        base = _wrapped(node.left, _ATOM)
        exponent, _ = _tex(node.right)
        return f"{{{base}}}^{{{_bare(exponent)}}}", _POWER
    raise _Refused(type(op).__name__)


def _bare(tex: str) -> str:
    """A fraction's part or an exponent needs no parentheses of its own."""
    if tex.startswith("\\left(") and tex.endswith("\\right)") and tex.count("\\left(") == 1:
        return tex[len("\\left("):-len("\\right)")]
    return tex


def _call(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _MODULES:
        name = func.attr
    elif isinstance(func, ast.Name):
        name = func.id
    else:
        raise _Refused("call")
    if name not in _FUNCTIONS or node.keywords:
        raise _Refused(name)
    args = [_tex(a)[0] for a in node.args]
    if name == "Rational" and len(args) == 2:
        return f"\\frac{{{args[0]}}}{{{args[1]}}}"
    if len(args) != 1:
        raise _Refused(name)
    (arg,) = args
    if name == "sqrt":
        return f"\\sqrt{{{arg}}}"
    if name in ("Abs", "abs"):
        return f"\\left|{arg}\\right|"
    if name == "exp":
        return f"e^{{{arg}}}"
    return f"{_FUNCTIONS[name]}\\left({arg}\\right)"


def _name(name: str) -> str:
    if name in _CONSTANTS:
        return _CONSTANTS[name]
    base, _, sub = name.partition("_")
    head = f"\\{base}" if base in _GREEK else base if len(base) == 1 else f"\\mathrm{{{base}}}"
    if head == "\\lamda":
        head = "\\lambda"
    if not sub:
        return head
    tail = f"\\{sub}" if sub in _GREEK else sub if len(sub) == 1 else f"\\mathrm{{{sub}}}"
    return f"{head}_{{{tail}}}"
