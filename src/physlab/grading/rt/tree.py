"""The safe answer tree: a JSON description of a SymPy/number/container value.

An answer produced by untrusted code crosses into trusted code ONLY as this tree. Serialization
accepts exact built-in types and whitelisted SymPy classes (checked by ``type(x) is cls``, never
``isinstance``, so a subclass with a hostile ``__eq__``/``__repr__`` is refused); deserialization
rebuilds objects from the whitelist by name and never evaluates strings.

Nodes (``t`` = tag):
  int {v: "123"} | rat {p, q} | float {v: "1.25", prec} | complex {re, im} | bool {v} | str {v}
  | none | ellipsis | const {v: "pi"} | sym {name, assumptions} | fn {f: "Add", a: [...]}
  | ufn {name, a} | tuple/list/set {a} | dict {items: [[k, v], ...]} | matrix {rows, cols, a}

``validate`` is the one definition of a well-formed tree, and every path goes through it: the host
checks a stage-1 result with it, ``from_tree`` refuses what it refuses, ``to_tree`` never makes what
it refuses. Every field has its type (numbers are digit strings, names are strings, assumptions
known keys with booleans); inside an expression (the arguments of ``fn``/``ufn``, the entries of a
matrix) only numbers, constants, symbols, booleans, functions and sets may appear -- never a string,
None, ``...`` or a Python container, because SymPy's constructors sympify their arguments
non-strictly, and a string sympified is Python evaluated.
"""

import re
import sys

MAX_NODES = 200_000
MAX_DEPTH = 300
MAX_STR = 10_000
MAX_INT_DIGITS = 4_000

# SymPy classes an answer may be built from (rebuilt by name from the sympy namespace).
FUNCTIONS = frozenset("""
Add Mul Pow exp log sin cos tan cot sec csc asin acos atan atan2 acot asec acsc sinh cosh tanh coth
sech csch asinh acosh atanh acoth asech acsch Abs sign re im arg conjugate floor ceiling frac Mod
factorial factorial2 binomial gamma loggamma lowergamma uppergamma polygamma digamma trigamma beta
zeta dirichlet_eta polylog lerchphi erf erfc erfi erfinv erfcinv expint Ei E1 Si Ci Shi Chi li Li
fresnels fresnelc besselj bessely besseli besselk hankel1 hankel2 jn yn airyai airybi airyaiprime
airybiprime elliptic_k elliptic_e elliptic_f elliptic_pi hyper LambertW Heaviside DiracDelta
KroneckerDelta LeviCivita Max Min Piecewise ExprCondPair Equality Unequality StrictLessThan
LessThan StrictGreaterThan GreaterThan And Or Not Xor Implies Derivative Integral Sum Product Limit
Tuple Interval Union Intersection Complement FiniteSet legendre assoc_legendre hermite laguerre
assoc_laguerre chebyshevt chebyshevu gegenbauer jacobi Ynm Znm RisingFactorial FallingFactorial
catalan fibonacci harmonic bernoulli euler cbrt root sqrt Order Subs
""".split())
CONSTANTS = {
    "Pi": "pi", "Exp1": "E", "ImaginaryUnit": "I", "Infinity": "oo", "NegativeInfinity": "-oo",
    "ComplexInfinity": "zoo", "NaN": "nan", "EulerGamma": "EulerGamma", "Catalan": "Catalan",
    "GoldenRatio": "GoldenRatio", "TribonacciConstant": "TribonacciConstant",
    "EmptySet": "EmptySet", "Reals": "Reals", "Complexes": "Complexes", "Integers": "Integers",
    "Naturals": "Naturals", "Naturals0": "Naturals0",
}
_CONST_BUILD = {v: k for k, v in CONSTANTS.items()}
NUMPY_SCALARS = frozenset("""float16 float32 float64 float128 longdouble int8 int16 int32 int64 uint8
uint16 uint32 uint64 intc intp complex64 complex128 complex256 clongdouble bool_ bool""".split())


def resolve(sp, name):
    """The SymPy class/function for a whitelisted name (None if this SymPy lacks it)."""
    if name == "ExprCondPair":
        from sympy.functions.elementary.piecewise import ExprCondPair
        return ExprCondPair
    return getattr(sp, name, None)


class TreeError(Exception):
    """The value cannot be turned into (or rebuilt from) a safe tree. The message says why."""


# ---------------------------------------------------------------------------------- serialize


def to_tree(value, sympy_module=None):
    """Serialize ``value`` (candidate output) to a JSON-able tree. Raises TreeError, also for what
    ``validate`` would refuse (a SymPy object made to hold a Python string, say)."""
    tree = _Serializer(sympy_module or _sympy()).walk(value, 0)
    problem = validate(tree)
    if problem:
        raise TreeError(problem)
    return tree


class _Serializer:
    """One serialization: the SymPy classes the grader accepts (by exact class), and the nodes
    counted so far (a tree past MAX_NODES, or deeper than MAX_DEPTH, is refused)."""

    def __init__(self, sp):
        from sympy.core.function import AppliedUndef

        self.sp, self.count, self.applied_undef = sp, 0, AppliedUndef
        whitelist = {name: resolve(sp, name) for name in FUNCTIONS}
        self.by_class = {cls: name for name, cls in whitelist.items() if isinstance(cls, type)}
        self.consts = {getattr(sp.S, name).__class__: tag for name, tag in CONSTANTS.items()
                       if hasattr(sp.S, name)}

    def walk(self, x, depth):
        # Two stack frames a level (this and its comprehension), as the depth limit counts on.
        self.count += 1
        if self.count > MAX_NODES:
            raise TreeError(f"answer is too large (more than {MAX_NODES} nodes)")
        if depth > MAX_DEPTH:
            raise TreeError(f"answer is nested too deeply (more than {MAX_DEPTH} levels)")
        t = type(x)
        node = _plain(x, t)
        if node is not None:
            return node
        if t is dict:
            return {"t": "dict", "items": [[self.walk(k, depth + 1), self.walk(v, depth + 1)] for k, v in x.items()]}
        if t in (tuple, list, set, frozenset):
            return {"t": "set" if t in (set, frozenset) else t.__name__, "a": [self.walk(e, depth + 1) for e in x]}
        mod = getattr(t, "__module__", "") or ""
        if mod == "numpy" or mod.startswith("numpy."):
            return self.walk(_from_numpy(x, t), depth)
        if mod.startswith("mpmath") and (node := _mpmath(x, t, self.sp)) is not None:
            return node
        if isinstance(x, self.applied_undef) and type(t).__name__ == "UndefinedFunction":
            return {"t": "ufn", "name": str(t.__name__)[:200], "a": [self.walk(e, depth + 1) for e in x.args]}
        if not mod.startswith("sympy"):
            raise TreeError(f"answer contains an object of type {t.__name__!r}, which is not a SymPy, "
                            "number or container value")
        node = self._sympy_atom(x, t)
        if node is not None:
            return node
        node, parts = self._sympy_compound(x, t, depth)
        return {**node, "a": [self.walk(e, depth + 1) for e in parts]}

    def _sympy_atom(self, x, t):
        """A SymPy number, truth value, constant or symbol, by exact class (None: none of them)."""
        sp = self.sp
        if t is sp.Integer or t in (sp.core.numbers.Zero, sp.core.numbers.One, sp.core.numbers.NegativeOne):
            return {"t": "int", "v": _int_str(int(x.p))}
        if t is sp.Rational or t is sp.core.numbers.Half:
            return {"t": "rat", "p": _int_str(int(x.p)), "q": _int_str(int(x.q))}
        if t is sp.Float:
            return {"t": "float", "v": _mpf_str(x._mpf_, sp), "prec": int(x._prec)}
        if t in (sp.logic.boolalg.BooleanTrue, sp.logic.boolalg.BooleanFalse):
            return {"t": "bool", "v": bool(x)}
        if t in self.consts:
            return {"t": "const", "v": self.consts[t]}
        if t is sp.Symbol or t is sp.Dummy:
            name = str(x.name)
            if len(name) > 200:
                raise TreeError("answer contains a symbol name longer than 200 characters")
            return {"t": "sym", "name": name, "assumptions": _assumptions(x)}
        return None

    def _sympy_compound(self, x, t, depth):
        """A SymPy matrix, set, top-level tuple, or a function the grader accepts, by exact class:
        its node, and the parts its ``a`` holds (walked by the caller)."""
        sp = self.sp
        if t in (sp.ImmutableMatrix, sp.MutableDenseMatrix, sp.ImmutableDenseMatrix,
                 sp.MutableSparseMatrix, sp.ImmutableSparseMatrix):
            rows, cols = x.shape
            return {"t": "matrix", "rows": int(rows), "cols": int(cols)}, list(x)
        if t is sp.FiniteSet:
            return {"t": "set"}, x.args
        if t is sp.Tuple and depth == 0:
            return {"t": "tuple"}, x.args
        name = self.by_class.get(t)
        if name is None:
            raise TreeError(f"answer contains the SymPy object {t.__name__!r}, which the grader "
                            "does not accept")
        return {"t": "fn", "f": name}, x.args


def _plain(x, t):
    """A Python value's node (None, Ellipsis, a bool, a number, a string); None: not one of them."""
    if x is None:
        return {"t": "none"}
    if x is Ellipsis:
        return {"t": "ellipsis"}
    if t is bool:
        return {"t": "bool", "v": x}
    if t is int:
        return {"t": "int", "v": _int_str(x)}
    if t is float:
        return {"t": "float", "v": repr(x), "prec": 53}
    if t is complex:
        return {"t": "complex", "re": repr(x.real), "im": repr(x.imag)}
    if t is str:
        if len(x) > MAX_STR:
            raise TreeError(f"answer contains a string longer than {MAX_STR} characters")
        return {"t": "str", "v": x}
    return None


def _mpmath(x, t, sp):
    """An mpmath number's node (None: another mpmath object)."""
    if t.__name__ == "mpf":
        return {"t": "float", "v": _mpf_str(x._mpf_, sp), "prec": int(x.context.prec)}
    if t.__name__ == "mpc":
        return {"t": "complex", "re": _mpf_str(x.real._mpf_, sp), "im": _mpf_str(x.imag._mpf_, sp)}
    return None


def _int_str(n):
    s = str(n)  # raises ValueError past sys.int_info.default_max_str_digits
    if len(s) > MAX_INT_DIGITS:
        raise TreeError(f"answer contains an integer with more than {MAX_INT_DIGITS} digits")
    return s


def _mpf_str(mpf, sp):
    import mpmath.libmp as libmp
    return libmp.to_str(mpf, 40)


def _assumptions(sym):
    try:
        a = sym.assumptions0
    except Exception:  # noqa: BLE001
        return {}
    return {str(k): bool(v) for k, v in a.items() if isinstance(v, bool) and k in _ASSUMPTION_KEYS}


_ASSUMPTION_KEYS = frozenset("""commutative complex real rational integer positive negative
nonnegative nonpositive nonzero zero even odd prime finite infinite imaginary extended_real
""".split())


def _from_numpy(x, t):
    name = t.__name__
    if name == "ndarray":
        if x.dtype.kind not in "biufc":
            raise TreeError(f"answer contains a numpy array of dtype {x.dtype}")
        return x.tolist()
    if name in NUMPY_SCALARS:
        kind = getattr(getattr(x, "dtype", None), "kind", "")
        if kind == "b":
            return bool(x)
        if kind in "iu":
            return int(x)
        if kind == "f":
            return float(x)
        if kind == "c":
            return complex(x)
    raise TreeError(f"answer contains a numpy object of type {name!r}")


def contains_ellipsis(tree):
    """True when an unfilled template placeholder (``...``) is anywhere in the tree."""
    stack = [tree]
    while stack:
        n = stack.pop()
        if not isinstance(n, dict):
            continue
        if n.get("t") == "ellipsis":
            return True
        stack.extend(n.get("a") or [])
        for kv in n.get("items") or []:
            stack.extend(kv)
    return False


_INT = re.compile(rf"-?[0-9]{{1,{MAX_INT_DIGITS}}}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,12})?|[+-]?inf|nan")
# functions whose arguments the trusted stage reads by position: their number is part of the shape
ARITY = {"Pow": (2, 2), "ExprCondPair": (2, 2), "Not": (1, 1), "Interval": (2, 4), "Equality": (2, 2),
         "Unequality": (2, 2), "StrictLessThan": (2, 2), "LessThan": (2, 2), "StrictGreaterThan": (2, 2),
         "GreaterThan": (2, 2)}
_EXPR_LEAVES = frozenset(("int", "rat", "float", "complex", "bool", "const", "sym"))
_VALUE_LEAVES = _EXPR_LEAVES | {"str", "none", "ellipsis"}
_INSIDE = {"str": "a string", "none": "None", "ellipsis": "...", "tuple": "a tuple", "list": "a list",
           "dict": "a dict", "matrix": "a matrix"}


def _node_problem(n, in_expr):
    """Why node ``n`` (its own fields, not its children) is not well formed; None when it is."""
    if not isinstance(n, dict) or type(n.get("t")) is not str:
        return "malformed answer tree"
    t = n["t"]
    if in_expr and t in _INSIDE:
        return (f"the answer has {_INSIDE[t]} inside an expression (a function's argument or a matrix "
                "entry holds numbers, symbols and functions only)")
    if t == "int":
        return None if _is_int(n.get("v")) else "malformed integer in the answer"
    if t == "rat":
        ok = _is_int(n.get("p")) and _is_int(n.get("q")) and n["q"].lstrip("-0") != ""
        return None if ok else "malformed rational in the answer"
    if t == "float":
        prec = n.get("prec", 53)
        ok = _is_float(n.get("v")) and type(prec) is int and 2 <= prec <= 4000
        return None if ok else "malformed float in the answer"
    if t == "complex":
        return None if _is_float(n.get("re")) and _is_float(n.get("im")) else "malformed complex number in the answer"
    if t == "bool":
        return None if type(n.get("v")) is bool else "malformed boolean in the answer"
    if t == "str":
        v = n.get("v")
        if type(v) is not str:
            return "malformed string in the answer"
        return None if len(v) <= MAX_STR else f"the answer contains a string longer than {MAX_STR} characters"
    if t in ("none", "ellipsis"):
        return None
    if t == "const":
        v = n.get("v")
        return None if type(v) is str and v in _CONST_BUILD else "unknown constant in the answer"
    if t == "sym":
        name, ass = n.get("name"), n.get("assumptions", {})
        if type(name) is not str or not 0 < len(name) <= 200:
            return "malformed symbol name in the answer"
        if type(ass) is not dict or not all(k in _ASSUMPTION_KEYS and type(v) is bool for k, v in ass.items()):
            return "malformed symbol assumptions in the answer"
        return None
    if t in ("fn", "ufn", "tuple", "list", "set", "matrix"):
        a = n.get("a")
        if type(a) is not list:
            return "malformed answer tree"
        if t == "fn":
            f = n.get("f")
            if type(f) is not str or f not in FUNCTIONS:
                return f"answer uses {str(f)[:40]!r}, which the grader does not accept"
            lo, hi = ARITY.get(f, (0, None))
            if len(a) < lo or (hi is not None and len(a) > hi):
                return f"malformed {f} in the answer ({len(a)} arguments)"
        if t == "ufn" and (type(n.get("name")) is not str or not 0 < len(n["name"]) <= 200):
            return "malformed function name in the answer"
        if t == "matrix":
            rows, cols = n.get("rows"), n.get("cols")
            if type(rows) is not int or type(cols) is not int or rows < 0 or cols < 0 or rows * cols != len(a):
                return "malformed matrix in the answer"
        return None
    if t == "dict":
        items = n.get("items")
        if type(items) is not list or not all(type(kv) is list and len(kv) == 2 for kv in items):
            return "malformed answer tree"
        return None
    return f"malformed answer tree (unknown node {t[:20]!r})"


def _is_int(s):
    return type(s) is str and _INT.fullmatch(s) is not None


def _is_float(s):
    return type(s) is str and len(s) <= 200 and _FLOAT.fullmatch(s.strip().lower()) is not None


def validate(tree, budget=None):
    """Check an untrusted tree without SymPy (iterative: no recursion on hostile input): every
    node's fields by type, the whitelist, the limits, and no string/None/container inside an
    expression. Returns None when fine, else a one-line reason. ``budget``: a one-item list of
    nodes still allowed (shared by several trees of one answer)."""
    budget = budget if budget is not None else [MAX_NODES]
    stack = [(tree, 0, False)]
    while stack:
        n, depth, in_expr = stack.pop()
        budget[0] -= 1
        if budget[0] < 0:
            return f"answer is too large (more than {MAX_NODES} nodes)"
        if depth > MAX_DEPTH + 2:
            return "answer is nested too deeply"
        problem = _node_problem(n, in_expr)
        if problem:
            return problem
        t = n["t"]
        if t in ("fn", "ufn", "matrix"):
            stack.extend((e, depth + 1, True) for e in n["a"])
        elif t in ("tuple", "list", "set"):
            stack.extend((e, depth + 1, in_expr) for e in n["a"])  # a set inside an expression is a FiniteSet
        elif t == "dict":
            for k, v in n["items"]:
                stack.append((k, depth + 1, False))
                stack.append((v, depth + 1, False))
    return None


# -------------------------------------------------------------------------------- deserialize


def from_tree(tree, sympy_module=None, *, symbol=None, sympy_containers=False):
    """Rebuild a value from a tree. ``symbol(name, assumptions)`` makes symbols (default: plain
    ``Symbol(name, **assumptions)``). Containers come back as Python tuple/list/dict/set and
    matrices as ``ImmutableMatrix``; a set inside an expression is a ``FiniteSet``. Raises
    TreeError on anything ``validate`` refuses; every constructor gets SymPy objects only."""
    problem = validate(tree)
    if problem:
        raise TreeError(problem)
    sp = sympy_module or _sympy()
    make_symbol = symbol or (lambda name, assumptions: sp.Symbol(name, **assumptions))

    def expr_args(n, depth):
        args = [build(e, depth + 1, True) for e in n["a"]]
        if not all(isinstance(x, sp.Basic) for x in args):  # validate keeps them out; never sympify
            raise TreeError("the answer has a non-SymPy value inside an expression")
        return args

    def build(n, depth, in_expr=False):
        t = n["t"]
        if t == "int":
            return sp.Integer(int(n["v"]))
        if t == "rat":
            return sp.Rational(int(n["p"]), int(n["q"]))
        if t == "float":
            return sp.Float(_float_literal(n["v"]), precision=n.get("prec", 53))
        if t == "complex":
            return sp.Float(_float_literal(n["re"])) + sp.I * sp.Float(_float_literal(n["im"]))
        if t == "bool":
            return sp.true if n["v"] else sp.false
        if t == "str":
            return n["v"]
        if t == "none":
            return None
        if t == "ellipsis":
            return Ellipsis
        if t == "const":
            return getattr(sp.S, _CONST_BUILD[n["v"]])
        if t == "sym":
            return make_symbol(n["name"], dict(n.get("assumptions") or {}))
        if t == "fn":
            cls = resolve(sp, n["f"])
            if cls is None:
                raise TreeError(f"answer uses {n['f']!r}, which this SymPy does not have")
            return cls(*expr_args(n, depth))
        if t == "ufn":
            return sp.Function(n["name"])(*expr_args(n, depth))
        if t in ("tuple", "list", "set"):
            items = [build(e, depth + 1, in_expr) for e in n["a"]]
            if t == "set":
                return sp.FiniteSet(*items) if sympy_containers or in_expr else frozenset_or_list(items)
            return tuple(items) if t == "tuple" else items
        if t == "dict":
            return {_hashable(build(k, depth + 1)): build(v, depth + 1) for k, v in n["items"]}
        if t == "matrix":
            return sp.ImmutableMatrix(n["rows"], n["cols"], expr_args(n, depth))
        raise TreeError("malformed answer tree")

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * MAX_DEPTH))
    try:
        return build(tree, 0)
    except TreeError:
        raise
    except RecursionError:
        raise TreeError("answer is nested too deeply") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise TreeError(f"the answer could not be rebuilt ({type(exc).__name__})") from None
    finally:
        sys.setrecursionlimit(old)


class frozenset_or_list(list):
    """A set from a tree, kept as a list (elements may be unhashable) but marked unordered."""


def _hashable(x):
    try:
        hash(x)
        return x
    except TypeError:
        return str(x)


def _float_literal(s):
    if not _is_float(s):
        raise TreeError("malformed float in answer tree")
    low = s.strip().lower()
    return {"+inf": "inf"}.get(low, low) if low in ("nan", "inf", "-inf", "+inf") else s.strip()


def _sympy():
    import sympy
    return sympy


def node_label(tree):
    """A short human description of a tree's top-level kind (for reasons)."""
    t = tree.get("t") if isinstance(tree, dict) else None
    return {"tuple": "a tuple", "list": "a list", "set": "a set", "dict": "a dict",
            "matrix": "a matrix", "str": "a string", "none": "None", "bool": "a boolean"}.get(t or "", "an expression")


def show(tree, limit=300):
    """A readable one-line rendering of a tree (``a*b**2/2 + sin(x)``) without rebuilding it: safe
    and cheap on any validated tree, for saying what was compared."""
    size = [0]

    def prec(n):
        if n.get("t") == "fn":
            return {"Add": 1, "Mul": 2, "Pow": 3}.get(n.get("f"), 4)
        if n.get("t") in ("int", "float") and str(n.get("v", "")).startswith("-"):
            return 1
        if n.get("t") == "rat":
            return 2
        return 4

    def wrap(n, level):
        text = walk(n)
        return f"({text})" if prec(n) < level else text

    def walk(n):
        size[0] += 1
        if size[0] > 2000:
            return "..."
        t = n.get("t")
        if t in ("int", "float"):
            return str(n.get("v"))
        if t == "rat":
            return f"{n['p']}/{n['q']}"
        if t == "complex":
            return f"({n['re']} + {n['im']}*I)"
        if t == "const":
            return str(n.get("v"))
        if t == "sym":
            return str(n.get("name"))
        if t in ("bool", "none", "ellipsis"):
            return {"bool": str(n.get("v")), "none": "None", "ellipsis": "..."}[t]
        if t == "str":
            return repr(n.get("v"))
        if t in ("tuple", "list"):
            return "(" + ", ".join(walk(e) for e in n["a"]) + ")"
        if t == "set":
            return "{" + ", ".join(walk(e) for e in n["a"]) + "}"
        if t == "dict":
            return "{" + ", ".join(f"{walk(k)}: {walk(v)}" for k, v in n["items"]) + "}"
        if t == "matrix":
            c = n["cols"] or 1
            rows = [n["a"][i:i + c] for i in range(0, len(n["a"]), c)]
            return "Matrix([" + ", ".join("[" + ", ".join(walk(e) for e in r) + "]" for r in rows) + "])"
        f, a = n.get("f") or n.get("name"), n.get("a") or []
        if f == "Add":
            text = " + ".join(wrap(e, 1) for e in a)
            return text.replace("+ -", "- ")
        if f == "Mul":
            num = [e for e in a if not _is_inverse(e)]
            den = [e["a"][0] if e["a"][1] == {"t": "int", "v": "-1"} else dict(e, a=[e["a"][0], _neg(e["a"][1])])
                   for e in a if _is_inverse(e)]
            sign = ""
            if num and num[0].get("t") in ("int", "float") and str(num[0].get("v", "")).startswith("-"):
                sign, num = "-", ([dict(num[0], v=str(num[0]["v"])[1:])] if str(num[0]["v"]) != "-1" else []) + num[1:]
            top = sign + ("*".join(wrap(e, 2) for e in num) or "1")
            if not den:
                return top
            bottom = "*".join(wrap(e, 3) for e in den)
            return f"{top}/({bottom})" if len(den) > 1 else f"{top}/{bottom}"
        if f == "Pow":
            return f"{wrap(a[0], 4)}**{wrap(a[1], 4)}"
        rel = {"Equality": "=", "Unequality": "!=", "StrictLessThan": "<", "LessThan": "<=",
               "StrictGreaterThan": ">", "GreaterThan": ">="}.get(f)
        if rel and len(a) == 2:
            return f"{walk(a[0])} {rel} {walk(a[1])}"
        return f"{f}(" + ", ".join(walk(e) for e in a) + ")"

    text = walk(tree) if isinstance(tree, dict) else str(tree)
    return text if len(text) <= limit else text[:limit] + "..."


def _is_inverse(n):
    return (n.get("t") == "fn" and n.get("f") == "Pow" and len(n.get("a") or []) == 2
            and n["a"][1].get("t") == "int" and str(n["a"][1].get("v", "")).startswith("-"))


def _neg(n):
    return dict(n, v=str(n["v"])[1:])
