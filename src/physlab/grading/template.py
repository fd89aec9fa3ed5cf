"""What the grader needs from an answer template, read statically with ``ast`` (nothing runs).

The answer function's name and parameters, and for each parameter the SymPy symbol the template
declares for it (``p = sp.symbols('p')``, ``N, l = sp.symbols('N l', positive=True, integer=True)``,
``x = Symbol('x', real=True)``): the declared name (``k_12 = symbols('k_{12}')`` -> ``k_{12}``) and
its literal assumptions. Undeclared parameters become plain symbols named after the parameter.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from physlab.grading.rt.compare import norm_name

SYMBOL_FACTORIES = ("symbols", "Symbol", "var", "Dummy")


@dataclass(frozen=True)
class TemplateSpec:
    function: str = "answer"
    params: list[tuple[str, str, dict[str, bool]]] | None = None
    """[(parameter, declared symbol name, assumptions)]; None when there is no template."""
    declared: dict[str, tuple[str, dict[str, bool]]] = field(default_factory=dict)
    """Every symbol declared anywhere in the template: variable name -> (symbol name, assumptions)."""

    def params_json(self) -> list[list] | None:
        return None if self.params is None else [[p, d, dict(a)] for p, d, a in self.params]

    def symbols_json(self) -> dict[str, list]:
        """normalized name -> [declared name, assumptions] (parameter and symbol names both)."""
        out: dict[str, list] = {}
        for var, (declared, ass) in self.declared.items():
            out.setdefault(norm_name(declared), [declared, dict(ass)])
            out.setdefault(norm_name(var), [declared, dict(ass)])
        for param, declared, ass in self.params or []:
            out[norm_name(declared)] = [declared, dict(ass)]
            out[norm_name(param)] = [declared, dict(ass)]
        return out


def _split_names(spec: str) -> list[str] | None:
    names = [n for n in re.split(r"[\s,]+", spec.strip()) if n]
    if any(":" in n for n in names):  # ranges like x0:3 -- not individual parameters
        return None
    return names


def _factory_call(node: ast.AST) -> tuple[list[str], dict[str, bool]] | None:
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name not in SYMBOL_FACTORIES or not node.args:
        return None
    first = node.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    assumptions: dict[str, bool] = {}
    for kw in node.keywords:
        if kw.arg is None or kw.arg == "cls":
            return None  # functions (cls=Function) or **kwargs: not plain symbols
        if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool):
            assumptions[kw.arg] = kw.value.value
    names = _split_names(first.value) if name in ("symbols", "var") else [first.value]
    if names is None:
        return None
    return names, assumptions


def template_spec(template: str | None) -> TemplateSpec:
    """Read a template. A template that does not parse gives the default spec (the problem
    loader reports bad templates; the grader then calls ``answer`` with the candidate's own
    parameters)."""
    if not template:
        return TemplateSpec()
    try:
        tree = ast.parse(template)
    except SyntaxError:
        return TemplateSpec()
    declared: dict[str, tuple[str, dict[str, bool]]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        call = _factory_call(node.value)
        if call is None:
            continue
        names, ass = call
        target = node.targets[0]
        if isinstance(target, ast.Name) and len(names) == 1:
            declared[target.id] = (names[0], ass)
        elif isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(names):
            for t, n in zip(target.elts, names):
                if isinstance(t, ast.Name):
                    declared[t.id] = (n, ass)
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    fdef = next((f for f in funcs if f.name == "answer"), funcs[0] if funcs else None)
    if fdef is None:
        return TemplateSpec(declared=declared)
    a = fdef.args
    params = []
    for arg in [*a.posonlyargs, *a.args]:
        declared_name, ass = declared.get(arg.arg, (arg.arg, {}))
        params.append((arg.arg, declared_name, ass))
    return TemplateSpec(function=fdef.name, params=params, declared=declared)
