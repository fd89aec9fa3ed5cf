"""HiPhO grading: ``\\boxed{}`` answers with answer types, units and points; optional points judge.

A HiPhO item has one or more boxed reference answers, each with an answer type ("Numerical Value",
"Expression", "Equation", "Inequality", "Multiple Choice"), a unit (or None), the points it is
worth and a step marking scheme. This module

* extracts the candidate's ``\\boxed{...}`` answers (balanced braces, nested boxes allowed),
* checks each reference answer against the candidate's boxes: numbers within a tolerance (or inside
  the reference interval ``[lo, hi]``) after unit conversion, expressions / equations / inequalities
  by symbolic-numeric equivalence of their LaTeX, multiple choice as letter sets,
* sums the points of the answers that match (the "answer points" score), and
* optionally asks an LLM judge (role ``points_judge``) to award points against the official marking
  scheme (strict JSON; an unparsable reply awards nothing and is recorded).

Everything here is grader-side: it reads the answer key and must never be called from a prompt path.
"""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

from pydantic import BaseModel, Field

from physlab.grading.verdict import Verdict

# --------------------------------------------------------------------------------------------------
# boxed extraction


def extract_boxed(text: str) -> list[str]:
    """Contents of every top-level ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, in order."""
    out: list[str] = []
    i = 0
    pattern = re.compile(r"\\(?:boxed|fbox)\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            return out
        depth, j = 1, m.end()
        while j < len(text) and depth:
            if text[j] == "\\" and j + 1 < len(text):
                j += 2
                continue
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        if depth:  # unbalanced: take the rest
            out.append(text[m.end():].strip())
            return out
        out.append(text[m.end(): j - 1].strip())
        i = j


# --------------------------------------------------------------------------------------------------
# LaTeX clean-up


def _strip_math(s: str) -> str:
    s = s.strip()
    s = s.replace("$", "")
    s = re.sub(r"\\(?:displaystyle|left|right|big|Big|bigg|Bigg)\b", "", s)
    s = re.sub(r"\\[,;:!]|\\ |~", " ", s)
    return s.strip()


def _unwrap_text(s: str) -> str:
    return re.sub(r"\\(?:mathrm|text|textrm|operatorname|mathit|rm)\s*\{([^{}]*)\}", r"\1", s)


# --------------------------------------------------------------------------------------------------
# numbers and units

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_POW10 = r"10\s*\^\s*(?:\{\s*(" + _NUM + r")\s*\}|(" + _NUM + r"))"
_POW_ONLY_RE = re.compile(r"^\s*" + _POW10)
_NUMBER_RE = re.compile(r"^\s*(" + _NUM + r")\s*(?:(?:\\times|\\cdot|\*|x)\s*" + _POW10 + r")?")


def parse_number(latex: str) -> tuple[float, str] | None:
    """Leading number of ``latex`` (``5.31 \\times 10^{-11}``, ``10^{-10.5}``, ``1.2e3``) and the
    rest of the string (normally a unit). None when it does not start with a number."""
    s = _unwrap_text(_strip_math(latex)).replace("{,}", "").replace("\u2212", "-")
    m = _POW_ONLY_RE.match(s)
    if m:  # a bare power of ten: 10^{-10.5}
        return 10.0 ** float(m.group(1) if m.group(1) is not None else m.group(2)), s[m.end():].strip()
    m = _NUMBER_RE.match(s)
    if not m:
        return None
    mant, e1, e2 = m.groups()
    value = float(mant)
    exp = e1 if e1 is not None else e2
    if exp is not None:
        value *= 10.0 ** float(exp)
    return value, s[m.end():].strip()


def _latex_number(latex: str) -> tuple[float, str] | None:
    """A closed-form number such as ``\\frac{1}{2}`` or ``\\sqrt{2}`` (no unit)."""
    try:
        e = _to_sympy(_prep_latex(latex))
        if getattr(e, "free_symbols", {1}):
            return None
        return float(e), ""
    except Exception:  # noqa: BLE001
        return None


def _half_ulp(latex: str) -> float:
    """Half a unit in the last written digit of a decimal number (its stated precision); 0 for
    integers and bare powers of ten, which are taken as exact (the relative tolerance applies)."""
    s = _unwrap_text(_strip_math(latex))
    if _POW_ONLY_RE.match(s):
        return 0.0
    m = _NUMBER_RE.match(s)
    if not m or "." not in m.group(1):
        return 0.0
    mant, _, e_exp = m.group(1).lstrip("+-").lower().partition("e")
    decimals = len(mant.split(".")[1])
    exp = float(m.group(2) or m.group(3) or 0) + float(e_exp or 0)
    return 0.5 * 10.0 ** (exp - decimals)


# dimension vector: (m, kg, s, A, K, mol)
_BASE: dict[str, tuple[float, tuple[int, ...]]] = {
    "m": (1.0, (1, 0, 0, 0, 0, 0)),
    "g": (1e-3, (0, 1, 0, 0, 0, 0)),
    "s": (1.0, (0, 0, 1, 0, 0, 0)),
    "A": (1.0, (0, 0, 0, 1, 0, 0)),
    "K": (1.0, (0, 0, 0, 0, 1, 0)),
    "mol": (1.0, (0, 0, 0, 0, 0, 1)),
    "N": (1.0, (1, 1, -2, 0, 0, 0)),
    "J": (1.0, (2, 1, -2, 0, 0, 0)),
    "W": (1.0, (2, 1, -3, 0, 0, 0)),
    "Pa": (1.0, (-1, 1, -2, 0, 0, 0)),
    "bar": (1e5, (-1, 1, -2, 0, 0, 0)),
    "atm": (101325.0, (-1, 1, -2, 0, 0, 0)),
    "eV": (1.602176634e-19, (2, 1, -2, 0, 0, 0)),
    "Hz": (1.0, (0, 0, -1, 0, 0, 0)),
    "C": (1.0, (0, 0, 1, 1, 0, 0)),
    "V": (1.0, (2, 1, -3, -1, 0, 0)),
    "T": (1.0, (0, 1, -2, -1, 0, 0)),
    "L": (1e-3, (3, 0, 0, 0, 0, 0)),
    "min": (60.0, (0, 0, 1, 0, 0, 0)),
    "h": (3600.0, (0, 0, 1, 0, 0, 0)),
}
_PREFIX = {"k": 1e3, "c": 1e-2, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12, "M": 1e6, "G": 1e9,
           "d": 1e-1, "f": 1e-15}


def _unit_token(tok: str) -> tuple[float, tuple[int, ...]] | None:
    if tok in _BASE:
        return _BASE[tok]
    if len(tok) > 1 and tok[0] in _PREFIX and tok[1:] in _BASE:
        f, d = _BASE[tok[1:]]
        return _PREFIX[tok[0]] * f, d
    return None


def normalize_unit(unit: str | None) -> str:
    if not unit:
        return ""
    s = _unwrap_text(_strip_math(unit))
    s = s.replace("\\mu", "u").replace("µ", "u").replace("μ", "u").replace("\\Omega", "Ohm")
    s = s.replace("\\cdot", "*").replace("\\times", "*").replace("{", "").replace("}", "")
    s = re.sub(r"\s*\^\s*", "^", s)
    s = re.sub(r"\s*([*/])\s*", r"\1", s)
    s = re.sub(r"\s+", "*", s.strip())
    return re.sub(r"(?<![A-Za-z])u\*(?=[A-Za-z])", "u", s)  # "\mu m" -> "um"


def parse_unit(unit: str | None) -> tuple[float, tuple[int, ...]] | None:
    """(factor to SI, dimension vector) of a unit such as ``km/s``, ``\\mathrm{Pa} \\cdot s``,
    ``m/s^2``; ``(1, 0)`` for no unit; None for a unit outside the table (compared as text)."""
    s = normalize_unit(unit)
    if not s:
        return 1.0, (0,) * 6
    factor, dims = 1.0, [0] * 6
    sign = 1
    for part in re.findall(r"[*/]|[^*/]+", s):
        if part == "/":
            sign = -1
            continue
        if part == "*":
            continue
        m = re.fullmatch(r"([A-Za-z]+)(?:\^\(?([+-]?\d+)\)?)?", part)
        if not m:
            return None
        tok = _unit_token(m.group(1))
        if tok is None:
            return None
        p = sign * int(m.group(2) or 1)
        factor *= tok[0] ** p
        dims = [a + p * b for a, b in zip(dims, tok[1])]
        sign = 1
    return factor, tuple(dims)


def convert(value: float, from_unit: str | None, to_unit: str | None) -> float | None:
    """``value`` in ``from_unit`` expressed in ``to_unit``; None if the units are incompatible."""
    if normalize_unit(from_unit) == normalize_unit(to_unit):
        return value
    a, b = parse_unit(from_unit), parse_unit(to_unit)
    if a is None or b is None or a[1] != b[1]:
        return None
    return value * a[0] / b[0]


# --------------------------------------------------------------------------------------------------
# symbolic equivalence of LaTeX expressions


def _prep_latex(s: str) -> str:
    s = _unwrap_text(_strip_math(s))
    s = re.sub(r"\\vec\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\(?:hat|bar|tilde)\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\^\s*\{?\s*\\star\s*\}?", "", s)  # X^{\star} is a label, not a power
    s = s.replace("\\varepsilon", "\\epsilon").replace("\\ell", "l").replace("\\odot", "sun")
    s = re.sub(r"_\s*([A-Za-z0-9])", r"_{\1}", s)  # m_e r -> m_{e} r
    s = re.sub(r"\\(ddot|dot)\s+([A-Za-z])", r"\\\1{\2}", s)  # \ddot z -> \ddot{z}
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return s.strip().rstrip(".")


def _split_relation(s: str) -> tuple[list[str], str | None]:
    """Split on the top-level relation symbols; returns (segments, relation kind)."""
    for rel, kind in ((r"\\geq|\\ge\b|>=", ">="), (r"\\leq|\\le\b|<=", "<="), (r">|\\gg\b", ">"),
                      (r"<|\\ll\b", "<")):
        parts = re.split(rel, s)
        if len(parts) == 2:
            return parts, kind
    parts = re.split(r"=|\\approx|\\simeq|\\sim\b", s)
    return parts, ("=" if len(parts) > 1 else None)


MAX_LATEX_CHARS = 4000  # a boxed answer longer than this is not parsed (bounded work in-process)


def _to_sympy(s: str):
    """LaTeX -> SymPy through the grader's LaTeX path (``grading.rt.reference``: latex2sympy with
    case-sensitive symbols, math-verify as fallback)."""
    import sympy

    try:
        from physlab.grading.rt.reference import latex_reference
    except ImportError:  # grading runtime not present: plain latex2sympy
        from latex2sympy2_extended import latex2sympy

        return latex2sympy(s)
    return latex_reference(sympy, s)


def _numeric_ratio(a, b, samples: int = 4) -> list[complex] | None:
    """a/b at random positive values of the free symbols (None if not evaluable)."""
    import sympy as sp

    reps = {}
    for d in set(a.atoms(sp.Derivative)) | set(b.atoms(sp.Derivative)):
        reps[d] = sp.Symbol(f"D_{abs(hash(str(d)))}")
    a, b = a.xreplace(reps), b.xreplace(reps)
    syms = sorted(a.free_symbols | b.free_symbols, key=str)
    rng = random.Random(1234)
    out = []
    for _ in range(samples):
        sub = {x: sp.Float(rng.uniform(0.5, 2.5)) for x in syms}
        try:
            va = complex(sp.N(a.subs(sub)))
            vb = complex(sp.N(b.subs(sub)))
        except Exception:  # noqa: BLE001 - not evaluable numerically
            return None
        if not all(math.isfinite(abs(v)) for v in (va, vb)):
            return None
        if abs(vb) < 1e-300:
            if abs(va) < 1e-300:
                continue
            return None
        out.append(va / vb)
    return out


def _close(x: complex, y: complex, rtol: float = 1e-6) -> bool:
    return abs(x - y) <= rtol * max(abs(x), abs(y), 1e-12)


def expressions_equivalent(candidate: str, reference: str) -> bool:
    """Whether two LaTeX expressions are equal (same free symbols, equal at random points)."""
    if len(candidate) > MAX_LATEX_CHARS:
        return False
    try:
        a, b = _to_sympy(_prep_latex(candidate)), _to_sympy(_prep_latex(reference))
    except Exception:  # noqa: BLE001 - unparsable LaTeX is "not shown equivalent"
        return _norm_text(candidate) == _norm_text(reference)
    r = _numeric_ratio(a, b)
    if r is None:
        return _norm_text(candidate) == _norm_text(reference)
    return all(_close(x, 1.0) for x in r)


def relations_equivalent(candidate: str, reference: str) -> bool:
    """Equations (up to a constant factor) and inequalities (same direction) in LaTeX."""
    if len(candidate) > MAX_LATEX_CHARS:
        return False
    c_parts, c_kind = _split_relation(_prep_latex(candidate))
    r_parts, r_kind = _split_relation(_prep_latex(reference))
    if c_kind is None or r_kind is None or len(c_parts) != 2 or len(r_parts) != 2:
        return False
    try:
        ca, cb = (_to_sympy(p) for p in c_parts)
        ra, rb = (_to_sympy(p) for p in r_parts)
        diff_c, diff_r = ca - cb, ra - rb
    except Exception:  # noqa: BLE001
        return _norm_text(candidate) == _norm_text(reference)
    flip = {">": "<", "<": ">", ">=": "<=", "<=": ">="}
    if c_kind != "=" and c_kind != r_kind:
        if flip.get(c_kind) != r_kind:
            return False
        diff_c = -diff_c
    r = _numeric_ratio(diff_c, diff_r)
    if not r:
        return False
    first = r[0]
    if not all(_close(x, first) for x in r) or abs(first) < 1e-12:
        return False
    return c_kind == "=" or (first.real > 0 and abs(first.imag) < 1e-9)


def _norm_text(s: str) -> str:
    return re.sub(r"\s+", "", _unwrap_text(_strip_math(s))).lower()


def _rhs(s: str) -> str:
    parts, kind = _split_relation(_strip_math(s))
    return parts[-1] if kind == "=" else s


# --------------------------------------------------------------------------------------------------
# one answer


class AnswerCheck(BaseModel):
    index: int
    answer_type: str
    unit: str | None = None
    points: float = 0.0
    reference: str
    candidate: str | None = None
    correct: bool = False
    reason: str = ""


def _clean_reference(ref: str) -> str:
    # "[6.32, 6.34] for $v_{r,1}$" -> "[6.32, 6.34]"; "Segment 1: slope = X" -> "slope = X"
    ref = re.sub(r"\s+for\s+\$[^$]*\$\s*\.?$", "", ref.strip())
    ref = re.sub(r"\s+if\s+\$.*$", "", ref)
    ref = re.sub(r"^[A-Za-z ]+\d*\s*:\s*", "", ref)
    return ref.strip()


def _interval(ref: str) -> tuple[float, float] | None:
    m = re.fullmatch(r"\s*\[\s*(.+?)\s*,\s*(.+?)\s*\]\s*", _strip_math(ref))
    if not m:
        return None
    lo, hi = parse_number(m.group(1)), parse_number(m.group(2))
    if lo is None or hi is None:
        return None
    return min(lo[0], hi[0]), max(lo[0], hi[0])


def check_answer(candidate: str, reference: str, answer_type: str, unit: str | None = None,
                 *, rtol: float = 0.01) -> tuple[bool, str]:
    """Compare one boxed candidate with one boxed reference. Returns (correct, reason)."""
    ref = _clean_reference(reference)
    candidate = _clean_reference(candidate)
    kind = (answer_type or "").lower()
    if "numerical" in kind:
        if _norm_text(ref) == "none":
            return _norm_text(candidate) in ("none", ""), "reference is 'None'"
        cand = parse_number(_rhs(candidate)) or _latex_number(_rhs(candidate))
        civ = _interval(candidate)
        if civ is not None:  # a range was given: take its middle
            cand = ((civ[0] + civ[1]) / 2, "")
        if cand is None:
            return False, f"no number in candidate {candidate!r}"
        value, cand_unit = cand
        cand_unit = cand_unit.strip()
        if cand_unit and unit:
            converted = convert(value, cand_unit, unit)
            if converted is None:
                return False, f"unit {cand_unit!r} is not compatible with {unit!r}"
            value = converted
        iv = _interval(ref)
        if iv is not None:
            lo, hi = iv
            slack = 1e-9 * max(abs(lo), abs(hi))
            ok = lo - slack <= value <= hi + slack
            return ok, f"{value:g} {'in' if ok else 'outside'} [{lo:g}, {hi:g}] {unit or ''}".strip()
        r = parse_number(_rhs(ref)) or _latex_number(_rhs(ref))
        if r is None:
            return expressions_equivalent(candidate, ref), "reference is not a plain number"
        tol = max(rtol * abs(r[0]), _half_ulp(ref))
        ok = abs(value - r[0]) <= tol
        return ok, f"{value:g} vs {r[0]:g} (tolerance {tol:g}) {unit or ''}".strip()
    if "choice" in kind:
        letters = lambda s: set(re.findall(r"\b[A-Z]\b", _unwrap_text(_strip_math(s))))  # noqa: E731
        ok = letters(candidate) == letters(ref) and bool(letters(ref))
        return ok, f"choices {sorted(letters(candidate))} vs {sorted(letters(ref))}"
    if "inequality" in kind or "equation" in kind:
        ok = relations_equivalent(candidate, ref)
        if not ok and "equation" in kind:
            ok = expressions_equivalent(_rhs(candidate), _rhs(ref))
        return ok, "relation equivalent" if ok else "relation not equivalent"
    # Expression (and anything else): compare right-hand sides when an equation is written out.
    ok = expressions_equivalent(_rhs(candidate), _rhs(ref))
    if not ok:
        ok = _norm_text(_rhs(candidate)) == _norm_text(_rhs(ref))
    return ok, "expression equivalent" if ok else "expression not equivalent"


# --------------------------------------------------------------------------------------------------
# a whole item


class HiPhOKey(BaseModel):
    """The answer key of one HiPhO item (grader-side only)."""

    answers: list[str]
    answer_types: list[str] = Field(default_factory=list)
    units: list[str | None] = Field(default_factory=list)
    points: list[float] = Field(default_factory=list)
    marking: list[list[str]] = Field(default_factory=list)

    def type_of(self, i: int) -> str:
        return self.answer_types[i] if i < len(self.answer_types) else "Expression"

    def unit_of(self, i: int) -> str | None:
        return self.units[i] if i < len(self.units) else None

    def points_of(self, i: int) -> float:
        return float(self.points[i]) if i < len(self.points) else 1.0


class HiPhOScore(BaseModel):
    checks: list[AnswerCheck]
    points_awarded: float
    points_total: float
    all_correct: bool

    def verdict(self) -> Verdict:
        n_ok = sum(c.correct for c in self.checks)
        reason = (f"{n_ok}/{len(self.checks)} boxed answers correct, "
                  f"{self.points_awarded:g}/{self.points_total:g} answer points")
        return Verdict(
            verdict="correct" if self.all_correct else "incorrect",
            reason=reason,
            details={"points": self.points_awarded, "points_total": self.points_total,
                     "answers": [c.model_dump() for c in self.checks]},
        )


def _as_list(v: Any) -> list:
    if v is None:
        return []
    if isinstance(v, str):
        import ast

        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return [v]
    return list(v) if isinstance(v, (list, tuple)) else [v]


def key_from_item(item: dict[str, Any]) -> HiPhOKey:
    """The key of a raw HiPhO JSON item (fields may be lists or their string form)."""
    answers = [extract_boxed(a)[0] if extract_boxed(a) else a for a in _as_list(item.get("answer"))]
    return HiPhOKey(
        answers=answers,
        answer_types=[str(t) for t in _as_list(item.get("answer_type"))],
        units=[u if u not in ("None", "") else None for u in _as_list(item.get("unit"))],
        points=[float(p) for p in _as_list(item.get("points"))],
        marking=[_as_list(m) for m in _as_list(item.get("marking"))],
    )


def key_from_problem(problem: Any) -> HiPhOKey:
    """The key of a loaded Problem (the full one, not ``public()``): reference = boxed answers,
    answer types/units/points/marking in ``extra`` under keys starting with ``answer_key``."""
    extra = dict(problem.extra or {})
    nested = extra.get("answer_key") if isinstance(extra.get("answer_key"), dict) else {}

    def pick(*names: str) -> Any:
        for n in names:
            for src in (nested, extra):
                if n in src:
                    return src[n]
        return None

    answers = pick("answers", "answer_key_answers")
    if answers is None:
        answers = extract_boxed(problem.reference or "") or ([problem.reference] if problem.reference else [])
    else:
        answers = [extract_boxed(a)[0] if extract_boxed(a) else a for a in _as_list(answers)]
    return HiPhOKey(
        answers=list(answers),
        answer_types=[str(t) for t in _as_list(pick("answer_type", "answer_types", "answer_key_types",
                                                    "answer_key_answer_types", "answer_key_answer_type"))],
        units=[u if u not in ("None", "") else None for u in _as_list(pick("unit", "units", "answer_key_units",
                                                                            "answer_key_unit"))],
        points=[float(p) for p in _as_list(pick("points", "answer_key_points"))],
        marking=[_as_list(m) for m in _as_list(pick("marking", "answer_key_marking"))],
    )


def grade_boxed_answers(candidate_text: str, key: HiPhOKey, *, rtol: float = 0.01) -> HiPhOScore:
    """Grade the candidate's boxed answers against every reference answer of ``key``.

    Reference answer i is matched first against the candidate's i-th box, then against any unused
    box (models do not always keep the order); each box is used at most once."""
    boxes = extract_boxed(candidate_text)
    used: set[int] = set()
    checks: list[AnswerCheck] = []
    for i, ref in enumerate(key.answers):
        order = ([i] if i < len(boxes) else []) + [j for j in range(len(boxes)) if j != i]
        check = AnswerCheck(index=i, answer_type=key.type_of(i), unit=key.unit_of(i),
                            points=key.points_of(i), reference=ref, reason="no boxed answer")
        for j in order:
            if j in used:
                continue
            ok, reason = check_answer(boxes[j], ref, key.type_of(i), key.unit_of(i), rtol=rtol)
            if ok or check.candidate is None:
                check.candidate, check.reason, check.correct = boxes[j], reason, ok
            if ok:
                used.add(j)
                break
        checks.append(check)
    awarded = sum(c.points for c in checks if c.correct)
    total = sum(c.points for c in checks)
    return HiPhOScore(checks=checks, points_awarded=round(awarded, 6), points_total=round(total, 6),
                      all_correct=bool(checks) and all(c.correct for c in checks))


def grade_hipho(problem: Any, candidate_text: str) -> Verdict:
    """Verdict for a HiPhO problem (full Problem with its key) and a candidate's answer text."""
    key = key_from_problem(problem)
    if not key.answers:
        return Verdict(verdict="invalid", reason="problem has no boxed reference answers")
    if not extract_boxed(candidate_text or ""):
        return Verdict(verdict="invalid", reason="no \\boxed{} answer in the candidate")
    return grade_boxed_answers(candidate_text, key, rtol=problem.rtol or 0.01).verdict()


# --------------------------------------------------------------------------------------------------
# optional LLM points judge against the marking scheme


class PointsJudgement(BaseModel):
    awarded: list[list[float]] = Field(default_factory=list, description="Per answer, per criterion.")
    points: float = 0.0
    points_total: float = 0.0
    parsed: bool = True
    raw: str = ""
    error: str | None = None


_CRIT_PTS = re.compile(r"award\s+([0-9]*\.?[0-9]+)\s*pts?", re.IGNORECASE)


def criterion_max(criterion: str) -> float:
    m = _CRIT_PTS.search(criterion)
    return float(m.group(1)) if m else 0.0


POINTS_JUDGE_SYSTEM = """You are a physics olympiad marker. You receive a problem, a contestant's \
solution and the official marking scheme: for each answer part a list of criteria, each stating \
how many points it is worth. Award each criterion its full points only if the solution clearly \
satisfies it (equivalent forms and correct alternative methods count), otherwise 0.
Reply with strict JSON only, no prose: {"awarded": [[p11, p12, ...], [p21, ...], ...]} with one \
list per answer part and one number per criterion, in the order given."""


def points_judge_prompt(statement: str, candidate_text: str, key: HiPhOKey) -> str:
    lines = [f"# Problem\n{statement}\n", f"# Contestant's solution\n{candidate_text}\n", "# Marking scheme"]
    for i, crits in enumerate(key.marking):
        lines.append(f"## Answer part {i + 1} (worth {key.points_of(i):g} pt)")
        lines += [f"{j + 1}. {c}" for j, c in enumerate(crits)]
    return "\n".join(lines)


def parse_points_reply(reply: str, key: HiPhOKey) -> PointsJudgement:
    """Strict parse of the judge's JSON; each award is clipped to [0, criterion max] and each part
    to its points. Anything malformed awards 0 and keeps the raw reply."""
    total = sum(key.points_of(i) for i in range(len(key.marking)))
    try:
        data = json.loads(_json_block(reply))
        awarded = data["awarded"]
        if not isinstance(awarded, list) or len(awarded) != len(key.marking):
            raise ValueError(f"expected {len(key.marking)} answer parts, got {len(awarded)}")
        clipped: list[list[float]] = []
        score = 0.0
        for i, (part, crits) in enumerate(zip(awarded, key.marking)):
            if not isinstance(part, list) or len(part) != len(crits):
                raise ValueError(f"part {i + 1}: expected {len(crits)} numbers")
            row = [min(max(float(p), 0.0), criterion_max(c) or float(p)) for p, c in zip(part, crits)]
            clipped.append(row)
            score += min(sum(row), key.points_of(i))
        return PointsJudgement(awarded=clipped, points=round(score, 6), points_total=total, raw=reply)
    except (ValueError, KeyError, TypeError) as exc:
        return PointsJudgement(points=0.0, points_total=total, parsed=False, raw=reply, error=str(exc))


def _json_block(text: str) -> str:
    m = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    if m:
        return m.group(1)
    s = text.strip()
    if s.startswith("{"):
        return s
    i, j = s.find("{"), s.rfind("}")
    if i >= 0 and j > i:
        return s[i: j + 1]
    raise ValueError("no JSON object in the reply")


async def judge_points(model: Any, statement: str, candidate_text: str, key: HiPhOKey) -> PointsJudgement:
    """Ask an LLM (a pydantic-ai Model, normally ``ctx.models.for_role("points_judge")``) to mark the
    solution against the marking scheme."""
    from pydantic_ai import Agent

    if not key.marking:
        return PointsJudgement(parsed=False, error="item has no marking scheme")
    agent = Agent(model, system_prompt=POINTS_JUDGE_SYSTEM, output_type=str)
    result = await agent.run(points_judge_prompt(statement, candidate_text, key))
    return parse_points_reply(result.output, key)


async def points_for_problem(models: Any, problem: Any, candidate_text: str) -> PointsJudgement:
    """The points judge for a loaded HiPhO problem (full view, with its marking scheme), using
    ``models.for_role("points_judge")`` (a run's ModelSource, so the calls are recorded)."""
    key = key_from_problem(problem)
    return await judge_points(models.for_role("points_judge"), problem.public().statement, candidate_text, key)
