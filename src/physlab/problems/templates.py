"""Checks on answer templates and reference answers (static: nothing is executed here).

A template is Python source defining ``answer(...)``; the names it fills (``X = ...``) and the
names it returns are what a Python reference may assign. A reference is Python, a number or
LaTeX; :func:`detect_reference_format` tells them apart when the file does not say.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from physlab.errors import ProblemFileError

REFERENCE_FORMATS: tuple[str, ...] = ("python", "number", "latex", "prose")


@dataclass(frozen=True)
class ReturnShape:
    """What the last ``return`` of ``answer`` hands back, as far as its source tells."""

    kind: str
    """``values`` (a tuple/list literal of several values), ``mapping`` (a dict literal with
    string keys), ``one`` (one value: a plain expression) or ``unknown``."""
    names: tuple[str, ...] = ()
    """The elements' source (``values``) or the keys (``mapping``)."""

    def describe(self) -> str:
        if self.kind == "values":
            return f"{len(self.names)} values ({', '.join(self.names)})"
        if self.kind == "mapping":
            return f"a mapping with keys {', '.join(self.names)}"
        return "one value"


@dataclass(frozen=True)
class TemplateInfo:
    """What a template's ``answer`` function looks like."""

    params: tuple[str, ...]
    """Parameter names of ``answer`` in order."""
    filled: tuple[str, ...]
    """Names assigned a blank inside ``answer``: ``X = ...``, or a value holding ``...``
    (CritPt writes list answers as ``energies = [...]``)."""
    returned: tuple[str, ...]
    """Plain names in the last ``return`` (elements of a returned tuple/list count too)."""
    return_expr: str | None
    """Source of the last ``return`` expression (None when answer returns nothing)."""
    returns: ReturnShape = ReturnShape("unknown")
    """The shape of the last ``return``."""


def _syntax_message(exc: SyntaxError) -> str:
    return f"line {exc.lineno}: {exc.msg}"


def _has_blank(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and n.value is Ellipsis for n in ast.walk(node))


def return_shape(value: ast.expr | None) -> ReturnShape:
    """The shape of an expression read from its source: several values, a mapping, or one value
    (arithmetic and literals); ``unknown`` when only running it would tell (a call, a name)."""
    if isinstance(value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in value.elts):
        return ReturnShape("values", tuple(ast.unparse(e) for e in value.elts))
    if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
        return ReturnShape("mapping", tuple(k.value for k in value.keys))  # type: ignore[union-attr]
    if isinstance(value, (ast.BinOp, ast.UnaryOp)) or (isinstance(value, ast.Constant) and value.value is not Ellipsis):
        return ReturnShape("one")
    return ReturnShape("unknown")


def parse_template(source: str, *, path: str | Path | None = None, field: str = "answer_template") -> TemplateInfo:
    """Parse a template and describe its ``answer`` function; ProblemFileError if it is not one
    (no ``answer``, or nothing in it to fill)."""
    if not isinstance(source, str) or not source.strip():
        raise ProblemFileError("expected Python source defining answer(...), got an empty value", path=path, field=field)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemFileError(f"template does not parse as Python (template {_syntax_message(exc)})", path=path, field=field) from None
    func = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "answer"), None
    )
    if func is None:
        raise ProblemFileError("template must define a top-level function 'def answer(...)'", path=path, field=field)
    if not _has_blank(func):
        raise ProblemFileError("template has nothing to fill: answer() needs a blank '...' for each value "
                               "(e.g. 'r = ...' then 'return r')", path=path, field=field)
    a = func.args
    params = tuple(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
    filled: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _has_blank(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                filled.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
    returned: list[str] = []
    return_expr = None
    shape = ReturnShape("unknown")
    if returns:
        last = max(returns, key=lambda n: (n.lineno, n.col_offset))
        return_expr = ast.unparse(last.value)
        value = last.value
        elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        if isinstance(value, ast.Dict):
            elts = list(value.values)
        returned = [e.id for e in elts if isinstance(e, ast.Name)]
        shape = return_shape(value)
        if shape.kind == "values" and len(shape.names) == 1:
            shape = ReturnShape("unknown")  # `return [coeffs]`-like: one value in a list, not a tuple to match
    return TemplateInfo(params=params, filled=tuple(dict.fromkeys(filled)), returned=tuple(returned),
                        return_expr=return_expr, returns=shape)


# How a problem's reference is written (physlab.problems.model.Problem.reference_format).
ReferenceFormat = Literal["python", "number", "latex", "prose"]
_NOT_FINITE = {"nan", "inf", "infinity"}


def _is_number(text: str) -> bool:
    """A numeric literal with a value ('nan' and 'inf' parse as floats but are not answers)."""
    s = text.strip()
    try:
        float(s)
    except ValueError:
        return False
    return s.lower().lstrip("+-") not in _NOT_FINITE


def detect_reference_format(text: str) -> ReferenceFormat:
    """``number`` for a plain float literal, ``latex`` when it has a backslash or a dollar sign,
    ``prose`` for words (physlab.problems.prose), otherwise ``python`` (which :func:`check_reference`
    then insists parses)."""
    from physlab.problems.prose import is_prose

    s = text.strip()
    if _is_number(s):
        return "number"
    if "\\" in s or "$" in s:
        return "prose" if is_prose(s) else "latex"
    if is_prose(s) and not _parses(s):  # "the equilibrium is unstable" (words, not a Python expression)
        return "prose"
    return "python"


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def assigned_names(source: str) -> list[str]:
    """Names bound at the top level of a Python reference (``X = ...``, ``a, b = ...``)."""
    names: list[str] = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            names.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def check_reference(
    text: str,
    fmt: str,
    *,
    template: TemplateInfo | None,
    path: str | Path | None = None,
    field: str = "answer",
) -> None:
    """Static well-formedness of a reference in the given format; ProblemFileError otherwise."""
    if fmt not in REFERENCE_FORMATS:
        raise ProblemFileError(f"unknown reference format {fmt!r}; expected one of {', '.join(REFERENCE_FORMATS)}",
                               path=path, field="reference_format")
    if not text.strip():
        raise ProblemFileError("reference answer is empty", path=path, field=field)
    if fmt == "number":
        if not _is_number(text):
            raise ProblemFileError(f"expected a finite number, got {text.strip()[:40]!r}", path=path, field=field)
        if template is not None:
            _check_shape(template.returns, ReturnShape("one"), "one number", path=path, field=field)
        return
    if fmt in ("latex", "prose"):
        return
    try:
        tree = ast.parse(text.strip())
    except SyntaxError as exc:
        raise ProblemFileError(
            f"reference is not parseable Python ({_syntax_message(exc)}); if it is LaTeX, set reference_format: latex",
            path=path, field=field) from None
    if not tree.body:
        raise ProblemFileError("reference has no expression or assignment", path=path, field=field)
    if template is None or any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in tree.body):
        return  # a whole answer() as the reference: only running it shows its shape (problems check)
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        got = return_shape(tree.body[0].value)
        said = {"one": "one expression", "values": f"{len(got.names)} values",
                "mapping": f"a mapping with keys {', '.join(got.names)}"}.get(got.kind, "")
        _check_shape(template.returns, got, said, path=path, field=field)
        return
    names = assigned_names(text.strip())
    known = set(template.filled) | set(template.returned)
    if names and known and not known.intersection(names):
        raise ProblemFileError(
            f"reference assigns {', '.join(names)} but the template fills {', '.join(sorted(known))}",
            path=path, field=field)
    missing = [n for n in template.filled if n not in names]
    if names and missing:
        raise ProblemFileError(
            f"the template fills {', '.join(template.filled)}; {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not assigned by the reference (assign every blank, "
            "or give the answer as one expression)", path=path, field=field)


def _check_shape(expected: ReturnShape, got: ReturnShape, said: str, *, path: str | Path | None, field: str) -> None:
    """Refuse a reference whose shape cannot be what the template returns (both read from source;
    ``unknown`` on either side is left to ``physlab problems check``, which runs the reference)."""
    if "unknown" in (expected.kind, got.kind) or expected.kind == "one":
        return  # one returned value may itself be a tuple or a mapping (a list of coefficients...)
    if expected.kind == got.kind == "values" and len(expected.names) == len(got.names):
        return
    if expected.kind == got.kind == "mapping" and set(expected.names) == set(got.names):
        return
    if expected.kind == "mapping" and got.kind == "values":
        said = f"a tuple of {len(got.names)} values"
    verb = "gives" if expected.kind == got.kind == "values" else "is"
    raise ProblemFileError(f"the template returns {expected.describe()} but the reference {verb} {said}",
                           path=path, field=field)
