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

from typing import TYPE_CHECKING

from physlab.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(__name__, _FROM)
