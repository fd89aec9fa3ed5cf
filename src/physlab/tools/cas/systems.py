"""The computer algebra systems the sandbox runs besides Python: what each is good for, the files it
reads, how to install it, and one short example with what it prints (a test runs every example in
the sandbox and checks that output, so the prompts that show them never show a wrong one)."""

from __future__ import annotations

from pathlib import PurePath

from pydantic import BaseModel, ConfigDict

from physlab.errors import UserError

PYTHON = "python"
LANGUAGES = (PYTHON, "form", "cadabra2", "maxima", "wolfram")
WITH_CAS = "sh scripts/bootstrap.sh --with-cas"


class Example(BaseModel):
    """A program in the system's own language and lines its output contains (whitespace aside)."""

    model_config = ConfigDict(frozen=True)
    code: str
    prints: tuple[str, ...]


class CasSystem(BaseModel):
    model_config = ConfigDict(frozen=True)
    language: str  # the id used by execute(), `--lang` and the result's `language`
    name: str
    extensions: tuple[str, ...]  # the first is the name the program gets in the run's directory
    good_for: str
    output: str  # what the program's output looks like, for a prompt
    install: str
    example: Example


SYSTEMS: dict[str, CasSystem] = {s.language: s for s in (
    CasSystem(
        language="form",
        name="FORM",
        extensions=(".frm",),
        good_for="Dirac traces (g_, Trace4, Tracen), index contractions, very large polynomial "
                 "expressions and series that would not fit in memory elsewhere.",
        output="Printed expressions (`Print;`), one `NAME = ...;` block each; a run ends with `.end`. "
               "Setup lines such as `#:LargeSize 500M` at the top override the sandbox's buffer sizes.",
        install=f"Debian package `form` ({WITH_CAS}, or apt-get install form)",
        example=Example(
            code="* Tr(p-slash q-slash) and the contraction g^mu g_mu, in 4 dimensions\n"
                 "Vectors p, q;\n"
                 "Indices mu;\n"
                 "Local T = g_(1, p, q);\n"
                 "Local C = g_(1, mu, mu);\n"
                 "Trace4, 1;\n"
                 "Print;\n"
                 ".end\n",
            prints=("T = 4*p.q;", "C = 16;"),
        ),
    ),
    CasSystem(
        language="cadabra2",
        name="Cadabra2",
        extensions=(".cdb",),
        good_for="Tensor field theory: index symmetries and canonicalisation, Young projections, "
                 "Fierz identities, Riemann-tensor identities, curvature of a given metric "
                 "component by component.",
        output="A Cadabra2 notebook in its text form: Python with `ex:= ...` expressions and "
               "`X::Property.` declarations; `print(ex)` or a trailing `;` shows an expression.",
        install=f"Debian package `cadabra2` ({WITH_CAS}, or apt-get install cadabra2)",
        example=Example(
            code="{a,b,c,d,e,f}::Indices(vector).\n"
                 "R_{a b c d}::RiemannTensor.\n"
                 "# the first Bianchi identity, R_{a[bcd]} = 0\n"
                 "ex:= R_{a b c d} + R_{a c d b} + R_{a d b c}.\n"
                 "young_project_tensor(ex, modulo_monoterm=True)\n"
                 "canonicalise(ex)\n"
                 "print(ex)\n",
            prints=("0",),
        ),
    ),
    CasSystem(
        language="maxima",
        name="Maxima",
        extensions=(".mac",),
        good_for="Symbolic integrals, limits, series (taylor), ODEs (ode2), linear algebra and "
                 "simplification, with exact rational and big-float arithmetic.",
        output="Each statement ending in `;` is echoed, then its value on one line (display2d is "
               "off); statements ending in `$` print nothing. A question Maxima would ask (the sign "
               "of a symbol) is an error: state facts first with assume(n > 0).",
        install=f"Debian packages `maxima maxima-share` ({WITH_CAS}, or apt-get install maxima maxima-share)",
        example=Example(
            code="/* a Gaussian moment, and the series of sin(x)/x */\n"
                 "integrate(x^2*exp(-x^2), x, minf, inf);\n"
                 "taylor(sin(x)/x, x, 0, 6);\n",
            prints=("sqrt(%pi)/2", "1-x^2/6+x^4/120-x^6/5040"),
        ),
    ),
    CasSystem(
        language="wolfram",
        name="Wolfram Language",
        extensions=(".wl", ".m"),
        good_for="Mathematica-style symbolic work: Series, Integrate, Solve, Simplify with "
                 "assumptions, pattern rules. Run by the Wolfram Engine where one is installed, else "
                 "by Mathics3, an open interpreter of the language with most, not all, of its functions.",
        output="The value of every top-level expression not ending in `;` is printed in InputForm, "
               "one per line; Print[] output and messages (`Power::infy: ...`) appear in order.",
        install="Mathics3 (pip install 'physlab[cas]'), or a Wolfram Engine with wolframscript "
                "and pip install wolframclient",
        example=Example(
            code="(* the series of Exp[x], and a Gaussian integral *)\n"
                 "Normal[Series[Exp[x], {x, 0, 4}]]\n"
                 "Integrate[Exp[-x^2], {x, -Infinity, Infinity}]\n",
            prints=("1 + x + x^2/2 + x^3/6 + x^4/24", "Sqrt[Pi]"),
        ),
    ),
)}

_BY_EXTENSION = {ext: s.language for s in SYSTEMS.values() for ext in s.extensions}


def check_language(language: str) -> str:
    """``language`` as one of LANGUAGES, or a UserError that names them."""
    lang = (language or "").strip().lower()
    if lang not in LANGUAGES:
        raise UserError(f"expected one of {', '.join(LANGUAGES)}, got {language!r}", field="language")
    return lang


def language_for_path(path: str | PurePath) -> str:
    """The language a file is written in, from its extension; Python for anything else."""
    return _BY_EXTENSION.get(PurePath(path).suffix.lower(), PYTHON)
