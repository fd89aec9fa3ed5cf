"""Units of written answers: split them off the value, read them with pint, convert between them.

``split_unit("4.7\\,\\mathrm{k\\Omega}")`` -> ``("4.7", "k\\Omega", True)``: a trailing run of unit
atoms is a unit when pint reads it. Atoms marked as text (``\\mathrm{...}``, ``\\text{...}``, ``\\Omega``,
``\\mu``, ``^\\circ``) are a unit after any value; bare letters (``6330 m/s``, ``-13.6 eV``) only after a
plain number, and then only "unmarked": the grader uses that split when the reference states a unit
and reads the letters as symbols otherwise (``2 m`` may be two masses).

Conversion factors come from pint; a factor that is a short decimal (prefixes, 60 s per minute,
the SI-exact eV) is made an exact rational, anything else a float (the comparison is then to float
precision). Offset units (degC) are converted only on plain numbers.
"""

import re
from typing import Any

_TEXT = r"\\(?:mathrm|text|textrm|textbf|mathit|rm|operatorname|mbox|textnormal)\s*\{(?:[^{}]|\{[^{}]*\})*\}"
_EXP = r"(?:\s*\^\s*(?:\{\s*[+-]?\s*\d+(?:\.\d+)?\s*\}|[+-]?\d))?"
_DEGREE = r"(?:\^\s*\{?\s*\\circ\s*\}?|°)\s*(?:\\(?:mathrm|text|rm)\s*\{\s*[CF]\s*\}|[CF](?![A-Za-z]))?"
_MARKED_ATOM = re.compile(r"(?:" + _DEGREE + "|" + _TEXT + r"|\\?%|\\(?:Omega|mu|AA|ohm)(?![A-Za-z])\s*[A-Za-z]*)" + _EXP + r"$")
_PLAIN_ATOM = re.compile(r"(?<![\\A-Za-z])[A-Za-zµμΩÅ]+" + _EXP + r"$")
_SEP = re.compile(r"(?:\s*(?:\\cdot|\\times|/|\*)\s*|\s*)$")
_NUMBER = re.compile(r"^[+-]?\s*\\frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\}$|^[+-]?\s*(?:\d+(?:\.\d*)?|\.\d+)(?:\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*(?:\{\s*[+-]?\s*\d+(?:\.\d+)?\s*\}|[+-]?\d))?$"
                     r"|^10\s*\^\s*(?:\{\s*[+-]?\s*\d+(?:\.\d+)?\s*\}|\d)$")
_DEG_C = r"(?:\^\s*\{?\s*\\circ\s*\}?|°)\s*(?:\\(?:mathrm|text|rm)\s*\{\s*C\s*\}|C(?![A-Za-z]))"
# Astronomical units pint does not define (HiPhO uses them as answer units).
_EXTRA = ("solar_mass = 1.98847e30 * kilogram = M_sun", "solar_radius = 6.957e8 * meter = R_sun",
          "solar_luminosity = 3.828e26 * watt = L_sun")
_LATEX_UNITS = [(r"M_\{?\\odot\}?", "M_sun"), (r"R_\{?\\odot\}?", "R_sun"), (r"L_\{?\\odot\}?", "L_sun"),
                (r"\\Omega|\\ohm", "Ω"), (r"\\mu\s*", "µ"), (r"μ", "µ"), (r"\\AA", "Å"),
                (_DEG_C, " degC"), (_DEG_C.replace("C", "F"), " degF"),
                (r"\^\s*\{?\s*\\circ\s*\}?|°", " degree"), (r"\\%|%", " percent"),
                (r"(?<![A-Za-z])pct(?![A-Za-z])", " percent")]  # pint reads "pct" as pico-carats

# Letters that name a physical constant more often than a unit when written bare after a number
# ("\frac{5}{2} R" is the gas constant, not roentgen; "2 c" twice the speed of light, "3 k"): symbols.
# (G may be gauss and h hours: those stay units.)
_NOT_BARE_UNITS = frozenset({"R", "c", "k"})

_REGISTRY = []  # one pint registry per process (created on first use: ~0.2 s)


_UNITISH = re.compile(r"\\(?:mathrm|text|textbf|rm|mu|Omega|AA|circ)(?![A-Za-z])|°|%|\d\s*[A-Za-zµμΩÅ]")


def may_have_unit(text):
    """Cheap: could ``text`` carry a unit? (Then create the registry before forking steps, so
    they inherit it instead of each building one.)"""
    return bool(_UNITISH.search(text or ""))


def registry():
    if not _REGISTRY:
        import pint
        ureg: Any = pint.UnitRegistry()
        for line in _EXTRA:
            ureg.define(line)
        _REGISTRY.append(ureg)
    return _REGISTRY[0]


def to_pint(unit):
    """LaTeX/plain unit text -> a pint expression, or None when pint cannot read it."""
    if not unit or not unit.strip():
        return None
    s = unit.strip().strip("$").strip()
    s = re.sub(r"\\(?:mathrm|text|rm)\s*\{\s*\\mu\s*\}", r"\\mu ", s)
    s = re.sub(r"\\mu\s*\\(mathrm|text|rm)\s*\{", r"\\\1{\\mu ", s)  # \mu\mathrm{m}: one unit
    for pat, rep in _LATEX_UNITS:
        s = re.sub(pat, rep, s)
    s = re.sub(r"\\(?:mathrm|text|textrm|textbf|mathit|rm|operatorname|mbox|textnormal)\s*\{", "{", s)
    s = s.replace("\\cdot", "*").replace("\\times", "*")
    s = re.sub(r"\\[,;:! ]|~", " ", s)
    if "\\" in s:
        return None
    s = re.sub(r"\^\s*\{\s*([+-]?\s*[\d.]+)\s*\}", r"^\1", s).replace(" ", " ")
    s = s.replace("{", " ( ").replace("}", " ) ")
    s = re.sub(r"\s*\^\s*", "**", s)
    s = re.sub(r"\s*([*/])\s*", r"\1", s.strip())
    s = re.sub(r"\(\s*", "(", re.sub(r"\s*\)", ")", s))
    s = re.sub(r"(?<=[\w)])\s+(?=[\w(])", "*", s).replace(" ", "")
    if not s or not re.fullmatch(r"[A-Za-zµΩÅ_*/.()\d+-]+", s):
        return None
    try:
        registry().parse_units(s)
    except Exception:  # noqa: BLE001 - pint raises several kinds of errors for unknown units
        # a unit named as a word with a capital (Tesla, Joule, Kelvin): pint knows it in lower case
        lower = re.sub(r"(?<![A-Za-z])([A-Z][a-z]{2,})(?![A-Za-z])", lambda m: m.group(1).lower(), s)
        if lower == s:
            return None
        try:
            registry().parse_units(lower)
        except Exception:  # noqa: BLE001
            return None
        return lower
    return s


def split_unit(s, hints=()):
    """(value, unit, marked): ``unit`` None when ``s`` ends with no unit pint reads."""
    text = s.rstrip()
    for hint in hints:  # the problem's own unit, written the same way
        h = (hint or "").strip().strip("$").strip()
        if h and text.endswith(h) and len(text) > len(h) and to_pint(h) is not None:
            value = text[: -len(h)].rstrip()
            if value and not value.endswith(("_", "^", "\\")):
                return value, h, True
    atoms = []  # (start, marked)
    end = len(text)
    while True:
        head = text[:end]
        m = _MARKED_ATOM.search(head)
        marked = True
        if not m:
            m = _PLAIN_ATOM.search(head)
            marked = False
        if not m or m.start() == 0:
            break
        atoms.append((m.start(), marked))
        sep = _SEP.search(text[:m.start()])
        end = sep.start() if sep else m.start()
        if not sep:
            break
    # the longest trailing run that pint reads, leaving a value in front of it
    for k in range(len(atoms), 0, -1):
        start = atoms[k - 1][0]
        value, unit = text[:start].rstrip(), text[start:].strip()
        value = re.sub(r"(?:\\cdot|\\times|\*)$", "", value).rstrip()
        if not value or value.endswith(("_", "^", "\\", "{", "(")):
            continue
        all_marked = all(mk for _, mk in atoms[:k])
        if not all_marked and (not _NUMBER.match(value) or unit in _NOT_BARE_UNITS):
            continue
        if to_pint(unit) is not None:
            return value, unit, all_marked
    return s, None, False


def is_offset(unit):
    p = to_pint(unit)
    return bool(p) and p.strip() in ("degC", "degF")


def factor(from_unit, to_unit):
    """(factor, reason): ``value [from] * factor = value [to]`` as a SymPy number, or (None, why not)."""
    import sympy as sp

    a, b = to_pint(from_unit), to_pint(to_unit)
    if a is None or b is None:
        same = _norm(from_unit) == _norm(to_unit)
        return (sp.Integer(1), "") if same else (None, f"the units {from_unit!r} and {to_unit!r} cannot be compared")
    ureg = registry()
    try:
        f = ureg.Quantity(1, a).to(b).magnitude
    except Exception:  # noqa: BLE001 - pint.DimensionalityError and offset-unit errors
        try:
            da, db = ureg.parse_units(a).dimensionality, ureg.parse_units(b).dimensionality
            return None, f"unit {pretty(from_unit)} ({_dim(da)}) is not convertible to {pretty(to_unit)} ({_dim(db)})"
        except Exception:  # noqa: BLE001
            return None, f"unit {pretty(from_unit)} is not convertible to {pretty(to_unit)}"
    return exact_factor(sp, f), ""


def convert_number(value, from_unit, to_unit):
    """A plain number in an offset unit (degC) converted by pint; None when it cannot be."""
    try:
        ureg = registry()
        return float(ureg.Quantity(value, to_pint(from_unit)).to(to_pint(to_unit)).magnitude)
    except Exception:  # noqa: BLE001
        return None


def exact_factor(sp, f):
    from fractions import Fraction

    f = float(f)
    if f == 1.0:
        return sp.Integer(1)
    for unit_of_angle in (sp.pi / 180, 180 / sp.pi):  # degree <-> radian: exactly pi/180
        ratio = Fraction(f / float(unit_of_angle)).limit_denominator(1000)
        if ratio and abs(float(ratio) * float(unit_of_angle) - f) <= 1e-13 * abs(f):
            return sp.Rational(ratio.numerator, ratio.denominator) * unit_of_angle
    simple = Fraction(f).limit_denominator(1000)
    if simple and abs(float(simple) - f) <= 1e-13 * abs(f):  # 1/60, 1/3600
        return sp.Rational(simple.numerator, simple.denominator)
    short = float(f"{f:.12g}")
    if short != 0 and abs(short - f) <= 1e-14 * abs(f):
        return sp.Rational(repr(short))
    return sp.Float(f, 17)


def pretty(unit):
    """The unit as pint writes it (``kilometer / second``), for reasons and normalised answers."""
    p = to_pint(unit)
    if p is None:
        return (unit or "").strip()
    try:
        return f"{registry().parse_units(p):~}" or p
    except Exception:  # noqa: BLE001
        return p


def _dim(d):
    text = str(d)
    if text in ("", "dimensionless"):
        return "dimensionless"
    return text.replace("[", "").replace("]", "").replace(" ** ", "^").replace(" * ", "·").replace(" / ", "/")


def _norm(u):
    return re.sub(r"\s+|\\[,;: ]|[{}$]", "", u or "")
