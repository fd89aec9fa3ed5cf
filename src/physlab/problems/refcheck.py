"""Evaluate a problem's Python reference the way a filled template would produce it.

This runs TRUSTED code only — the problem file's own template module scope and reference (built-in
or user-supplied suites) — never model output (that goes through the sandbox). It is used to check
that references are well-formed SymPy (tests, ``physlab problems check``); grading proper lives in
``physlab.grading``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from physlab.problems.model import Problem
from physlab.problems.templates import parse_template


@dataclass
class ReferenceValue:
    value: Any
    params: tuple[str, ...]
    issues: list[str] = field(default_factory=list)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def evaluate_reference(problem: Problem) -> ReferenceValue:
    """The reference as a value: a SymPy number/expression, or a tuple/list/dict of them."""
    if problem.reference is None:
        raise ValueError(f"{problem.id}: no reference")
    if problem.reference_format == "number":
        return ReferenceValue(sp.Float(problem.reference, 30) if "." in problem.reference or "e" in problem.reference.lower()
                              else sp.Integer(problem.reference), ())
    if problem.reference_format != "python":
        raise ValueError(f"{problem.id}: reference format {problem.reference_format} is not evaluable")
    ns: dict[str, Any] = {"__name__": "physlab_reference"}
    params: tuple[str, ...] = ()
    return_expr = None
    if problem.answer_template:
        info = parse_template(problem.answer_template)
        params, return_expr = info.params, info.return_expr
        exec(compile(problem.answer_template, f"<template {problem.id}>", "exec"), ns)  # trusted: see module doc
    else:
        exec("import sympy as sp\nimport numpy as np\nimport math", ns)
    for name in params:
        if not isinstance(ns.get(name), sp.Basic):
            ns[name] = sp.Symbol(name)
    text = problem.reference.strip()
    tree = ast.parse(text)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        if return_expr is None:
            raise ValueError(f"{problem.id}: reference assigns names but the template returns nothing")
    try:
        if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
            value = eval(compile(ast.Expression(tree.body[0].value), "<reference>", "eval"), ns)
        else:
            exec(compile(text, f"<reference {problem.id}>", "exec"), ns)
            value = eval(return_expr, ns)
    except Exception as exc:  # report which problem and why, in one line
        raise ValueError(f"{problem.id}: reference does not evaluate: {type(exc).__name__}: {exc}") from None
    issues: list[str] = []
    # a parameter may be declared under another symbol name (w = sp.Symbol('omega')): both count
    allowed = set(params) | {str(ns[name]) for name in params if isinstance(ns.get(name), sp.Symbol)}
    for leaf in _leaves(value):
        try:
            leaf = sp.sympify(leaf)
        except (sp.SympifyError, TypeError):
            issues.append(f"not a SymPy number or expression: {leaf!r}")
            continue
        extra = {str(s) for s in leaf.free_symbols} - allowed
        if extra:
            issues.append(f"uses symbols that are not answer() parameters: {', '.join(sorted(extra))}")
        if leaf.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            issues.append(f"not finite: {leaf}")
    return ReferenceValue(value, params, list(dict.fromkeys(issues)))
