"""Grading: extract the answer from model output, compare to the reference, return a Verdict.

    from physlab.grading import Grader, bind, Equivalence
    v = await Grader().grade(problem, candidate_text)      # Verdict: correct | incorrect | invalid
    same = await Grader().equivalent(problem, code_a, code_b)  # reference-free

Untrusted code runs only in the sandbox (stage 1); the reference is evaluated and compared in a
separate sandbox run holding trusted code only (stage 2). Written answers (LaTeX: boxes, "Final
answer" lines, HiPhO items) are parsed in stage 1 too, by ``rt/latex.py``. See ``grader.py``,
``jobs.py``, ``rt/`` and docs/grading.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from physlab.grading.extract import (
        WrittenAnswer,
        extract_code,
        extract_final_answer,
        extract_written,
        fill_template,
    )
    from physlab.grading.grader import BoundGrader, CandidateAnswer, Equivalence, Grader, bind
    from physlab.grading.template import TemplateSpec, template_spec
    from physlab.grading.verdict import Verdict, VerdictKind

# Each name is imported from its module on first use: the command line imports this package to register
# its commands, and a help text should not pay for the grader.
_FROM: dict[str, tuple[str, ...]] = {
    "physlab.grading.verdict": ("Verdict", "VerdictKind"),
    "physlab.grading.extract": ("WrittenAnswer", "extract_code", "extract_final_answer", "extract_written",
                                "fill_template"),
    "physlab.grading.grader": ("BoundGrader", "CandidateAnswer", "Equivalence", "Grader", "bind"),
    "physlab.grading.template": ("TemplateSpec", "template_spec"),
}
_WHERE = {name: module for module, names in _FROM.items() for name in names}
__all__ = [
    "BoundGrader",
    "CandidateAnswer",
    "Equivalence",
    "Grader",
    "TemplateSpec",
    "Verdict",
    "VerdictKind",
    "WrittenAnswer",
    "bind",
    "extract_code",
    "extract_final_answer",
    "extract_written",
    "fill_template",
    "template_spec",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
