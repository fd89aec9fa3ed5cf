"""A real RunEnvironment for the sampling-scaffold tests: the project's own model seam (RunModels +
RunMeter with a registered scripted scenario), the real sandbox and the real grader. Only the
runner is left out, so a strategy can be driven directly and its Attempt inspected."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from physlab.llm.meter import RunMeter
from physlab.llm.models import RunModels
from physlab.llm.scripted import register_scenario
from physlab.llm.usage import Budget
from physlab.problems.model import Problem
from physlab.run.environment import RunEnvironment
from physlab.sandbox import Sandbox, default_sandbox

_ids = itertools.count()

TEMPLATE = '''import sympy as sp

p = sp.symbols('p')

def answer(p):
    """Return F(p)."""
    F = ...  # a SymPy expression of p
    return F
'''


def make_problem(*, template: bool = True, reference: str | None = "(1 - p)**2") -> Problem:
    return Problem(
        id="toy_fidelity",
        statement="Two independent gates each fail with probability $p$. What is the probability "
        "$F(p)$ that neither fails?",
        answer_template=TEMPLATE if template else None,
        reference=reference if template else None,
        reference_format="python" if (template and reference) else None,
    )


def filled(expr: str) -> str:
    """A filled template whose answer is ``expr``."""
    return TEMPLATE.replace("...  # a SymPy expression of p", expr)


def solution(expr: str, reasoning: str = "Each gate survives with probability 1-p.") -> str:
    return f"{reasoning}\n\nFinal Answer: F = {expr}\n\n```python\n{filled(expr)}```\n"


def make_ctx(tmp_path: Path, scenario: Callable[[], Any], *, problem: Problem | None = None,
             budget: Budget | None = None, seed: int = 0) -> RunEnvironment:
    name = f"test-sampling-{next(_ids)}"
    register_scenario(name, scenario)
    full = problem or make_problem()
    budget = budget or Budget()
    meter = RunMeter(budget, tmp_path / "calls.jsonl")
    models = RunModels(f"scripted:{name}", meter=meter)
    sandbox = default_sandbox()  # the shared warm pool, as the runner uses
    grader, equivalence = _graders(full, sandbox)
    return RunEnvironment(problem=full.public(), workspace=tmp_path, models=models, usage=meter,
                      budget=budget, sandbox=sandbox, grader=grader, equivalence=equivalence,
                      seed=seed)


def _graders(problem: Problem, sandbox: Sandbox) -> tuple[Any, Any]:
    """The grader bound to the full problem (None without a reference) and the reference-free
    equivalence, built the way the runner builds them."""
    from physlab.grading import Equivalence, Grader, bind

    # Generous limits: the suite runs on 2 busy cores, and a stage timing out would split a class.
    grader = Grader(sandbox, timeout_s=120, compare_timeout_s=240, step_timeout_s=30)
    return (bind(problem, grader) if problem.gradable else None), Equivalence(problem, grader)
