"""Physics-aware LaTeX answers -> SymPy (runs in the sandbox; also imported in-process by tests).

Math-Verify's parser (``latex2sympy2_extended``, with Math-Verify's ``NormalizationConfig``) does
the parsing. Around it, what physics needs and Math-Verify gets wrong for physics:

* symbols: every subscripted, primed, starred, decorated (``\\hat``, ``\\vec``, ``\\dot``...) or
  multi-letter (``\\mathrm{Re}``) symbol is protected as one named symbol before parsing
  (``E_n``, ``m_{\\mathrm{e}}``, ``x'``, ``W^{\\star}_{pr}``; the parser rejects ``E_{n}`` and drops
  primes), with canonical names (``\\varepsilon`` = ``\\epsilon``, ``m_{\\mathrm{e}}`` = ``m_e``);
  ``E``, ``I``, ``\\gamma`` and ``\\Gamma`` are symbols (not Euler's e, i, the Euler-Mascheroni constant);
* ``e`` is the elementary charge, except ``\\mathrm{e}``, ``\\exp`` and ``e^{...}`` with an exponent
  that is not a plain positive integer (``e^{-x/a}``, ``e^{i\\omega t}``); ``i``/``\\mathrm{i}`` is the
  imaginary unit; ``\\log`` without a base is the natural log; juxtaposition is multiplication
  (``2\\frac{1}{2}`` is 1, not the mixed fraction the parser makes; ``m_e(c+v)`` is a product);
* numbers: thousands separators (``7,425,000``, ``1\\,000``, ``1{,}000``, ``11,\\!111``), ``1.6e-19``,
  clock times (``12:00``), ``\\gg``/``\\ll``; ``3 \\text{ and } 5`` is a list, ``\\boxed{\\approx 0.35}`` a value;
* ``\\mathbf{J_0}`` is ``\\mathbf{J}_0``; a derivative at a constant quantity (``(\\partial Q/\\partial p)_T``,
  ``\\left.\\frac{\\partial Q}{\\partial p}\\right|_T``) is one symbol;
* units are split off (``units.split_unit``) and checked separately with pint;
* relations: ``a = b = c`` and ``exact \\approx 0.785`` are split at the top level; a left side
  that names a quantity (a symbol, ``v_c(r)``, or an expression in other quantities than its
  non-zero value: ``E_\\gamma - B = 5``, ``|AB| = 1``, ``(p, q) = (3, 2)``) is a label, anything else
  keeps the answer an equation; ``n > \\sqrt2 = 1.414`` is the inequality with its bound's value;
* a parse that lost a symbol of the source is a parse failure, never a smaller expression.

``parse_answer(text)`` returns ``{"ok", "error", "parts": [part, ...]}``; a part is a dict of JSON
trees and strings (see ``_part``) that crosses process boundaries as JSON.
"""

import re

from . import tree as T
from .units import pretty as pretty_unit, split_unit, to_pint

MAX_CHARS = 4000

GREEK = """alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa varkappa lambda
mu nu xi omicron rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta
Lambda Xi Pi Sigma Upsilon Phi Psi Omega hbar ell""".split()
VARIANT = {"varepsilon": "epsilon", "vartheta": "theta", "varphi": "phi", "varrho": "rho",
           "varsigma": "sigma", "varkappa": "kappa"}
DECORATIONS = {"hat": "hat", "widehat": "hat", "vec": "vec", "overrightarrow": "vec", "mathbf": "vec",
               "boldsymbol": "vec", "bm": "vec", "bar": "bar", "overline": "bar", "tilde": "tilde",
               "widetilde": "tilde", "dot": "dot", "ddot": "ddot", "mathcal": "cal", "mathscr": "cal",
               "check": "check", "breve": "breve", "mathit": ""}
TEXT_CMDS = ("mathrm", "text", "textrm", "textit", "textnormal", "mathsf", "operatorname", "mbox", "rm", "textbf",
             "textsf", "mathtt", "texttt")
LABEL_SUP = {"*": "*", "\\star": "*", "\\ast": "*", "\\dagger": "dagger", "\\prime": "'", "'": "'",
             "\\circ": "circ"}
FUNCTION_WORDS = {"sin", "cos", "tan", "cot", "sec", "csc", "sinh", "cosh", "tanh", "coth", "exp", "ln",
                  "log", "arcsin", "arccos", "arctan", "max", "min", "det"}
UNICODE = {"\u2212": "-", "\u00d7": "\\times ", "\u00b7": "\\cdot ", "\u22c5": "\\cdot ", "\u03c0": "\\pi ",
           "\u2248": "\\approx ", "\u2243": "\\simeq ", "\u00b1": "\\pm ", "\u2213": "\\mp ", "\u2264": "\\le ",
           "\u2265": "\\ge ", "\u221e": "\\infty ", "\u221a": "\\sqrt ", "\u210f": "\\hbar ",
           "\u27e8": "\\langle ", "\u27e9": "\\rangle ",
           "\u2009": " ", "\u202f": " ", "\u00a0": " "}
_GREEK_CHARS = dict(zip("αβγδεζηθικλμνξρστυφχψωΓΔΘΛΞΠΣΥΦΨΩ",
                        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi rho sigma "
                        "tau upsilon phi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi "
                        "Omega".split()))


class ParseError(Exception):
    """The answer cannot be read; the message says why (one line)."""


# ----------------------------------------------------------------------------- clean-up


def _unicode(s):
    for k, v in UNICODE.items():
        s = s.replace(k, v)
    for k, v in _GREEK_CHARS.items():
        s = s.replace(k, f"\\{v} ")
    return s


def basic_clean(s):
    """Delimiters, spacing commands, ``\\left``/``\\right``, ``\\displaystyle``, trailing punctuation."""
    s = _unicode(s.strip()).replace("\\\\", "\x00")  # matrix row separators survive
    s = s.replace("$", " ").strip()
    m = re.match(r"\\(?:boxed|fbox)\s*(?=\{)", s)
    if m:  # a box around the whole answer
        inner, end = _read_group(s, m.end())
        if end == len(s):
            s = inner
    s = re.sub(r"\\[\[\]()]", " ", s)
    s = re.sub(r"(?<=\d),\s*\\!\s*(?=\d{3})", ",", s)  # 11,\!111,\!100
    # a number inside the text of its unit: \text{8 minutes} -> 8 \text{minutes}
    s = re.sub(r"\\(?:text|textrm|textbf|mathrm|mbox)\s*\{\s*([+-]?\d+(?:\.\d+)?)\s*([A-Za-z%][A-Za-z %.]*?)\s*\}",
               r"\1\\,\\text{\2}", s)
    s = re.sub(r"\\(?:displaystyle|textstyle|limits|nolimits)(?![A-Za-z])", " ", s)
    s = re.sub(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg)(?![A-Za-z])\s*(\\?[(){}\[\]|.]|\\[lr]?[vV]ert|\\[lr]angle)?",
               lambda m: "" if (m.group(1) or "") == "." else (m.group(1) or ""), s)
    s = re.sub(r"\\(?:lvert|rvert|vert)(?![A-Za-z])", "|", s)
    s = re.sub(r"\\[,;:!>]|\\ |~|\\(?:quad|qquad|enspace|thinspace)(?![A-Za-z])", " ", s)
    s = re.sub(r"\\(?:gg|gtrsim|gtrapprox)(?![A-Za-z])", ">", s)
    s = re.sub(r"\\(?:ll|lesssim|lessapprox)(?![A-Za-z])", "<", s)
    s = re.sub(r"\\(?:leq|leqslant|le)(?![A-Za-z])", r"\\le ", s)
    s = re.sub(r"\\(?:geq|geqslant|ge)(?![A-Za-z])", r"\\ge ", s)
    s = re.sub(r"\\(?:dfrac|tfrac|cfrac)(?![A-Za-z])", r"\\frac", s)
    # "200 \textHz": a unit written after \text without braces
    s = re.sub(r"\\text(?!rm|bf|it|normal|sf|tt|style|up|sc|md|sl)([A-Za-z]{1,4})(?![A-Za-z{])", r"\\text{\1}", s)
    s = re.sub(r"\\lt(?![A-Za-z])", "<", re.sub(r"\\gt(?![A-Za-z])", ">", s))
    s = re.sub(r">=", r"\\ge ", re.sub(r"(?<![\\])<=", r"\\le ", re.sub(r"!=", r"\\neq ", s)))  # ASCII relations
    # v^2_0 is v_0^2 (the parser reads a subscript before a power only)
    s = re.sub(r"(?<![A-Za-z\\])([A-Za-z]|\\[A-Za-z]+)\s*\^\s*(\{[^{}]*\}|[A-Za-z0-9])\s*_\s*(\{[^{}]*\}|[A-Za-z0-9])",
               r"\1_\3^\2", s)
    # a matrix written as an array between brackets: \left[\begin{array}{cc} ... \end{array}\right]
    s = re.sub(r"\\begin\s*\{array\}\s*\{[lcr|\s]*\}", r"\\begin{matrix}", s).replace("\\end{array}", "\\end{matrix}")
    s = re.sub(r"\[\s*\\begin\{matrix\}(.*?)\\end\{matrix\}\s*\]", r"\\begin{bmatrix}\1\\end{bmatrix}", s, flags=re.S)
    s = re.sub(r"\(\s*\\begin\{matrix\}(.*?)\\end\{matrix\}\s*\)", r"\\begin{pmatrix}\1\\end{pmatrix}", s, flags=re.S)
    s = _sqrt_parens(s)
    s = re.sub(r"\s+", " ", s).strip().replace("\x00", " \\\\ ")
    # "3 \text{ and } 5", "x = 1 or x = -1": a list; "\approx 0.35": the value
    s = re.sub(r"\s*\\(?:text|textrm|mathrm)\s*\{\s*(?:and|or)\s*\}\s*|\s+(?:and|or)\s+", ", ", s)
    s = re.sub(r",\s*,", ",", s)  # "19, 46, and 82"
    s = re.sub(r"^(?:\\approx|\\simeq|\\sim|=)(?![A-Za-z])\s*", "", s)
    return s.rstrip(".;, ").strip()


def _sqrt_parens(s):
    """``\\sqrt(L/g)`` (how ``√(L/g)`` arrives) is ``\\sqrt{L/g}``: the parser reads a root's argument
    in braces only. The parentheses are balanced; an unbalanced one is left for the parser to refuse."""
    out, i = [], 0
    for m in re.finditer(r"\\sqrt\s*\(", s):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(s) and depth:
            depth += {"(": 1, ")": -1}.get(s[j], 0)
            j += 1
        if depth:
            break
        out.append(s[i:m.start()] + "\\sqrt{" + _sqrt_parens(s[m.end():j - 1]) + "}")
        i = j
    return "".join(out) + s[i:]


def _numbers(s):
    """Thousands separators, clock times and e-notation written as LaTeX the parser reads."""
    # a clock time h:mm (minutes with a leading 0, or h:mm:ss) is hours; "11:21" stays a ratio
    s = re.sub(r"(?<![\d.:])(\d{1,2}):(0\d)(?::(\d\d))?(?![\d:])",
               lambda m: f"({m.group(1)}" + (f" + \\frac{{{int(m.group(2))}}}{{60}}" if int(m.group(2)) else "")
                         + (f" + \\frac{{{int(m.group(3))}}}{{3600}}" if m.group(3) and int(m.group(3)) else "") + ")", s)
    s = re.sub(r"(?<=\d)\{,\}(?=\d{3}(?!\d))", "", s)
    s = re.sub(r"(\d)\{,\}(\d)", r"\1.\2", s)  # decimal comma: 3{,}14
    s = re.sub(r"(?<![\d.])([1-9]\d{0,2})((?:(?: |\\,|,)\d{3})+)(?=\.\d|(?![\d.]|,\d))",
               lambda m: m.group(1) + re.sub(r"[ ,\\]", "", m.group(2))
               if (" " in m.group(2) or len(m.group(2)) >= 8 or not _looks_like_list(s, m)) else m.group(0), s)
    s = re.sub(r"(?<![A-Za-z\\\d.])(\d+\.?\d*|\.\d+)[eE]([+-]?\d+)(?![A-Za-z\d])", r"\1\\times 10^{\2}", s)
    s = re.sub(r"(\d)\s*(?=\\frac)", r"\1\\cdot ", s)  # 2\frac{1}{2} is a product in physics
    return s


def _looks_like_list(s, m):
    """``1,000`` alone is a thousand; inside ``(1,000, 2)`` or ``\\{1,000\\}`` it is a list."""
    return bool(re.search(r"[({\[]", s[:m.start()])) or "," in s[m.end():]


# -------------------------------------------------------------------- symbol protection


def _read_group(s, i):
    """(content, end) of the argument starting at ``s[i]``: a braced group, a command or a char."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] == "{":
        depth, j = 1, i + 1
        while j < len(s) and depth:
            if s[j] == "\\":
                j += 2
                continue
            depth += {"{": 1, "}": -1}.get(s[j], 0)
            j += 1
        return s[i + 1:j - 1], j
    if s[i] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", s[i:])
        assert m is not None, "a backslash ends the text"
        return m.group(0), i + len(m.group(0))
    return s[i], i + 1


def canonical_text(t):
    """A readable name for subscript/label content: ``\\mathrm{pr}`` -> ``pr``, ``\\ell`` -> ``ell``."""
    t = re.sub(r"\\(?:" + "|".join(TEXT_CMDS) + r")\s*\{([^{}]*)\}", r"\1", t)
    t = re.sub(r"\\([A-Za-z]+)", lambda m: VARIANT.get(m.group(1), m.group(1)), t)
    t = t.replace("{", "").replace("}", "").replace(" ", "")
    return t


class _Protector:
    """Replaces compound symbols by ``\\variable{zqN}`` placeholders the parser reads as one symbol."""

    def __init__(self, derivative_context):
        self.names = {}  # placeholder -> canonical symbol name
        self.consts = {}  # placeholder -> "E" (Euler's number) or "I" (imaginary unit)
        self.plain = set()  # single letters / Greek names left to the parser
        self.derivative_context = derivative_context

    def placeholder(self, name, const=False):
        key = f"zq{len(self.names) + len(self.consts)}q"
        (self.consts if const else self.names)[key] = name
        return f"\\variable{{{key}}}"

    def run(self, s):
        out, i, n, pending = [], 0, len(s), ""
        while i < n:
            ch = s[i]
            if ch == "\\":
                m = re.match(r"\\([A-Za-z]+)", s[i:])
                if not m:
                    out.append(s[i:i + 2])
                    i += 2
                    continue
                cmd, j = m.group(1), i + len(m.group(0))
                if cmd in ("begin", "end", "variable"):  # environment names, placeholders
                    arg, j = _read_group(s, j)
                    out.append(f"\\{cmd}{{{arg}}}")
                    i = j
                    continue
                if cmd == "langle":  # an expectation value <E>, <x^2>, <(Delta x)^2>: one quantity
                    close = _matching_rangle(s, j)
                    if close is None:
                        raise ParseError("a \\langle without its \\rangle in the answer")
                    base, kind = _expectation_name(s[j:close]), "word"
                    j = close + len("\\rangle")
                elif cmd in TEXT_CMDS:
                    arg, j = _read_group(s, j)
                    word = canonical_text(arg)
                    if word == "e":
                        base, kind = "E", "const"
                    elif word == "i":
                        base, kind = "I", "const"
                    elif word == "d" and self.derivative_context:
                        out.append(" d ")
                        i = j
                        continue
                    elif word in FUNCTION_WORDS:
                        out.append(f"\\{word} ")
                        i = j
                        continue
                    elif not word:
                        i = j
                        continue
                    elif re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", arg):
                        # a phrase ("\text{is impossible here}") is words, not the name of a quantity
                        raise ParseError(f"cannot read the text {arg.strip()[:40]!r} in the answer")
                    elif re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", word):
                        base, kind = word, "word"
                    elif re.fullmatch(r"\(([A-Za-z])\)", word):  # \text{(a)}: an option's letter
                        base, kind = word[1], "word"
                    else:
                        raise ParseError(f"cannot read the text {arg.strip()[:40]!r} in the answer")
                elif cmd in DECORATIONS:
                    arg, j = _read_group(s, j)
                    inner = canonical_text(_strip_outer(arg))
                    deco = DECORATIONS[cmd]
                    inner, _, pending = inner.partition("_")  # \mathbf{J_0} is \mathbf{J}_0
                    base, kind = (f"{deco}{{{inner}}}" if deco else inner), "word"
                elif cmd == "imath" or cmd == "jmath":
                    base, kind = "I", "const"
                elif cmd in ("Delta", "delta") and re.match(r"\s*(?:[A-Za-z](?![A-Za-z])|\\(?:" + "|".join(GREEK) + r")(?![A-Za-z]))", s[j:]):
                    # \Delta E_F, \delta x: the change of a quantity is one symbol (DeltaE_F)
                    nxt = re.match(r"\s*([A-Za-z]|\\[A-Za-z]+)", s[j:])
                    assert nxt is not None  # the condition above matched it
                    inner = VARIANT.get(nxt.group(1).lstrip("\\"), nxt.group(1).lstrip("\\"))
                    base, kind, j = cmd + inner, "word", j + nxt.end()
                elif cmd in GREEK:
                    base, kind = VARIANT.get(cmd, cmd), "greek"
                else:
                    out.append(m.group(0))
                    i = j
                    continue
            elif ch.isalpha() and ch.isascii():
                base, kind, j = ch, "letter", i + 1
            else:
                out.append(ch)
                i += 1
                continue
            name, j, compound = self._suffixes(s, j, base, pending or None)
            pending = ""
            out.append(self._emit(s, j, name, base, kind, compound))
            i = j
        return "".join(out)

    def _suffixes(self, s, j, base, sub=None):
        """Primes, one subscript and one label superscript (``*``, ``\\star``, ``\\dagger``, ``\\prime``)."""
        primes, label = 0, None
        while j < len(s):
            k = j
            while k < len(s) and s[k] == " ":
                k += 1
            if k < len(s) and s[k] == "'":
                primes += 1
                j = k + 1
                continue
            if k < len(s) and s[k] == "_" and sub is None:
                arg, j = _read_group(s, k + 1)
                sub = canonical_text(arg)
                continue
            if k < len(s) and s[k] == "^":
                arg, e = _read_group(s, k + 1)
                marks = arg.replace(" ", "")
                kinds = re.findall(r"\\prime|\\star|\\ast|\\dagger|\*|'", marks)
                if kinds and "".join(kinds) == marks and label is None:
                    for kd in kinds:
                        if LABEL_SUP[kd] == "'":
                            primes += 1
                        else:
                            label = LABEL_SUP[kd]
                    j = e
                    continue
            break
        name = base + "'" * primes + (f"_{sub}" if sub else "") + (f"^{label}" if label else "")
        return name, j, bool(sub or primes or label)

    def _emit(self, s, j, name, base, kind, compound):
        if kind == "const":
            return self.placeholder(base, const=True)
        if compound or kind == "word" or base in ("E", "I"):
            return self.placeholder(name) + _times_if_paren(s, j)
        if kind == "greek":
            if base in ("Gamma", "zeta") and not compound and re.match(r"\(", s[j:]):
                return f"\\{base}"  # \Gamma(3), \zeta(3): the functions
            # a symbol always (the parser makes \gamma and \Gamma the Euler-Mascheroni constant)
            return self.placeholder(base) + _times_if_paren(s, j)
        if base == "e":  # Euler's e only as e^{...} with a non-integer exponent
            m = re.match(r"\s*\^", s[j:])
            if m:
                exponent, _ = _read_group(s, j + m.end())
                if not re.fullmatch(r"\s*\d+\s*", exponent):
                    return " e"
            return self.placeholder("e")
        if base == "i":
            return self.placeholder("I", const=True)
        if base == "d" and not self.derivative_context:
            return self.placeholder("d")
        self.plain.add(base)
        return base


def _expectation_name(inner):
    """``<x^2>``, ``<(DeltaE)^2>``: ``\\langle (E - \\langle E \\rangle)^2 \\rangle`` is ``<(DeltaE)^2>`` (the
    spread about the mean has one name however it is written)."""
    inner = re.sub(r"\\langle(?![A-Za-z])", "<", re.sub(r"\\rangle(?![A-Za-z])", ">", inner))
    name = canonical_text(inner).replace("\\", "")
    name = re.sub(r"\(([A-Za-z][A-Za-z0-9_]*)-<\1>\)", r"(Delta\1)", name)
    return f"<{name}>"


def _matching_rangle(s, j):
    """Index of the ``\\rangle`` closing a ``\\langle`` whose content starts at ``j`` (nested pairs
    allowed), or None."""
    depth = 1
    for m in re.finditer(r"\\([lr])angle(?![A-Za-z])", s[j:]):
        depth += 1 if m.group(1) == "l" else -1
        if not depth:
            return j + m.start()
    return None


def _strip_outer(arg):
    return arg[1:-1] if arg.startswith("{") and arg.endswith("}") else arg


def _times_if_paren(s, j):
    """``m_e(c + v)`` is a product: make it explicit (the parser would read a function call)."""
    return " \\cdot " if re.match(r"\s*\(", s[j:]) else " "


# ---------------------------------------------------------------------------- parsing


def _split_top(s, seps):
    """Split ``s`` at top-level occurrences of the regex ``seps`` (not inside (), [], {})."""
    parts, depth, last, i = [], 0, 0, 0
    pattern = re.compile(seps)
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif depth == 0:
            m = pattern.match(s, i)
            if m and m.end() > i:
                parts.append((s[last:i], m.group(0)))
                last = i = m.end()
                continue
        i += 1
    parts.append((s[last:], None))
    return parts


_INEQUALITY = r"\\le(?![A-Za-z])|\\ge(?![A-Za-z])|\\leq(?![A-Za-z])|\\geq(?![A-Za-z])|\\lt(?![A-Za-z])|\\gt(?![A-Za-z])|<|>"
_RELATION_SPLIT = r"(?<![<>!\\])=(?!=)|\\in(?![A-Za-z])|\\approx(?![A-Za-z])|\\simeq(?![A-Za-z])|\\cong(?![A-Za-z])|\\equiv(?![A-Za-z])"


_VAR = r"(?:\\[A-Za-z]+|[A-Za-z])(?:\s*_\s*(?:\{[^{}]*\}|\\?[A-Za-z0-9]))?"
_HOLD = r"\s*_\s*(\{[^{}]*\}|\\?[A-Za-z0-9])"
# A derivative at a constant quantity: (\partial Q/\partial p)_T, \left(\frac{\partial Q}{\partial p}\right)_T,
# \left.\frac{\partial Q}{\partial p}\right|_T -- one quantity of its own, named (dQ/dp)_T.
_HELD = re.compile(r"\(\s*\\partial\s*(" + _VAR + r")\s*/\s*\\partial\s*(" + _VAR + r")\s*\)" + _HOLD
                   + r"|\(\s*\\frac\s*\{\s*\\partial\s*(" + _VAR + r")\s*\}\s*\{\s*\\partial\s*(" + _VAR + r")\s*\}\s*\)" + _HOLD
                   + r"|\\frac\s*\{\s*\\partial\s*(" + _VAR + r")\s*\}\s*\{\s*\\partial\s*(" + _VAR + r")\s*\}\s*\|" + _HOLD)


_DIFF = r"(?:d|\\mathrm\s*\{\s*d\s*\}|\\partial)"
_ORDER = r"(?:\s*\^\s*\{?\s*(\d)\s*\}?)?"
# A derivative of one quantity by another written as a fraction, \frac{d\sigma}{d\Omega}, \frac{dN}{dE},
# \frac{\partial^2 \psi}{\partial x^2}: one quantity (the name SymPy's own Derivative gets, below).
_PLAIN_DERIVATIVE = re.compile(r"\\frac\s*\{\s*" + _DIFF + _ORDER + r"\s*(" + _VAR + r")\s*\}\s*\{\s*" + _DIFF
                               + r"\s*(" + _VAR + r")" + _ORDER + r"\s*\}")


def _plain_derivatives(s, prot):
    def name(m):
        order, q, v, order2 = m.group(1), canonical_text(m.group(2)), canonical_text(m.group(3)), m.group(4)
        if (order or "1") != (order2 or "1"):
            return m.group(0)
        n = int(order or 1)
        return prot.placeholder(f"d{'^' + str(n) if n > 1 else ''}{q}/d{v}" + (f"^{n}" if n > 1 else "")) + " "
    return _PLAIN_DERIVATIVE.sub(name, s)


def _held_derivatives(s, prot):
    def name(m):
        g = [x for x in m.groups() if x is not None]
        q, v, held = (canonical_text(x) for x in g)
        return prot.placeholder(f"(d{q}/d{v})_{held}") + " "
    return _HELD.sub(name, s)


def _parse_latex(s):
    """One relation-free piece (or inequality) -> SymPy, with placeholders resolved."""
    import sympy as sp
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig
    from math_verify import LatexNormalizationConfig

    s = _numbers(s)
    s = re.sub(r"\\log(?![A-Za-z_])", r"\\ln", s)  # no base: the natural log
    derivative = bool(re.search(r"\\frac\s*\{\s*(?:\\mathrm\{d\}|d|\\partial)|\\int|\\partial|\\mathrm\{d\}", s))
    prot = _Protector(derivative)
    body = prot.run(_plain_derivatives(_held_derivatives(s, prot), prot))
    config = LatexNormalizationConfig(basic_latex=True, units=False, malformed_operators=True, nits=False,
                                      boxed="none", equations=False)
    try:
        value = latex2sympy(body, normalization_config=config, is_real=None,
                            conversion_config=ConversionConfig(lowercase_symbols=False,
                                                               interpret_as_mixed_fractions=False))
    except Exception as exc:  # noqa: BLE001 - the parser raises bare Exceptions
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParseError(f"cannot parse {s[:120]!r} ({first[:80]})") from None
    if value is None:
        raise ParseError(f"cannot parse {s[:120]!r}")
    return _resolve(sp, value, prot, s)


def _resolve(sp, value, prot, source):
    from sympy.core.function import AppliedUndef

    mapping = {sp.Symbol(key): sp.Symbol(name) for key, name in prot.names.items()}
    mapping.update({sp.Symbol(key): (sp.E if c == "E" else sp.I) for key, c in prot.consts.items()})
    for old, new in VARIANT.items():
        mapping[sp.Symbol(old)] = sp.Symbol(new)
    value = _plain_sympy(sp, value, source)
    present = set()
    if isinstance(value, (sp.Basic, sp.MatrixBase)):
        present = {str(x) for x in getattr(value, "free_symbols", set())}
        present |= {type(f).__name__ for f in value.atoms(AppliedUndef)}
        present |= {str(v) for d in value.atoms(sp.Derivative) for v in (d.expr, *d.variables)}
    lost = [name for key, name in prot.names.items() if key not in present]
    bound = re.search(r"\\(?:int|sum|prod|lim)|\\frac\s*\{\s*d", source)
    if not bound:
        lost += sorted(p for p in prot.plain if p not in present and p not in ("pi", "infty") and p != "Pi")
    if lost:
        raise ParseError(f"the parser dropped {', '.join(dict.fromkeys(lost))} from {source[:100]!r}")
    value = value.xreplace(mapping) if mapping else value
    return _derivatives_as_symbols(sp, value)


def _plain_sympy(sp, value, source):
    """latex2sympy's own FiniteSet/And subclasses -> SymPy's (the answer tree accepts exact classes
    only); a bare comma list keeps its order (a tuple), braces and +- make a set; unevaluated
    percent factors evaluate."""
    from latex2sympy2_extended.logic import And as L2SAnd
    from latex2sympy2_extended.sets import FiniteSet as L2SSet

    def conv(x):
        if isinstance(x, sp.MatrixExpr) and not isinstance(x, sp.MatrixBase):
            # a matrix inside an expression, \frac{\hbar}{2}\begin{pmatrix}...\end{pmatrix}: the matrix it is
            try:
                x = sp.ImmutableMatrix(x.doit())
            except Exception:  # noqa: BLE001 - left as it is: the answer tree refuses it with its reason
                return x
        if isinstance(x, L2SSet):
            items = [conv(a) for a in getattr(x, "_unsorted_args", x.args)]
            pairs = [sp.Tuple(a.start, a.end) if isinstance(a, sp.Interval) and a.left_open and a.right_open
                     and not {a.start, a.end} & {sp.oo, -sp.oo} else a for a in items]
            if re.search(r"\\\{|\\pm|\\mp", source):
                return sp.FiniteSet(*pairs)
            if len(pairs) > 1 and all(isinstance(a, sp.Tuple) and len(a) == len(pairs[0]) > 1 for a in pairs):
                return sp.FiniteSet(*pairs)  # "(1, 2), (3, 4)": the solutions, in any order
            return sp.Tuple(*items)
        if isinstance(x, L2SAnd):
            return sp.And(*[conv(a) for a in getattr(x, "_unsorted_args", x.args)], evaluate=False)
        if isinstance(x, sp.MatrixBase):
            return sp.ImmutableMatrix(x.applyfunc(conv))
        if isinstance(x, sp.UnevaluatedExpr):
            return conv(x.args[0])
        if isinstance(x, sp.Basic) and x.args:
            args = [conv(a) for a in x.args]
            if any(a is not b for a, b in zip(args, x.args)):
                try:
                    return x.func(*args)
                except Exception:  # noqa: BLE001
                    return x
        return x

    return conv(value)


def _derivatives_as_symbols(sp, value):
    """``d varphi / d r`` of a plain symbol is an unknown quantity of its own: a symbol named
    ``dvarphi/dr`` (SymPy would call it 0, and it cannot be evaluated at points)."""
    if not isinstance(value, sp.Basic):
        return value
    reps = {}
    for d in value.atoms(sp.Derivative):
        if d.expr.is_Symbol:
            wrt = "".join(f"d{v}" + (f"^{n}" if n > 1 else "") for v, n in d.variable_count)
            order = sum(n for _, n in d.variable_count)
            reps[d] = sp.Symbol(f"d{'^' + str(order) if order > 1 else ''}{d.expr}/{wrt}")
    return value.xreplace(reps) if reps else value


# ------------------------------------------------------------------------------ answers

TEXT_ANSWERS = {"none", "no solution", "undefined", "does not exist", "dne", "yes", "no", "true", "false"}
_SYMBOL_TOKEN = (r"(?:\\(?:" + "|".join(list(DECORATIONS) + list(TEXT_CMDS)) + r")\s*\{[^{}]*\}|\\[A-Za-z]+|[A-Za-z])"
                 r"(?:\s*'|\s*_\s*(?:\{(?:[^{}]|\{[^{}]*\})*\}|\\?[A-Za-z0-9])"
                 r"|\s*\^\s*\{?\s*(?:\\star|\\ast|\\dagger|\\prime|\*)\s*\}?)*")
_FUNCTION_LABEL = re.compile(r"^\s*(" + _SYMBOL_TOKEN + r")\s*\(\s*[^()]*\)\s*$")
_APPROX_OPS = ("\\approx", "\\simeq", "\\cong")


def parse_answer(text, unit_hints=()):
    """``{"ok", "error", "parts"}`` for one written answer (a box's content or a final-answer line).
    Several parts when the answer labels several quantities (``x = 1, y = 2``)."""
    try:
        return {"ok": True, "error": "", "parts": _parts(text or "", list(unit_hints or ()))}
    except ParseError as exc:
        return {"ok": False, "error": str(exc), "parts": []}
    except RecursionError:
        return {"ok": False, "error": "the answer is nested too deeply to read", "parts": []}
    except T.TreeError as exc:
        return {"ok": False, "error": str(exc), "parts": []}


def _parts(text, hints):
    s = basic_clean(text)
    if not s:
        raise ParseError("the answer is empty")
    if len(s) > MAX_CHARS:
        raise ParseError(f"the answer is longer than {MAX_CHARS} characters")
    written, (s, polarity) = s, _leading_words(_word_labels(s))
    if polarity and (not s or _looks_like_prose(s)):
        return [_text_part(polarity, polarity)]  # "No, the wire does not melt.": the answer is "no"
    if not s:
        raise ParseError("the answer holds words only")
    s, remark = _drop_remark(s)
    s, label_for = _strip_prose(s)
    words = canonical_text(re.sub(r"\\(?:text|mathrm|textrm)\s*\{([^{}]*)\}", r"\1", s)).replace("\\", "")
    if re.sub(r"\s+", " ", words).strip().lower() in TEXT_ANSWERS:
        return [_text_part(s, words)]
    if _looks_like_prose(s):
        raise ParseError(f"cannot read the text {s[:40]!r} in the answer")
    pieces = [p for p, _ in _split_top(s, r",|;|\s+and\s+|\\text\s*\{\s*and\s*\}")]
    while len(pieces) > 1 and _is_condition(pieces[-1]) and not _is_condition(pieces[0]):
        pieces.pop()  # "rho(E) = ..., E >= 0": the condition the value holds under, not a second value
        s = ",".join(pieces)
    if len(pieces) > 1 and all(len(_split_top(p, _RELATION_SPLIT)) > 1 for p in pieces):
        parts = [_piece(p.strip(), hints, None) for p in pieces]  # x = 1, y = 2: one part per label
    else:
        parts = [_piece(s, hints, label_for)]
    for part in parts:
        part["polarity"] = polarity
        part["remark"] = remark
        if written != s and len(parts) == 1:
            part["raw"] = written  # as written, its opening words too (an option's letter "(c) the 2p state")
    return parts


_POLARITY = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_TEXT_OPEN = re.compile(r"\\(?:text|textrm|textbf|textit|textnormal|mbox)\s*\{([^{}]*)\}\s*")


def _leading_words(s):
    """(rest, polarity): the words a written answer opens with before its math, taken off --
    ``\\text{yes, } v = 2``, ``\\text{The answer is (c) } X``, ``\\text{(b) } 10^{-13}`` (a part's
    label), ``Yes, 5 m/s``. A yes/no (true/false) among them is the answer's polarity: "no" beside a
    right number is not that number."""
    polarity = None
    m = _TEXT_OPEN.match(s)
    first = re.match(r"\s*([A-Za-z]+)\s*([,.;:]?)\s*(\S?)", m.group(1)) if m else None
    if m and m.end() < len(s) and not s[m.end():].lstrip().startswith("=") and re.search(r"[A-Za-z]{2,}\s*[\s,.:;]|\(\s*[A-Za-z]\s*\)|^\s*(?:yes|no|true|false)\b",
                                            m.group(1), re.I):
        polarity = _POLARITY.get(first.group(1).lower()) if first else None
        s = s[m.end():].strip().lstrip(",;:").strip()
    elif m and m.end() == len(s) and first and first.group(1).lower() in _POLARITY and first.group(3):
        polarity, s = _POLARITY[first.group(1).lower()], ""  # "\text{No, the wire does not melt.}"
    else:
        m = re.match(r"(yes|no|true|false)\b\s*[,.;:]\s*(?=\S)", s, re.I)
        if m:
            polarity, s = _POLARITY[m.group(1).lower()], s[m.end():].strip()
        else:
            m = re.match(r"\(\s*[a-z]\s*\)\s+(?=[^\s+\-*/=^_)])", s)  # "(b) 10^{-13} cm": a part's label
            if m:
                s = s[m.end():]
    return s, polarity


def _looks_like_prose(s):
    """Words, not math: two or more words of three letters or more, with no LaTeX command or digit
    between them (``the wire will not melt``); a product of single letters is not prose."""
    plain = re.sub(r"\\(?:text|textrm|textbf|textit|mathrm)\s*\{([^{}]*)\}", r"\1", s)
    return bool(re.search(r"[A-Za-z]{3,}\s+(?:[A-Za-z]{1,}\s+)*[A-Za-z]{3,}", plain)) and not re.search(r"[\\\d=^_{}]", plain)


def _is_condition(piece):
    """``E \\ge 0``, ``r < R``, ``x > 0``: a bound on one quantity by a number or a quantity."""
    return bool(re.fullmatch(r"\s*" + _SYMBOL_TOKEN + r"\s*(?:\\ge|\\le|\\geq|\\leq|<|>|\\neq|\\ne)\s*(?:-?\d+(?:\.\d+)?|"
                             + _SYMBOL_TOKEN + r")\s*", piece))


# A remark after the math of a box: "(\text{eastward})", "\text{and the charge sits on the surface.}",
# ", \textrm{so that ...}" -- words opening with a connective, or a parenthesised word, end the answer.
_TEXT_CMD = r"\\(?:text|textrm|textbf|textit|mathrm|mbox)\s*\{"
_REMARK_AFTER = re.compile(r"\s*[,;]?\s*(?:" + _TEXT_CMD + r"\s*(?:and|so|which|where|i\.\s*e\.|that is|since|because|hence|"
                           r"thus|therefore|as|here|with)\b|\(\s*" + _TEXT_CMD + r"\s*([A-Za-z][A-Za-z ]{2,})\s*\}\s*\)\s*\.?\s*$)")


def _drop_remark(s):
    """(answer, word): the answer without a remark in words after its math (``_REMARK_AFTER``), and
    the word it held in parentheses (``eastward``; None for a clause). A unit in parentheses
    (``(\text{m/s})``) stays. The word is kept for the comparison: a reference's direction is part of
    what it asks (``0.017 m (\text{eastward})`` is not answered by ``(\text{westward})``)."""
    for m in _REMARK_AFTER.finditer(s):
        if m.start() == 0 or not _balanced_prefix(s[:m.start()]):
            continue
        if m.group(1) and to_pint(m.group(1).strip()) is not None:
            continue
        word = " ".join(m.group(1).lower().split()) if m.group(1) else None
        return s[:m.start()].rstrip(" ,;"), word
    return s, None


def _balanced_prefix(s):
    """Does ``s`` close every brace and parenthesis it opens (the remark is at the top level)?"""
    depth = 0
    for ch in s.replace("\\{", "").replace("\\}", ""):
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


# A label in words before each of several values: "\text{Mass of ice: } 0.25 g, \text{Mass of water: } ...",
# "Ice: 0.25 g, Water: 1.75 g" -- each value is named (the name: its words run together).
_WORD_LABEL = re.compile(r"\s*(?:" + _TEXT_CMD + r"\s*([A-Za-z][A-Za-z' ]*?)\s*:\s*\}|([A-Za-z][A-Za-z' ]*?)\s*:)\s*(?=\S)")


def _word_labels(s):
    """Several values, each after a label in words, as ``Label = value`` pieces; else ``s`` as it is."""
    pieces = [p for p, _ in _split_top(s, r",|;")]
    if len(pieces) < 2:
        return s
    out = []
    for piece in pieces:
        m = _WORD_LABEL.match(piece)
        rest = piece[m.end():] if m else ""
        if not m or not rest.strip() or len(_split_top(rest, _RELATION_SPLIT)) > 1:
            return s
        words = m.group(1) or m.group(2)
        if len(words.replace(" ", "")) < 2:
            return s  # "x: 1" is no label in words
        out.append(re.sub(r"[^A-Za-z]", "", words) + " = " + rest.strip())
    return ", ".join(out)


def _strip_prose(s):
    r"""("Segment 1: slope = X" -> "slope = X"; "X for $v_{r,1}$" -> X labelled v_{r,1}; "X if r > R"
    -> X). Returns (answer, label or None)."""
    s = re.sub(r"^(?:\\text\s*\{)?\s*[A-Za-z][A-Za-z ]*\d*\s*:\s*\}?\s*(?=\S)", "", s) if re.match(
        r"^(?:\\text\s*\{)?\s*[A-Za-z][A-Za-z ]*\d*\s*:", s) and not re.match(r"^[A-Za-z]\s*:", s) else s
    label = None
    m = re.search(r"\s*(?:\\text\s*\{\s*)?\b(if|for|when|where|provided)\b\s*\}?\s*(.*)$", s)
    if m and m.start() > 0:
        rest = m.group(2).strip()
        if m.group(1) == "for" and re.fullmatch(_SYMBOL_TOKEN, rest):
            label = rest
        s = s[:m.start()].strip().rstrip(",;").strip()
    return s, label


def _text_part(raw, words):
    value = {"t": "str", "v": re.sub(r"\s+", " ", words).strip()}
    return {"label": None, "lhs": None, "value": value, "alts": [], "unit": None, "unit_marked": False,
            "unsplit": None, "text": value["v"], "raw": raw, "paren_pair": False, "literals": {}}


def _piece(s, hints, label_for):
    """One labelled or unlabelled answer: ``[label =] value [= value ...] [\\approx approx]``."""
    import sympy as sp

    segs = _split_top(s, _RELATION_SPLIT)
    label = lhs = None
    if label_for:
        label, lhs = _label_of(sp, label_for)
    if len(segs) > 1:
        first = segs[0][0].strip()
        rest_values = [seg for seg, _ in segs[1:]]
        name, tree = _label_of(sp, first, last_value=rest_values[-1])
        if name is not None:
            label, lhs, segs = name, tree, segs[1:]
        elif len(_split_top(first, _INEQUALITY)) == 2 and all(op in ("=",) + _APPROX_OPS for _, op in segs[:-1]):
            # "n > \sqrt2 = 1.414": the bound's value, not an equation between an inequality and a number
            segs = [(first, "\\approx")] + [(seg, "\\approx" if op else None) for seg, op in segs[1:]]
        elif not any(op in _APPROX_OPS for _, op in segs[:-1]):
            return _relation_part(sp, s, segs, hints, label, lhs)
    # values: "=" chains keep the last form; forms after \approx are approximations
    main, approximations, seen_approx = None, [], False
    for seg, op_after in segs:
        if not seen_approx:
            main = seg
        else:
            approximations.append(seg)
        if op_after in _APPROX_OPS:
            seen_approx = True
    assert main is not None  # (the text has a first segment)
    value_text, unit, marked, value, unsplit, paren = _value(sp, main.strip(), hints)
    alts, literals = [], _literal_digits(sp, value_text, value)
    for seg in approximations:
        try:
            v_text, v_unit, _, v, _, _ = _value(sp, seg.strip(), hints)
        except ParseError:
            continue  # an unreadable approximation adds nothing to the exact form
        alts.append(T.to_tree(v, sp))
        literals.update(_literal_digits(sp, v_text, v))
        unit = unit or v_unit
    comma = None
    if re.fullmatch(r"\s*[+-]?(?:\d+,\d{1,2}|\d+,\d{4,}|\d{4,},\d+)\s*", value_text):
        # "1,22", "1000,99": also the number written with a decimal comma (compared so when the
        # reference is one number)
        decimal = value_text.strip().replace(",", ".")
        comma = T.to_tree(sp.Float(decimal, max(15, len(decimal))), sp)
        literals.update(_literal_digits(sp, decimal, sp.Float(decimal)))
    text = (f"{label} = " if label else "") + _show(sp, value) + (f" {pretty_unit(unit)}" if unit else "")
    if alts:
        text += "".join(f" ≈ {_show(sp, T.from_tree(a, sp))}" for a in alts)
    return {"label": label, "lhs": lhs, "value": T.to_tree(value, sp), "alts": alts, "unit": unit,
            "unit_marked": marked, "unsplit": unsplit, "text": text, "raw": s, "paren_pair": paren,
            "literals": literals, "comma_decimal": comma}


def _relation_part(sp, s, segs, hints, label, lhs):
    """An equation that is not a definition (``7 = 11a + c``, ``a^2 = a_0^2 + 2Dt``)."""
    sides = [_value(sp, seg.strip(), hints)[3] for seg, _ in segs]
    rels = [sp.Eq(a, b, evaluate=False) for a, b in zip(sides, sides[1:])]
    value = rels[0] if len(rels) == 1 else sp.And(*rels, evaluate=False)
    return {"label": label, "lhs": lhs, "value": T.to_tree(value, sp), "alts": [], "unit": None,
            "unit_marked": False, "unsplit": None, "text": _show(sp, value), "raw": s, "paren_pair": False,
            "literals": {}}


def _label_of(sp, text, last_value=None):
    """(name, tree) when ``text`` names a quantity: a symbol, ``v_c(r)``, or -- when the value is
    a number -- a product/ratio of symbols (``W^\\star / W_{pr}^\\star = 1/2``); else (None, None)."""
    m = _FUNCTION_LABEL.match(text)
    if m:
        text = m.group(1)
    word = re.fullmatch(r"\s*([A-Za-z]{2,})\s*", text) or re.fullmatch(
        r"\s*" + _TEXT_CMD + r"\s*([A-Za-z]{2,}(?:\s+[A-Za-z]+)*)\s*\}\s*", text)
    if word:  # "slope = ...", "\text{Intensity ratio} = ...": words name the quantity
        name = re.sub(r"\s+", "", word.group(1))
        return name, T.to_tree(sp.Symbol(name), sp)
    try:
        lhs = _parse_latex(basic_clean(text))
    except ParseError:
        return None, None
    if isinstance(lhs, sp.Symbol):
        return str(lhs), T.to_tree(lhs, sp)
    if isinstance(lhs, sp.Interval) and re.fullmatch(r"\s*\(.*\)\s*", text) and lhs.left_open is not False:
        lhs = sp.Tuple(lhs.start, lhs.end)  # (p, q) = (3, 2): a pair of names
    if last_value is None or not isinstance(lhs, (sp.Expr, sp.Tuple)) or not lhs.free_symbols:
        return None, None
    if isinstance(lhs, sp.Expr) and not _one_quantity(sp, lhs):
        return None, None  # "2 z'' = ...", "2x + z = 1": an equation, not the value of one quantity
    try:
        value = _value(sp, basic_clean(last_value), ())[3]
    except ParseError:
        return None, None
    if isinstance(lhs, sp.Tuple) != isinstance(value, sp.Tuple) or (
            isinstance(lhs, sp.Tuple) and len(lhs) != len(value)):
        return None, None
    if not isinstance(value, (sp.Basic, sp.MatrixBase)) or getattr(value, "is_zero", False):
        return None, None  # "m x'' + k x = 0" is an equation, not a value of "m x'' + k x"
    if isinstance(value, sp.Basic) and value.is_Relational:
        return None, None
    # a left side in other quantities than the value's names what the value is: "E_gamma - B = 5",
    # "(E' - E)/E = -16/25", "|AB| = 1", "e^{A} = (matrix)", "(p, q) = (3, 2)"
    if not (value.free_symbols & lhs.free_symbols):
        return _show(sp, lhs), T.to_tree(lhs, sp)
    return None, None


def _one_quantity(sp, e):
    """Does ``e`` name one quantity (``E_gamma - B``, ``(E' - E)/E``, ``W^*/W_pr``)? Not when a number
    multiplies any of its terms: ``2x + z``, ``11a + c``, ``2 z''`` are sides of an equation."""
    if e.as_coeff_Mul()[0] not in (1, -1):
        return False
    return all(t.as_coeff_Mul()[0] in (1, -1) for a in e.find(sp.Add) for t in a.args)


def _is_monomial(sp, e):
    coeff, rest = e.as_coeff_Mul()
    if coeff not in (1, -1):
        return False
    return all(isinstance(f, sp.Symbol) or (isinstance(f, sp.Pow) and isinstance(f.base, sp.Symbol)
                                            and f.exp.is_Integer) for f in sp.Mul.make_args(rest))


def _value(sp, seg, hints):
    """(value text, unit, unit marked, SymPy value, unsplit tree or None, written as (a, b))."""
    seg, inner_unit = _interval_units(seg)
    value_text, unit, marked = split_unit(seg, hints)
    if inner_unit and not unit:
        unit, marked = inner_unit, True
    value = _parse_latex(value_text)
    unsplit = None
    if unit and not marked:
        try:
            unsplit = T.to_tree(_parse_latex(seg), sp)
        except (ParseError, T.TreeError):
            unsplit = None
    paren = bool(re.fullmatch(r"\(.*\)", value_text.strip(), re.DOTALL)) and len(
        _split_top(value_text.strip()[1:-1], r",")) == 2
    if paren and isinstance(value, sp.Interval) and not {value.start, value.end} & {sp.oo, -sp.oo}:
        value = sp.Tuple(value.start, value.end)  # (a, b): a pair in physics, an interval beside one
    return value_text, unit, marked, value, unsplit, paren


def _interval_units(seg):
    """``[0.9\\times10^{-4} m/s, 1.1\\times10^{-4} m/s]``, ``(0.25 g, 1.75 g, 1 g)``: the unit every
    entry states, taken out (entries in different units keep theirs: no common unit)."""
    m = re.fullmatch(r"\s*([\[(])(.*)([\])])\s*", seg, re.DOTALL)
    if not m:
        return seg, None
    ends = [p for p, _ in _split_top(m.group(2), r",")]
    if len(ends) < 2:
        return seg, None
    split = [split_unit(e.strip()) for e in ends]
    units = {u.replace(" ", "") if u else None for _, u, _ in split}
    if len(units) != 1 or None in units:
        return seg, None
    return m.group(1) + ", ".join(v for v, _, _ in split) + m.group(3), split[0][1]


def _literal_digits(sp, text, value):
    """{repr(float): significant digits} when the value is one written decimal (stated precision)."""
    mants = re.findall(r"\d+\.\d+|\d+(?=\s*\\times)", text)
    if len(mants) != 1 or not isinstance(value, sp.Basic):
        return {}
    try:
        if value.free_symbols or not value.is_number:
            return {}
        if not value.atoms(sp.Float) and "." in mants[0]:
            return {}
        x = float(value)
    except (TypeError, ValueError):
        return {}
    digits = len(mants[0].replace(".", "").lstrip("0")) or 1
    return {repr(x): digits, repr(-x): digits}


def _show(sp, value):
    try:
        text = sp.sstr(value, full_prec=False)
    except Exception:  # noqa: BLE001
        text = str(value)
    return text if len(text) <= 300 else text[:300] + "..."
