"""Equivalence of two answer trees (runs in the trusted stage-2 sandbox process).

Containers are compared element-wise (sequences by position, dicts by key, sets by matching,
matrices by shape). Each pair of scalar leaves goes through steps, each in a forked child with a
hard timeout (``guard``):

1. ``exact``   -- rebuild both, ``a - b == 0`` after ``expand`` (exact numbers decide here);
2. ``cancel``  -- ``cancel(together(a - b)) == 0`` (rational functions);
3. ``numeric`` -- evaluate both with mpmath at several random points drawn from the domain the
   symbols' assumptions allow, over four decades (``draw_value``); equal within a relative
   tolerance at every point -> equal, clearly different at a point -> not equal, nothing
   evaluable -> unknown (a value evalf reports as zero within its accuracy, ``0.e-172``, counts
   as an exact 0: an identically-zero expression written unsimplified equals ``0``). When either
   side holds a function whose values at a few points say nothing about the others (``BRANCHY``:
   Abs, sign, floor, Heaviside, Piecewise, Max, ..., or an even power under a fractional one,
   ``sqrt(x**2)``), agreement at the points is not enough: only algebra makes them equal;
4. ``simplify`` -- only when numeric could not decide (``simplify(a - b) == 0``; with a BRANCHY
   function also after rewriting it as a Piecewise).

Symbols are matched BY NAME (after dropping braces, backslashes and underscores: ``k_{12}`` ==
``k_12`` == ``k12``, ``H_0`` == ``H0``), so a
candidate that builds its own ``Symbol('p')`` without assumptions still compares with the
template's ``p``; the canonical symbol carries the template's assumptions.

Tolerances (relative, never absolute -- 2**-99 and 2**-98 differ) follow the one precision
policy of ``precision.py``: the problem's ``rtol``; a short decimal reference at its stated
precision; a candidate's number at the precision it states (not for CritPt's problems); else
``DEFAULT_RTOL`` (1e-8) when either side holds a float and ``EXACT_RTOL`` at ``DPS`` digits when
both are exact.
"""

import json
import math
import random
from typing import Any

from . import precision, tree as T
from .guard import StepFailed, StepTimeout, run_guarded, run_steps

DEFAULT_RTOL = precision.DEFAULT_RTOL
EXACT_RTOL = precision.EXACT_RTOL
DPS = 40
N_POINTS = 6
MAX_TRIES = 40

RELATIONS = {"Equality", "Unequality", "StrictLessThan", "LessThan", "StrictGreaterThan", "GreaterThan"}
FLIP = {"StrictLessThan": "StrictGreaterThan", "LessThan": "GreaterThan",
        "StrictGreaterThan": "StrictLessThan", "GreaterThan": "LessThan"}


def shown_name(name):
    """A symbol's name without LaTeX braces and backslashes (``k_{12}`` -> ``k_12``)."""
    return str(name).replace("{", "").replace("}", "").replace("\\", "").replace(" ", "")


def norm_name(name):
    """The key symbols are matched by: also without underscores, so the template's ``H0`` is the
    LaTeX reference's ``H_0`` and ``omega0`` is ``\\omega_0``."""
    return shown_name(name).replace("_", "")


class Options:
    """What a comparison needs besides the two trees (all JSON-able, built by the host)."""

    def __init__(self, symbols=None, rtol=None, step_timeout=5.0, literals=None, seed=0,
                 n_points=N_POINTS, precision_also=False, precision="stated"):
        # normalized name -> [declared name, assumptions]
        self.symbols = symbols or {}
        self.rtol = rtol
        self.step_timeout = step_timeout
        self.literals = literals or {}  # float value (repr) -> significant digits
        self.seed = seed
        self.n_points = n_points
        # HiPhO: a short decimal reference is matched to its stated precision even when a
        # relative tolerance is given (whichever is looser), as its markers do.
        self.precision_also = precision_also
        # "stated": a candidate's number is judged at the precision it states; "critpt": CritPt's
        # rule (no slack for a short number); see rt/precision.py
        self.precision = precision


# ------------------------------------------------------------------------------ containers


def _kind(n):
    t = n.get("t")
    if t in ("tuple", "list") or (t == "fn" and n.get("f") == "Tuple"):
        return "seq"
    if t == "set" or (t == "fn" and n.get("f") == "FiniteSet"):
        return "set"
    if t in ("dict", "matrix"):
        return t
    if t == "fn" and n.get("f") in ("Interval", "Union"):
        return "interval"
    return "leaf"


def _matrix_rows(n):
    r, c, a = n["rows"], n["cols"], n["a"]
    return [a[i * c:(i + 1) * c] for i in range(r)]


def _key_label(k):
    t = k.get("t")
    if t == "str":
        return k["v"].strip()
    if t == "sym":
        return norm_name(k["name"])
    if t == "int":
        return k["v"]
    return json.dumps(k, sort_keys=True)


class Result:
    def __init__(self, equal, reason="", method=""):
        self.equal, self.reason, self.method = equal, reason, method


def compare(cand, ref, opts, path="answer"):
    """Result(equal: bool | None, reason, method). None = could not be decided."""
    kc, kr = _kind(cand), _kind(ref)
    if kr == "seq" and kc == "matrix" and 1 in (cand["rows"], cand["cols"]):
        cand, kc = {"t": "list", "a": cand["a"]}, "seq"
    if kc == "seq" and kr == "matrix" and 1 in (ref["rows"], ref["cols"]):
        ref, kr = {"t": "list", "a": ref["a"]}, "seq"
    if kc == "matrix" and kr == "seq":
        cand, kc = {"t": "list", "a": [{"t": "list", "a": row} for row in _matrix_rows(cand)]}, "seq"
    if kr == "matrix" and kc == "seq":
        ref, kr = {"t": "list", "a": [{"t": "list", "a": row} for row in _matrix_rows(ref)]}, "seq"
    # a one-element container against a scalar: compare the element
    if kr == "leaf" and kc in ("seq", "set") and len(cand["a"]) == 1:
        return compare(cand["a"][0], ref, opts, path)
    if kc == "leaf" and kr in ("seq", "set") and len(ref["a"]) == 1:
        return compare(cand, ref["a"][0], opts, path)
    if kr == "set" and kc == "seq":
        kc = "set"
    if kr == "seq" and kc == "set":
        kr = "set"
    if kc != kr:
        return Result(False, f"{path}: expected {_describe(ref)}, got {_describe(cand)}", "structure")
    if kr == "seq":
        if len(cand["a"]) != len(ref["a"]):
            return Result(False, f"{path}: expected {len(ref['a'])} values, got {len(cand['a'])}", "structure")
        return _all(zip(cand["a"], ref["a"]), opts, [f"{path}[{i}]" for i in range(len(ref["a"]))])
    if kr == "matrix":
        if (cand["rows"], cand["cols"]) != (ref["rows"], ref["cols"]):
            return Result(False, f"{path}: expected a {ref['rows']}x{ref['cols']} matrix, got "
                                 f"{cand['rows']}x{cand['cols']}", "structure")
        n = len(ref["a"])
        return _all(zip(cand["a"], ref["a"]), opts, [f"{path}[{i // ref['cols']},{i % ref['cols']}]" for i in range(n)])
    if kr == "dict":
        cmap = {_key_label(k): v for k, v in cand["items"]}
        rmap = {_key_label(k): v for k, v in ref["items"]}
        if set(cmap) != set(rmap):
            missing = sorted(set(rmap) - set(cmap))
            extra = sorted(set(cmap) - set(rmap))
            bits = ([f"missing keys {missing}"] if missing else []) + ([f"unexpected keys {extra}"] if extra else [])
            return Result(False, f"{path}: " + "; ".join(bits), "structure")
        keys = sorted(rmap)
        return _all(((cmap[k], rmap[k]) for k in keys), opts, [f"{path}[{k!r}]" for k in keys])
    if kr == "set":
        return _sets(cand["a"], ref["a"], opts, path)
    if kr == "interval":
        return _intervals(cand, ref, opts, path)
    return compare_leaf(cand, ref, opts, path)


def _describe(n):
    k = _kind(n)
    if k == "seq":
        return f"{len(n['a'])} values"
    if k == "set":
        return f"a set of {len(n['a'])}"
    if k == "matrix":
        return f"a {n['rows']}x{n['cols']} matrix"
    if k == "interval":
        return "an interval"
    return T.node_label(n)


def _all(pairs, opts, paths):
    undecided = None
    for (c, r), p in zip(pairs, paths):
        res = compare(c, r, opts, p)
        if res.equal is False:
            return res
        if res.equal is None and undecided is None:
            undecided = res
    return undecided or Result(True, "all elements equivalent", "element-wise")


def _sets(cs, rs, opts, path):
    if len(cs) != len(rs):
        return Result(False, f"{path}: expected a set of {len(rs)} values, got {len(cs)}", "structure")
    used = set()
    for i, r in enumerate(rs):
        for j, c in enumerate(cs):
            if j in used:
                continue
            if compare(c, r, opts, f"{path}{{{i}}}").equal:
                used.add(j)
                break
        else:
            return Result(False, f"{path}: an element of the set has no equivalent", "set")
    return Result(True, "sets equivalent", "set")


def _pieces(n):
    """The pieces of a union, nested unions flattened (``A \\cup B \\cup C`` parses as nested pairs)."""
    if n.get("f") != "Union":
        return [n]
    return [p for a in n["a"] for p in _pieces(a)]


def _open_ends(n):
    """(left open, right open) of an Interval node, its omitted flags being closed ends."""
    flags = [a.get("v") is True for a in n["a"][2:4]]
    return tuple(flags + [False] * (2 - len(flags)))


def _intervals(cand, ref, opts, path):
    """Intervals and unions of intervals: the same pieces, ends equivalent, same open/closed ends."""
    cs, rs = _pieces(cand), _pieces(ref)
    if len(cs) != len(rs):
        return Result(False, f"{path}: expected {len(rs)} interval(s), got {len(cs)}", "interval")
    used = set()
    for r in rs:
        for j, c in enumerate(cs):
            if j in used or (c.get("f") == "Interval") != (r.get("f") == "Interval"):
                continue
            if r.get("f") != "Interval":  # a set of points beside the intervals ({-1} \cup [0, 7))
                if compare(c, r, opts, path).equal:
                    used.add(j)
                    break
                continue
            if _open_ends(c) != _open_ends(r):
                continue
            if all(compare_leaf(x, y, opts, path).equal for x, y in zip(c["a"][:2], r["a"][:2])):
                used.add(j)
                break
        else:
            return Result(False, f"{path}: the intervals differ (an end or whether it is open)", "interval")
    return Result(True, f"{path}: the same interval{'s' if len(rs) > 1 else ''}", "interval")


# ---------------------------------------------------------------------------------- leaves


def _has_float(n):
    stack = [n]
    while stack:
        x = stack.pop()
        if x.get("t") in ("float", "complex"):
            return True
        stack.extend(x.get("a") or [])
    return False


def _exact_number(n):
    t = n.get("t")
    if t == "int":
        return int(n["v"]), 1
    if t == "rat":
        return int(n["p"]), int(n["q"])
    return None


def _diff_tree(a, b):
    return {"t": "fn", "f": "Add", "a": [a, {"t": "fn", "f": "Mul", "a": [{"t": "int", "v": "-1"}, b]}]}


def compare_leaf(c, r, opts, path):
    tc, tr = c.get("t"), r.get("t")
    if c == r and tc not in ("str", "none", "ellipsis"):
        return Result(True, f"{path}: identical", "exact")
    if tr in ("bool", "str", "none") or tc in ("bool", "str", "none"):
        if tr != tc:
            return Result(False, f"{path}: expected {T.node_label(r)}, got {T.node_label(c)}", "type")
        if tr == "str":
            same = " ".join(c["v"].split()).lower() == " ".join(r["v"].split()).lower()
        else:
            same = c.get("v") == r.get("v")
        return Result(same, f"{path}: " + ("equal" if same else "differs"), "literal")
    if tr == "ellipsis" or tc == "ellipsis":
        return Result(False, f"{path}: unfilled placeholder (...)", "type")
    if tr == "fn" and r.get("f") in RELATIONS:
        if tc != "fn" or c.get("f") not in RELATIONS:
            return Result(False, f"{path}: expected a relation, got {T.node_label(c)}", "type")
        (cl, cr), (rl, rr) = c["a"], r["a"]
        if c["f"] == r["f"]:
            dc = _diff_tree(cl, cr)
        elif FLIP.get(c["f"]) == r["f"]:
            dc = _diff_tree(cr, cl)
        else:
            return Result(False, f"{path}: a different kind of relation", "type")
        dr = _diff_tree(rl, rr)
        res = compare_leaf(dc, dr, opts, path)
        if res.equal:
            return res
        if r["f"] in ("Equality", "Unequality"):
            neg = compare_leaf(dc, _diff_tree({"t": "int", "v": "0"}, dr), opts, path)
            if neg.equal:
                return neg
        # the same relation multiplied through by a constant (positive for an inequality)
        try:
            ok, note = run_guarded(step_ratio, 2 * opts.step_timeout,
                                   {"c": dc, "r": dr, "symbols": opts.symbols, "seed": opts.seed,
                                    "positive": r["f"] not in ("Equality", "Unequality")})
        except (StepTimeout, StepFailed):
            ok, note = None, ""
        if ok:
            return Result(True, f"{path}: {note}", "relation")
        return Result(False if res.equal is False or ok is False else None,
                      f"{path}: {'not the same relation' if ok is False else res.reason.split(': ', 1)[-1]}",
                      "relation")
    # exact numbers decide without SymPy
    ec, er = _exact_number(c), _exact_number(r)
    if ec and er:
        same = ec[0] * er[1] == er[0] * ec[1]
        if same:
            return Result(True, f"{path}: the same exact number", "exact")
        a, b = ec[0] / ec[1], er[0] / er[1]
        rel = abs(a - b) / max(abs(a), abs(b))
        return Result(False, f"{path}: the exact numbers differ (relative difference {rel:.2g})", "exact")
    has_float = _has_float(c) or _has_float(r)
    # the one precision policy (rt/precision.py, docs/grading.md "Precision")
    rtol, half_ulp = precision.tolerance(_tree_number(c), _tree_number(r), opts, has_float)
    job = {"c": c, "r": r, "symbols": opts.symbols, "rtol": rtol, "half_ulp": half_ulp,
           "seed": opts.seed, "n_points": opts.n_points, "path": path}
    t = opts.step_timeout
    steps, timeouts = [step_rebuild], [t]
    if not has_float:
        steps += [step_exact, step_cancel]
        timeouts += [t, t]
    steps += [step_numeric, step_simplify]
    timeouts += [2 * t, 2 * t]
    ran = run_steps(steps, job, timeouts)
    notes = [note for _, _, note in ran if note]
    name, status, note = ran[-1] if ran else ("", None, "")
    if name == "step_rebuild" and (status is False or "timed out" in note):
        return Result(False, f"{path}: {note}", "rebuild")
    method = {"step_exact": "exact", "step_cancel": "symbolic", "step_simplify": "symbolic"}.get(name, name[5:])
    if name == "step_exact" and status is True and note != "identical":
        method = "symbolic"
    if status is True:
        return Result(True, f"{path}: {note}", method)
    if status is False:
        return Result(False, f"{path}: {note}", method)
    return Result(None, f"{path}: could not establish equivalence ({'; '.join(notes)})", "undecided")


def _run(step, job, timeout):
    try:
        out = run_guarded(step, timeout, job)
    except StepTimeout as exc:
        return None, f"{step.__name__[5:]} step timed out ({exc})"
    except StepFailed as exc:
        return None, f"{step.__name__[5:]} step failed ({exc})"
    return out[0], out[1]


def _tree_number(n):
    """The float value of a small symbol-free reference tree (``-13.6`` is Mul(-1, 13.6)), else None."""
    if n.get("t") == "float":
        return float(n["v"])
    stack, size = [n], 0
    while stack:
        x = stack.pop()
        size += 1
        if size > 40 or not isinstance(x, dict) or x.get("t") in ("sym", "ufn", "str"):
            return None
        stack.extend(x.get("a") or [])
    if not any(x.get("t") == "float" for x in _walk(n)):
        return None
    try:
        import sympy as sp
        return float(T.from_tree(n, sp))
    except Exception:  # noqa: BLE001
        return None


def _walk(n):
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(x.get("a") or [])


# ------------------------------------------------------------------ steps (run in a child)


_REBUILT = {}


def _rebuild(job):
    key = id(job)
    if key not in _REBUILT:  # once per forked child (the cache dies with it)
        _REBUILT.clear()
        _REBUILT[key] = _rebuild_now(job)
    return _REBUILT[key]


def _rebuild_now(job):
    import sympy as sp
    table = job["symbols"]
    cache = {}

    def make(name, assumptions):
        key = norm_name(name)
        if key not in cache:
            if key in table:
                declared, ass = table[key]
                cache[key] = sp.Symbol(declared, **ass)
            else:
                cache[key] = sp.Symbol(shown_name(name))
        return cache[key]

    # never sympify: a rebuilt value is SymPy objects already, and anything else is not an expression
    c = T.from_tree(job["c"], sp, symbol=make, sympy_containers=True)
    r = T.from_tree(job["r"], sp, symbol=make, sympy_containers=True)
    if not isinstance(r, sp.Basic):
        raise T.TreeError(f"the reference is not an expression ({type(r).__name__})")
    h, hbar = cache.get("h"), cache.get("hbar")
    if h is not None and hbar is not None:  # an answer in hbar against one in h: hbar = h / 2 pi
        c, r = (x.xreplace({hbar: h / (2 * sp.pi)}) if isinstance(x, sp.Basic) else x for x in (c, r))
    k, kb = cache.get(norm_name("k")), cache.get(norm_name("k_B"))
    if k is not None and kb is not None and isinstance(c, sp.Basic):
        # Boltzmann's constant written k on one side and k_B on the other (each side one name only)
        cs, rs = c.free_symbols, r.free_symbols
        if kb in cs and k not in cs and k in rs and kb not in rs:
            c = c.xreplace({kb: k})
        elif k in cs and kb not in cs and kb in rs and k not in rs:
            r = r.xreplace({kb: k})
    return sp, c, r


def step_rebuild(job):
    sp, c, r = _rebuild(job)
    if not isinstance(c, sp.Basic):
        return False, f"expected an expression, got {T.node_label(job['c'])}"
    return None, ""


def step_exact(job):
    sp, c, r = _rebuild(job)
    d = c - r
    if d == 0:
        return True, "identical"
    if c.is_Rational and r.is_Rational:
        return False, f"the exact numbers differ (relative difference {_rel(c, r):.2g})"
    if sp.expand(d) == 0:
        return True, "equivalent (symbolically)"
    return None, ""


def step_cancel(job):
    sp, c, r = _rebuild(job)
    if sp.cancel(sp.together(c - r)) == 0:
        return True, "equivalent (symbolically)"
    return None, ""


def step_simplify(job):
    sp, c, r = _rebuild(job)
    d = c - r
    if sp.simplify(d) == 0:
        return True, "equivalent (symbolically, after simplification)"
    if branchy(sp, c, r):
        if sp.simplify(sp.piecewise_fold(d.rewrite(sp.Piecewise))) == 0:
            return True, "equivalent (symbolically, case by case)"
        if (c.has(sp.Float) or r.has(sp.Float)) and _terms_within(sp, sp.simplify(d), c, r, job["rtol"]):
            return True, "the same expression, coefficients equal " + _allowed(job["rtol"], None, equal=True)
    return None, "simplification did not reduce the difference to 0"


def _terms_within(sp, d, c, r, rtol):
    """Every term of the difference ``d`` is the same term of ``c`` or ``r`` with a coefficient
    off by at most ``rtol`` of it (``1.2345 Abs(x)`` against ``1.23450000001 Abs(x)``): algebra
    term by term, not numbers at points."""
    terms = sp.expand(d).as_coefficients_dict()
    sides = [sp.expand(c).as_coefficients_dict(), sp.expand(r).as_coefficients_dict()]
    for term, k in terms.items():
        scale = max(abs(side.get(term, 0)) for side in sides)
        if not term.free_symbols or scale == 0 or abs(k) > rtol * scale:
            return False
    return bool(terms)


# Functions whose value at a few sample points says nothing about other points (a step, a kink, a
# branch): with one of them, equal numbers at the points are no proof (issue #32: ``Abs(x)`` passed
# for ``x``, ``x + 100 Heaviside(x - 3)`` for ``x``).
BRANCHY = ("Abs", "sign", "floor", "ceiling", "frac", "Mod", "Heaviside", "Piecewise", "Min", "Max",
           "DiracDelta", "re", "im", "arg", "conjugate")


def branchy(sp, *exprs):
    """The BRANCHY functions (and hidden absolute values: an even power of something that may be
    negative under a fractional power, ``sqrt(x**2)``, ``(x**4)**(1/2)``) in ``exprs`` that
    depend on a symbol; [] when numbers can decide."""
    classes = tuple(getattr(sp, name) for name in BRANCHY)
    found: set[Any] = set()
    for e in exprs:
        if not isinstance(e, sp.Basic) or not e.free_symbols:
            continue
        found.update(type(f).__name__ for f in e.atoms(*classes) if f.free_symbols)
        for p in e.atoms(sp.Pow):
            if p.exp.is_integer is not True and p.free_symbols and any(
                    f.is_Pow and f.exp.is_even and f.base.is_nonnegative is not True
                    for f in sp.Mul.make_args(p.base)):
                found.add("sqrt(x**2)")
    return sorted(found)


def draw_value(rng, symbol):
    """A random value for ``symbol`` inside the domain its assumptions allow (exact Rational/
    Integer), over four decades: magnitudes log-uniform in [0.01, 100] (issue #32: a step at
    ``x = 3`` or a ``floor(n/10)`` term went unseen in the old (0.1, 2.5) window). Real -> either
    sign; positive/negative -> that sign; integer -> 1-9 or 10-316, signed the same way; imaginary ->
    I times a real value; declared complex -> real and imaginary parts of either sign. Untyped
    symbols stand for physical quantities and get positive values (a physicist's
    ``c/sqrt(c**2 - v**2)`` is ``1/sqrt(1 - v**2/c**2)``); forms whose sign the points cannot see
    (``Abs``, ``sqrt(x**2)``, ...) are left to algebra by ``branchy``."""
    import sympy as sp
    a = symbol.assumptions0

    def sign(v):
        if a.get("positive") or a.get("nonnegative"):
            return v
        if a.get("negative") or a.get("nonpositive"):
            return -v
        return v if rng.random() < 0.5 else -v

    if a.get("integer") or a.get("even") or a.get("odd"):
        mag = rng.randint(1, 9) if rng.random() < 0.5 else int(10 ** rng.uniform(1, 2.5))
        if a.get("nonnegative") and not a.get("positive") and rng.random() < 0.2:
            mag = 0
        v = sign(mag)
        if (a.get("even") and v % 2) or (a.get("odd") and not v % 2):
            v = v + 1 if v > 0 or (v == 0 and not a.get("nonpositive")) else v - 1
        if a.get("nonzero") and v == 0:
            v = 1
        return sp.Integer(v)

    def magnitude():
        return sp.Rational(int(round(10 ** rng.uniform(-2, 2) * 10 ** 6)), 10 ** 6)

    if a.get("imaginary"):
        return sp.I * sign(magnitude())
    if a.get("real") or a.get("extended_real") or a.get("positive") or a.get("negative") \
            or a.get("nonnegative") or a.get("nonpositive"):
        return sign(magnitude())
    if a.get("complex"):  # declared complex (not real): off the real line
        return sign(magnitude()) + sp.I * sign(magnitude())
    return magnitude()


def points_for(symbols, n, seed):
    """``n`` points (lists of exact values, in the order of ``symbols``) -- the same for every
    candidate of a problem given the seed and the symbols."""
    rng = random.Random(f"physlab-grading:{seed}:" + ",".join(s.name for s in symbols))
    return [[draw_value(rng, s) for s in symbols] for _ in range(n)]


def evaluate(sp, expr, symbols, point):
    """mpmath complex value of ``expr`` at ``point`` (high precision), or None if not finite."""
    import mpmath
    subs = {}
    exact = {}
    for s, v in zip(symbols, point):
        if v.is_Integer:
            exact[s] = v
        elif v.is_real:
            subs[s] = sp.Float(v, DPS + 10)
        else:  # imaginary or complex
            re_, im_ = v.as_real_imag()
            subs[s] = sp.Float(re_, DPS + 10) + sp.I * sp.Float(im_, DPS + 10)
    e = expr.xreplace(exact) if exact else expr
    v = e.evalf(DPS, subs=subs) if subs else e.evalf(DPS)
    if not getattr(v, "is_number", False) or v.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return None
    v = _drop_noise(sp, v)
    re_, im_ = v.as_real_imag()
    vals = []
    for part in (re_, im_):
        part = part.evalf(DPS)
        if not part.is_Number:
            return None
        vals.append(mpmath.mpf(part._mpf_) if part.is_Float else mpmath.mpf(int(part.p)) / int(part.q))
    z = mpmath.mpc(vals[0], vals[1])
    if not (mpmath.isfinite(z.real) and mpmath.isfinite(z.imag)):
        return None
    return z


NOISE_BITS = 4


def _drop_noise(sp, v):
    """``v`` with evalf's "zero within its accuracy" parts (``0.e-172``: a Float whose accuracy
    is below NOISE_BITS, what total cancellation such as ``sin(t)**2 + cos(t)**2 - 1`` leaves)
    replaced by an exact 0, so an identically-zero expression compares equal to ``0``."""
    noise = {f: sp.S.Zero for f in v.atoms(sp.Float) if f._prec < NOISE_BITS}
    return v.xreplace(noise) if noise else v


def step_numeric(job):
    import mpmath
    mpmath.mp.dps = DPS + 10
    sp, c, r = _rebuild(job)
    symbols = sorted(c.free_symbols | r.free_symbols, key=lambda s: s.name)
    one_sided = sorted({s.name for s in c.free_symbols} ^ {s.name for s in r.free_symbols})
    need = 1 if not symbols else job["n_points"]
    rtol = job["rtol"]
    half_ulp = job.get("half_ulp")
    good, cand_bad = 0, 0
    rng_points = points_for(symbols, MAX_TRIES, job["seed"]) if symbols else [[]]
    for point in rng_points:
        vc = evaluate(sp, c, symbols, point)
        vr = evaluate(sp, r, symbols, point)
        if vr is None:
            continue  # a singular point of the reference: try another
        if vc is None:
            cand_bad += 1
            if symbols and cand_bad < need:
                continue
            return False, "the answer does not evaluate to a finite number where the reference does"
        diff = abs(vc - vr)
        scale = max(abs(vc), abs(vr))
        ok = diff == 0 or diff <= rtol * scale or (half_ulp is not None and diff <= half_ulp * (1 + 1e-9))
        if ok and one_sided and diff != 0:
            # a symbol on one side only: equal within a tolerance is not enough (a lost symbol's
            # small term); only the same value at every point is an identity
            return None, f"close, but {', '.join(one_sided)} appear(s) on one side only"
        if not ok:
            rel = float(diff / scale) if scale else float("inf")
            where = ", ".join(f"{s.name}={float(v):.4g}" for s, v in zip(symbols, point))
            if where:
                return False, f"differs at {where} (relative difference {rel:.2g})"
            return False, f"the numbers differ (relative difference {rel:.2g}, allowed {_allowed(rtol, half_ulp)})"
        good += 1
        if good >= need:
            break
    else:
        if good < 2:
            return None, "could not be evaluated numerically"
    if not symbols:
        return True, f"equal {_allowed(rtol, half_ulp, equal=True)}"
    shown = f"equal at {good} random point{'s' if good > 1 else ''}"
    hidden = branchy(sp, c, r)
    if hidden:  # numbers cannot prove it: simplify decides
        return None, f"{shown}, but with {', '.join(hidden)} only algebra can make them equal"
    return True, f"{shown} {_allowed(rtol, half_ulp, equal=True)}"


def _allowed(rtol, half_ulp, equal=False):
    """The tolerance in a physicist's words: "to 8 significant digits", "within +-0.05"."""
    if half_ulp is not None:
        return f"within the stated precision (±{half_ulp:.2g})"
    digits = max(1, round(-math.log10(rtol))) if rtol > 0 else 40
    if equal and rtol >= 1e-4:
        return f"within {rtol:.2g} relative"
    return f"to {digits} significant digits" if equal else f"{rtol:.2g} relative"


def _rel(a, b):
    a, b = float(a), float(b)
    return abs(a - b) / max(abs(a), abs(b)) if max(abs(a), abs(b)) else 0.0


def step_ratio(job):
    """Two relations' differences in a constant ratio (positive when ``positive``): the same
    equation or inequality multiplied through."""
    import mpmath
    mpmath.mp.dps = DPS + 10
    sp, c, r = _rebuild(job)
    if r == 0:
        return None, ""
    q = sp.cancel(sp.together(c / r))
    if not q.free_symbols and q.is_number and q != 0:
        if job.get("positive") and not q.is_positive:
            return False, "the inequality points the other way"
        return True, "the same relation (up to a constant factor)"
    coeff, rest = q.as_coeff_Mul()
    if coeff != 0 and all(f.is_Symbol or (f.is_Pow and f.base.is_Symbol and f.exp.is_Rational)
                          for f in sp.Mul.make_args(rest)):
        # divided through by a mass, multiplied by c^2: a product of the problem's quantities
        if job.get("positive") and not coeff.is_positive:
            return False, "the inequality points the other way"
        return True, "the same relation (up to a factor)"
    if branchy(sp, c, r):  # a constant ratio at a few points proves nothing here
        return None, ""
    symbols = sorted(c.free_symbols | r.free_symbols, key=lambda s: s.name)
    ratios = []
    for point in points_for(symbols, 8, job.get("seed", 0)):
        vc, vr = evaluate(sp, c, symbols, point), evaluate(sp, r, symbols, point)
        if vc is None or vr is None or vr == 0:
            continue
        ratios.append(vc / vr)
    if len(ratios) < 3:
        return None, ""
    k = ratios[0]
    if abs(k) == 0 or any(abs(x - k) > 1e-12 * abs(k) for x in ratios):
        return False, "not the same relation"
    if job.get("positive") and not (abs(k.imag) < 1e-12 * abs(k) and k.real > 0):
        return False, "the inequality points the other way"
    return True, "the same relation (up to a constant factor)"


def step_points(job):
    """Values of tree ``c`` at ``n_points`` points of the template's parameters (a fingerprint:
    the same points for every candidate of a problem given the seed): [re, im] | None each."""
    import mpmath
    mpmath.mp.dps = DPS + 10
    job = dict(job, r={"t": "int", "v": "0"})
    sp, c, _ = _rebuild(job)
    table = job["symbols"]
    symbols = []
    for name in job["params"]:
        declared, ass = table.get(norm_name(name), [name, {}])
        symbols.append(sp.Symbol(declared, **ass))
    out = []
    for point in points_for(symbols, job["n_points"], job["seed"]):
        try:
            v = evaluate(sp, c, symbols, point)
        except Exception:  # noqa: BLE001 - an unevaluable point is None
            v = None
        out.append(None if v is None else [float(v.real), float(v.imag)])
    return out
