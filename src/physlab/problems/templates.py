"""Checks on answer templates and reference answers (static: nothing is executed here).

A template is Python source defining ``answer(...)``; the names it fills (``X = ...``) and the
names it returns are what a Python reference may assign. A reference is Python, a number or
LaTeX; :func:`detect_reference_format` tells them apart when the file does not say.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from physlab.errors import ProblemFileError
from physlab.problems.model import ReferenceFormat

REFERENCE_FORMATS: tuple[str, ...] = ("python", "number", "latex")


@dataclass(frozen=True)
class TemplateInfo:
    """What a template's ``answer`` function looks like."""

    params: tuple[str, ...]
    """Parameter names of ``answer`` in order."""
    filled: tuple[str, ...]
    """Names assigned ``...`` inside ``answer`` (the blanks to fill)."""
    returned: tuple[str, ...]
    """Plain names in the last ``return`` (elements of a returned tuple/list count too)."""
    return_expr: str | None
    """Source of the last ``return`` expression (None when answer returns nothing)."""


def _syntax_message(exc: SyntaxError) -> str:
    return f"line {exc.lineno}: {exc.msg}"


def parse_template(source: str, *, path: str | Path | None = None, field: str = "answer_template") -> TemplateInfo:
    """Parse a template and describe its ``answer`` function; ProblemFileError if it is not one."""
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
    a = func.args
    params = tuple(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
    filled: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) and node.value.value is Ellipsis:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                filled.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
    returned: list[str] = []
    return_expr = None
    if returns:
        last = max(returns, key=lambda n: (n.lineno, n.col_offset))
        return_expr = ast.unparse(last.value)
        value = last.value
        elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        if isinstance(value, ast.Dict):
            elts = list(value.values)
        returned = [e.id for e in elts if isinstance(e, ast.Name)]
    return TemplateInfo(params=params, filled=tuple(dict.fromkeys(filled)), returned=tuple(returned), return_expr=return_expr)


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
    otherwise ``python`` (which :func:`check_reference` then insists parses)."""
    s = text.strip()
    if _is_number(s):
        return "number"
    if "\\" in s or "$" in s:
        return "latex"
    return "python"


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
        return
    if fmt == "latex":
        return
    try:
        tree = ast.parse(text.strip())
    except SyntaxError as exc:
        raise ProblemFileError(
            f"reference is not parseable Python ({_syntax_message(exc)}); if it is LaTeX, set reference_format: latex",
            path=path, field=field) from None
    if not tree.body:
        raise ProblemFileError("reference has no expression or assignment", path=path, field=field)
    names = assigned_names(text.strip())
    if template is not None and names:
        known = set(template.filled) | set(template.returned)
        if known and not known.intersection(names):
            raise ProblemFileError(
                f"reference assigns {', '.join(names)} but the template fills {', '.join(sorted(known))}",
                path=path, field=field)
