"""LaTeX math in a run's Markdown, written for a terminal: `$\\frac{E}{m c^2}$` as `E/(m c²)`.

The dashboard draws formulas as MathML (``physlab.web.mathml``); a terminal shows text, where raw
LaTeX reads badly. This writes the common constructs (fractions, roots, powers and indices, Greek
letters, operators, fonts, delimiters) as Unicode text, with parentheses wherever the layout gave
the grouping (a fraction's numerator and denominator, a root's argument, a power's exponent), so
the text means what the formula meant. A formula holding anything else (an environment, a command
it does not know with arguments) is left as it was written. Text outside formulas and fenced code
blocks are never changed. Written here because the libraries that do this (pylatexenc) drop the
parentheses of a fraction (`\\frac{1-p}{1+p}` becomes `1-p/1+p`).
"""

from __future__ import annotations

import re

SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "varpi": "ϖ", "rho": "ρ", "varrho": "ϱ", "sigma": "σ", "varsigma": "ς", "tau": "τ",
    "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "hbar": "ħ", "ell": "ℓ", "infty": "∞", "partial": "∂", "nabla": "∇", "cdot": "·", "times": "×",
    "pm": "±", "mp": "∓", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "ne": "≠",
    "approx": "≈", "simeq": "≃", "sim": "∼", "equiv": "≡", "propto": "∝", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "Rightarrow": "⇒", "Leftrightarrow": "⇔", "mapsto": "↦", "gg": "≫", "ll": "≪",
    "int": "∫", "oint": "∮", "sum": "Σ", "prod": "Π", "langle": "⟨", "rangle": "⟩",
    "dagger": "†", "otimes": "⊗", "oplus": "⊕", "in": "∈", "notin": "∉", "subset": "⊂", "cup": "∪",
    "cap": "∩", "forall": "∀", "exists": "∃", "ldots": "…", "dots": "…", "cdots": "⋯", "prime": "′",
    "circ": "∘", "degree": "°", "star": "⋆", "ast": "∗", "perp": "⊥", "parallel": "∥", "emptyset": "∅",
    "{": "{", "}": "}", "%": "%", "$": "$", "&": "&", "#": "#", "_": "_", "|": "‖", "lvert": "|", "rvert": "|",
    "vert": "|", "lVert": "‖", "rVert": "‖", "lbrace": "{", "rbrace": "}",
}
FUNCTIONS = {"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
             "coth", "exp", "log", "ln", "det", "tr", "Tr", "min", "max", "lim", "sup", "inf", "arg", "deg",
             "dim", "ker", "Re", "Im", "erf"}
FONTS = {"mathrm", "text", "textrm", "mathbf", "mathit", "mathsf", "mathtt", "mathcal", "mathbb", "mathfrak",
         "boldsymbol", "bm", "operatorname", "textbf", "textit", "mbox", "boxed", "displaystyle", "hat", "bar",
         "vec", "tilde", "dot", "ddot", "overline", "widehat", "widetilde"}
ACCENTS = {"hat": "\u0302", "bar": "\u0304", "vec": "\u20d7", "tilde": "\u0303", "dot": "\u0307",
           "ddot": "\u0308", "overline": "\u0305", "widehat": "\u0302", "widetilde": "\u0303"}
SIZES = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr",
         "Biggl", "Biggr", "middle", "displaystyle", "textstyle", "scriptstyle", "limits", "nolimits"}
SPACES = {",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": "  ", "qquad": "   ", "enspace": " ",
          "thinspace": " "}
SUPERSCRIPT = dict(zip("0123456789+-=()nik", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵏ"))
SUBSCRIPT = dict(zip("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎"))
FRACTIONS = {"frac", "dfrac", "tfrac", "cfrac"}

_FENCE = re.compile(r"^(```|~~~)")
_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<![\s\\])\$(?!\d)|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)


class _Unknown(Exception):
    """The formula holds something this does not write: it stays as written."""


def math_to_text(latex: str) -> str:
    """One formula's LaTeX (no delimiters) as text; the LaTeX itself when it holds what this cannot write."""
    try:
        text = _Reader(latex).sequence(stop=None)
    except (_Unknown, IndexError, RecursionError):
        return latex.strip()
    return " ".join(text.split())


def markdown_to_text(markdown: str) -> str:
    """``markdown`` with each formula (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``) written as text;
    fenced code blocks and everything outside formulas unchanged."""
    out: list[str] = []
    chunk: list[str] = []
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            if not fenced:
                out.append(_formulas("".join(chunk)))
                chunk = []
            out.append(line)
            fenced = not fenced
        elif fenced:
            out.append(line)
        else:
            chunk.append(line)
    out.append(_formulas("".join(chunk)))
    return "".join(out)


def _formulas(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        display, inline, paren, bracket = m.groups()
        return math_to_text(display or inline or paren or bracket or "")

    return _MATH.sub(one, text)


class _Reader:
    """A small recursive reader of one formula's tokens."""

    _TOKEN = re.compile(r"\\([A-Za-z]+)\*?|\\(.)|(\s+)|(.)", re.S)

    def __init__(self, latex: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        for m in self._TOKEN.finditer(latex):
            name, symbol, space, char = m.groups()
            if name is not None:
                self.tokens.append(("cmd", name))
            elif symbol is not None:
                self.tokens.append(("cmd", symbol))
            elif space is not None:
                self.tokens.append(("space", " "))
            else:
                self.tokens.append(("char", char))
        self.at = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def skip_spaces(self) -> None:
        while self.peek() == ("space", " "):
            self.at += 1

    def sequence(self, stop: str | None) -> str:
        out: list[str] = []
        while True:
            token = self.peek()
            if token is None:
                if stop is not None:
                    raise _Unknown("unclosed group")
                return "".join(out)
            if token == ("char", stop):
                self.at += 1
                return "".join(out)
            if token == ("char", "}"):
                raise _Unknown("unbalanced }")
            out.append(self.item())

    def argument(self) -> str:
        """One argument: a {group}, or the next single token."""
        self.skip_spaces()
        token = self.peek()
        if token is None:
            raise _Unknown("missing argument")
        if token == ("char", "{"):
            self.at += 1
            return self.sequence("}")
        return self.item()

    def item(self) -> str:
        kind, value = self.take()
        if kind == "space":
            return " "
        if kind == "char":
            if value == "{":
                return self.sequence("}")
            if value in "^_":
                return self.script(value)
            if value == "&":
                raise _Unknown("alignment")
            if value == "'":
                return "′"
            if value == "~":
                return " "
            return value
        return self.command(value)

    def factor_follows(self) -> bool:
        """Is the next thing (past spaces) multiplied with what came before?"""
        at = self.at
        while at < len(self.tokens) and self.tokens[at][0] == "space":
            at += 1
        if at == len(self.tokens):
            return False
        kind, value = self.tokens[at]
        if kind == "char":
            return value not in "+-=<>,;.:)]|/}^_&!'"
        return value not in _NOT_FACTORS

    def script(self, which: str) -> str:
        body = self.argument().strip()
        table = SUPERSCRIPT if which == "^" else SUBSCRIPT
        if body and all(c in table for c in body):
            return "".join(table[c] for c in body)
        if which == "^" and body in ("′", "′′", "†", "*", "∗"):
            return body
        if which == "_" and re.fullmatch(r"\w+", body):  # a label (Z_AB, k_B): no product to group
            return "_" + body
        return which + _grouped(body)

    def command(self, name: str) -> str:
        if name in FRACTIONS:
            top, bottom = self.argument(), self.argument()
            fraction = f"{_grouped(top.strip())}/{_grouped(bottom.strip())}"
            # a factor right after it: (a/b)(c), never a/b(c), which reads as a/(b(c))
            return f"({fraction})" if self.factor_follows() else fraction
        if name == "sqrt":
            self.skip_spaces()
            if self.peek() == ("char", "["):
                self.at += 1
                index = self.sequence("]")
                return f"{_grouped(self.argument().strip())}^(1/{index.strip()})"
            return "√" + _grouped(self.argument().strip())
        if name in ACCENTS:
            body = self.argument().strip()
            return body + ACCENTS[name] if len(body) == 1 else f"{name}({body})"
        if name in FONTS:
            return self.argument()
        if name in SIZES:
            self.skip_spaces()
            if self.peek() == ("char", "."):  # \left. : no delimiter
                self.at += 1
            return ""
        if name in SPACES:
            return SPACES[name]
        if name in FUNCTIONS:
            return name + " "
        if name in SYMBOLS:
            return SYMBOLS[name]
        if name == "\\":
            raise _Unknown("a line break (several lines of math)")
        raise _Unknown(f"\\{name}")


# Commands after a fraction that are not a factor of it: relations, operators, closing delimiters.
_NOT_FACTORS = {"cdot", "times", "pm", "mp", "le", "leq", "ge", "geq", "neq", "ne", "approx", "simeq", "sim",
                "equiv", "propto", "to", "rightarrow", "leftarrow", "Rightarrow", "Leftrightarrow", "mapsto",
                "gg", "ll", "in", "notin", "subset", "right", "bigr", "Bigr", "biggr", "Biggr", "rangle",
                "otimes", "oplus", "cup", "cap", ",", ";", ":", "!", " ", "quad", "qquad", "}", "rvert", "rVert",
                "\\", "ldots", "dots", "cdots"}
_MARKS = "′†*⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵏ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎\u0302\u0304\u20d7\u0303\u0307\u0308\u0305"
_ATOM = re.compile(rf"^(?:\d+(?:\.\d+)?|√?(?:[^\W\d_]|[∞∂∇])[{_MARKS}]*(?:_[^\W_]+)?[{_MARKS}]*|√\d+)$")


def _grouped(text: str) -> str:
    """``text`` in parentheses unless it is one number, one symbol (with its indices and marks) or
    already one bracketed whole: a product (``3s``, ``m c²``) is grouped too, so nothing is read
    across the slash that was not in the fraction."""
    if not text:
        return "()"
    if _ATOM.match(text) or _bracketed(text.rstrip(_MARKS)):
        return text
    return f"({text})"


def _bracketed(text: str) -> bool:
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(text) - 1:
            return False
    return True
