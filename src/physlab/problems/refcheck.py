"""Evaluate a problem's reference exactly as the grader does, and say what is wrong with it.

The value comes from the grader's own reference evaluation (``physlab.grading.rt.reference``: the
reference's assignments fill the template's blanks inside its ``answer``, which is then called with
the parameters as SymPy symbols), so ``physlab problems check`` and grading cannot disagree about
what a reference means. This runs TRUSTED code only -- the problem file's own template and
reference -- in this process; model output goes through the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from physlab.grading.rt.reference import number_reference, python_reference
from physlab.grading.template import template_spec
from physlab.problems.model import Problem
from physlab.problems.templates import ReturnShape, parse_template


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


def shape_issue(expected: ReturnShape, value: Any) -> str | None:
    """Why ``value`` cannot be what a template returning ``expected`` returns (None if it can)."""
    if expected.kind == "values":
        n = len(value) if isinstance(value, (tuple, list)) else 1
        if n != len(expected.names) or not isinstance(value, (tuple, list)):
            return f"the template returns {expected.describe()} but the reference gives {n} value{'s' * (n != 1)}"
    if expected.kind == "mapping":
        if not isinstance(value, dict):
            return f"the template returns {expected.describe()} but the reference gives a {type(value).__name__}"
        if set(map(str, value)) != set(expected.names):
            return f"the template returns {expected.describe()} but the reference has keys {', '.join(map(str, value))}"
    return None


def evaluate_reference(problem: Problem) -> ReferenceValue:
    """The reference as a value (a SymPy number/expression, or a tuple/list/dict of them) and its
    issues: a shape the template cannot return, symbols that are not parameters, non-finite values.
    ValueError when there is nothing to evaluate or it does not evaluate."""
    if problem.reference is None:
        raise ValueError(f"{problem.id}: no reference")
    if problem.reference_format not in ("python", "number"):
        raise ValueError(f"{problem.id}: reference format {problem.reference_format} is not evaluable")
    spec = template_spec(problem.answer_template)
    params = spec.params_json() or []
    try:
        if problem.reference_format == "number":
            value = number_reference(sp, problem.reference)
        else:
            value = python_reference(sp, problem.reference.strip(), problem.answer_template, spec.function, params)
    except Exception as exc:  # report which problem and why, in one line
        raise ValueError(f"{problem.id}: reference does not evaluate: {type(exc).__name__}: {exc}") from None
    issues: list[str] = []
    if problem.answer_template:
        issue = shape_issue(parse_template(problem.answer_template).returns, value)
        if issue:
            issues.append(issue)
    # a parameter may be declared under another symbol name (w = sp.Symbol('omega')): both count
    allowed = {name for param, declared, _ in params for name in (param, declared)}
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
    return ReferenceValue(value, tuple(p for p, _, _ in params), list(dict.fromkeys(issues)))
