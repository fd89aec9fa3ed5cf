"""Evaluate a problem's reference exactly as the grader does, and say what is wrong with it.

The value comes from the grader's own reference evaluation (``physlab.grading.rt.reference``: the
reference's assignments fill the template's blanks inside its ``answer``, which is then called with
the parameters as SymPy symbols), run where grading runs it: in the sandbox's pool for trusted code,
each reference in a killable child. A problem file is hostile input (a downloaded dataset's template
is code), so none of it runs in this process: the value crosses back as an answer tree, checked and
rebuilt as data (``grading.rt.tree``), and the checks below look at that data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from physlab.grading.rt import tree as T
from physlab.grading.template import template_spec
from physlab.problems.model import Problem
from physlab.problems.templates import ReturnShape, parse_template

REFERENCE_TIMEOUT_S = 30.0


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


def _item(problem: Problem) -> dict:
    if problem.reference is None:
        raise ValueError(f"{problem.id}: no reference")
    if problem.reference_format not in ("python", "number"):
        raise ValueError(f"{problem.id}: reference format {problem.reference_format} is not evaluable")
    spec = template_spec(problem.answer_template)
    return {"reference": problem.reference, "format": problem.reference_format, "template": problem.answer_template,
            "function": spec.function, "params": spec.params_json() or []}


def evaluate_references(problems: list[Problem], *, sandbox: Any = None,
                        timeout_s: float = REFERENCE_TIMEOUT_S) -> list[ReferenceValue | ValueError]:
    """Each problem's reference as a value with its issues, or the ValueError saying why it has
    none (no reference, not evaluable, raised, did not finish), in one sandbox run."""
    from physlab.grading.grader import trusted_run_sync

    out: list[ReferenceValue | ValueError | None] = []
    items: list[dict] = []
    for p in problems:
        try:
            items.append(_item(p))
            out.append(None)
        except ValueError as exc:
            out.append(exc)
    if items:
        job = {"mode": "references", "items": items, "reference_timeout": timeout_s}
        result = trusted_run_sync(job, sandbox=sandbox, timeout_s=timeout_s * len(items) + 60)
        values = (result or {}).get("values")
        if not isinstance(values, list) or len(values) != len(items):
            values = [{"error": "the evaluation ended without a result"}] * len(items)
        pending = iter(values)
        out = [next(pending) if x is None else x for x in out]
    return [x if isinstance(x, ValueError) else _checked(p, x, timeout_s) for p, x in zip(problems, out)]


def evaluate_reference(problem: Problem, *, sandbox: Any = None,
                       timeout_s: float = REFERENCE_TIMEOUT_S) -> ReferenceValue:
    """The reference as a value (a SymPy number/expression, or a tuple/list/dict of them) and its
    issues: a shape the template cannot return, symbols that are not parameters, non-finite values.
    ValueError when there is nothing to evaluate or it does not evaluate."""
    (result,) = evaluate_references([problem], sandbox=sandbox, timeout_s=timeout_s)
    if isinstance(result, ValueError):
        raise result
    return result


def _checked(problem: Problem, reply: Any, timeout_s: float) -> ReferenceValue | ValueError:
    if not isinstance(reply, dict) or "tree" not in reply:
        why = str(reply.get("error") if isinstance(reply, dict) else "no result")[:300]
        if why.startswith("did not finish"):
            return ValueError(f"{problem.id}: reference evaluation did not finish in {timeout_s:g} s")
        return ValueError(f"{problem.id}: reference does not evaluate: {why}")
    try:
        with sp.evaluate(False):  # data from the sandbox: rebuilt, never re-evaluated at any cost here
            value = T.from_tree(reply["tree"], sp)
    except T.TreeError as exc:
        return ValueError(f"{problem.id}: reference does not evaluate to SymPy values: {exc}")
    spec = template_spec(problem.answer_template)
    params = spec.params_json() or []
    issues: list[str] = []
    if problem.answer_template:
        issue = shape_issue(parse_template(problem.answer_template).returns, value)
        if issue:
            issues.append(issue)
    # a parameter may be declared under another symbol name (w = sp.Symbol('omega')): both count
    allowed = {name for param, declared, _ in params for name in (param, declared)}
    for leaf in _leaves(value):
        if not isinstance(leaf, sp.Basic):
            issues.append(f"not a SymPy number or expression: {leaf!r}"[:200])
            continue
        extra = {str(s) for s in leaf.free_symbols} - allowed
        if extra:
            issues.append(f"uses symbols that are not answer() parameters: {', '.join(sorted(extra))}")
        if leaf.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            issues.append(f"not finite: {leaf}"[:200])
    return ReferenceValue(value, tuple(p for p, _, _ in params), list(dict.fromkeys(issues)))
