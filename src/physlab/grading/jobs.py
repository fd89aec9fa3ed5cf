"""The jobs the grader hands its two sandbox stages, and the verdict it makes of stage 2's reply.

Pure functions of the problem and the candidate (no sandbox, no I/O), so tests can run the same
jobs through ``rt.stages`` in-process. Stage 1 gets the candidate only: its code, or its written
final answers (``extract.extract_written``) and the units the problem states publicly (HiPhO);
never the reference. Stage 2 gets the reference: Python/number as text, LaTeX as its boxed answers,
HiPhO as the item's key (answers, types, units, points).
"""

from __future__ import annotations

import json
import re
from typing import Any

from physlab.grading.extract import (
    defines_function,
    extract_choice,
    extract_code,
    extract_written,
    marked_true,
    outside_thinking,
    read_choice,
)
from physlab.grading.rt import tree as T
from physlab.grading.template import TemplateSpec
from physlab.grading.verdict import Verdict
from physlab.problems.choices import letters_by_wording, split_choice
from physlab.problems.model import Problem


def is_hipho(problem: Problem) -> bool:
    return problem.extra.get("format") == "hipho" and not problem.answer_template


def has_options(problem: Problem) -> bool:
    """A multiple-choice problem whose options' texts are known (listed in its statement, or given
    with ``choices:``): an answer may name a letter, give an option's content, or both."""
    return bool(problem.options) and not problem.answer_template and not is_hipho(problem)


def candidate_job(problem: Problem, candidate: str, spec: TemplateSpec, *, step_timeout: float) -> dict | str:
    """Stage 1's job for ``candidate``, or the reason it has no answer at all."""
    code = None if is_hipho(problem) or problem.choices or has_options(problem) else extract_code(candidate, spec.function)
    if (code is not None and problem.answer_template is None and not defines_function(code, spec.function)
            and extract_written(candidate) is not None):
        code = None  # no template: a code block that defines no answer() illustrates; the written answer answers
    job: dict[str, Any] = {"mode": "candidate", "code": code, "function": spec.function,
                           "params": spec.params_json(), "step_timeout": step_timeout}
    if code is not None:
        return job
    if has_options(problem):
        return _options_job(problem, candidate, job)
    written = extract_choice(candidate, problem.choices) if problem.choices else extract_written(candidate)
    if written is None and problem.choices:
        return f"no answer naming one of the options {', '.join(problem.choices)}"
    if written is None:
        if is_hipho(problem):
            return "no \\boxed{} answer or final answer line"
        return (f"no Python code defining {spec.function}() found (expected a fenced python block or a "
                "Python file) and no written final answer (\\boxed{}, a 'Final answer:' line)")
    # units the problem states publicly (HiPhO) help split "0.95 R_\odot"; a reference's own unit
    # never goes into the candidate's sandbox
    hints = [u for u in (problem.extra.get("units") or []) if isinstance(u, str)] if is_hipho(problem) else []
    job.update(answers=list(written.boxes), final=list(written.final), how=written.how, unit_hints=hints)
    return job


def _options_job(problem: Problem, candidate: str, job: dict) -> dict | str:
    """Stage 1's job for an answer to a problem with options: the letters it names and the option
    whose wording it repeats are read here (text only); what it says beside them is parsed in the
    sandbox, to be compared with the options' contents in stage 2."""
    assert problem.options is not None
    letters = list(problem.options)
    written = extract_written(candidate)
    named: str | None = None
    content = ""
    if written is not None:  # "(a) True (b) False (c) False": the options marked true, no content beside them
        marked = marked_true(written.last, letters)
        named, content = (marked, "") if marked else split_choice(written.last, letters)
    if named is None and not content:
        sentence = extract_choice(candidate, letters)  # "Only statement (a) is correct."
        named = sentence.last if sentence is not None else None
    if named is None and not content:  # a reply ending on its option: "(c) along lines circling the current"
        lines = [x.strip() for x in outside_thinking(candidate or "").splitlines() if x.strip()]
        if lines and re.match(r"\(?[A-Za-z]\)\s", lines[-1]):
            named, content = split_choice(lines[-1], letters)
    if named is None and not content:
        return f"no answer naming one of the options {', '.join(letters)} or giving one"
    job.update(answers=[content or named or ""], final=[0], how=written.how if written else "conclusion",
               unit_hints=[], options=True, letters=named, has_content=bool(content),
               wording=letters_by_wording(content, problem.options) if content else None)
    return job


def trusted_job(mode: str, trees: list[dict], spec: TemplateSpec, problem: Problem, *, step_timeout: float) -> dict:
    return {"mode": mode, "trees": trees, "symbols": spec.symbols_json(), "rtol": problem.rtol,
            "step_timeout": step_timeout, "precision": precision_rule(problem)}


def precision_rule(problem: Problem) -> str:
    """The precision policy's rule for a problem (rt/precision.py): CritPt's own for its challenges."""
    return "critpt" if problem.extra.get("format") == "critpt" else "stated"


def grade_job(problem: Problem, spec: TemplateSpec, tree: dict, written: dict | None, *,
              step_timeout: float) -> dict:
    """Stage 2's job: compare the candidate's answer (``tree``, or ``written`` boxes) with the reference."""
    assert problem.reference is not None
    job = trusted_job("grade", [tree], spec, problem, step_timeout=step_timeout)
    job.update(reference=problem.reference, format=problem.reference_format, template=problem.answer_template,
               function=spec.function, params=spec.params_json() or [],
               reference_timeout=max(step_timeout * 4, 10.0))
    if written is not None:
        job["written"] = written
    if is_hipho(problem):
        from physlab.grading.hipho import key_from_problem

        key = key_from_problem(problem)
        n = range(len(key.answers))
        job["hipho"] = {"answers": key.answers, "types": [key.type_of(i) for i in n],
                        "units": [key.unit_of(i) for i in n], "points": [key.points_of(i) for i in n],
                        "rtol": problem.rtol or 0.01}
    elif has_options(problem):
        assert problem.options is not None
        letters = list(problem.options)
        ref_letters = read_choice(problem.reference, letters)
        ref_said = split_choice(problem.reference, letters)[1] if ref_letters is None else ""
        job.update(format="latex", options=dict(problem.options), reference_letters=ref_letters,
                   reference_wording=letters_by_wording(ref_said, problem.options) if ref_said else None)
        found = extract_written(problem.reference)
        job["reference_answers"] = list(found.boxes) if found and found.how == "boxed" else [problem.reference]
    elif problem.choices:  # the letters, read as the candidate's are (extract.read_choice)
        job.update(format="latex", choices=list(problem.choices),
                   reference_answers=[read_choice(problem.reference, problem.choices) or problem.reference])
    elif problem.reference_format == "latex" or (problem.reference_format is None and "\\" in problem.reference):
        found = extract_written(problem.reference)
        job["reference_answers"] = list(found.boxes) if found and found.how == "boxed" else [problem.reference]
    return job


def verdict_from(out: dict, job: dict, details: dict[str, Any]) -> Verdict:
    """The Verdict for stage 2's reply: what was compared (normalised reference and candidate, the
    method), per part when there are several, points for HiPhO items."""
    compared = out.get("compared") or {}
    details = {**details, "method": out.get("method", ""),
               "reference_normalized": compared.get("reference", ""),
               "candidate_normalized": compared.get("candidate", "")}
    if isinstance(out.get("candidate_latex"), str):  # the answer as math, from its tree (rt/stages.py)
        details["candidate_latex"] = out["candidate_latex"]
    parts = out.get("parts") or []
    if "hipho" in job:
        key = job["hipho"]
        details.update(points=out.get("points", 0.0), points_total=out.get("points_total", 0.0),
                       answers=[{"index": i, "answer_type": key["types"][i], "unit": key["units"][i],
                                 "points": key["points"][i], "reference": p.get("reference", ""),
                                 "candidate": p.get("candidate", ""), "correct": bool(p.get("correct")),
                                 "reason": p.get("reason", ""), "method": p.get("method", "")}
                                for i, p in enumerate(parts)])
    elif len(parts) > 1:
        details["parts"] = parts
    return Verdict(verdict=out["verdict"], reason=out["reason"], details=details)


def read_stage1(data: bytes, *, written_path: bool) -> tuple[dict | None, dict | None, str]:
    """Stage 1's result file as data: ``(tree, written, "")`` or ``(None, None, reason)``.

    The file comes from the candidate's sandbox run, where the candidate's code may have written it
    itself: everything in it is checked by type (``tree.validate``, ``check_written``), so a file
    written by hand is worth no more than a value the candidate returned. A code answer has no
    written part; one in the file is refused."""
    bad = "the candidate's answer could not be read (malformed result)"
    try:
        msg = json.loads(data)
    except (ValueError, RecursionError):
        return None, None, bad
    if not isinstance(msg, dict) or type(msg.get("ok")) is not bool:
        return None, None, bad
    if not msg["ok"]:
        return None, None, str(msg.get("reason") or "no answer")[:500]
    problem = T.validate(msg.get("tree"))
    if problem:
        return None, None, problem
    written = msg.get("written")
    if not written_path:
        return (msg["tree"], None, "") if written is None else (None, None, bad)
    problem = check_written(written)
    return (None, None, problem) if problem else (msg["tree"], written, "")


# What a candidate's written part may hold (``latex.parse_answer``): answer trees, text, flags.
_PART_TREES = ("value", "lhs", "unsplit", "comma_decimal")
_PART_TEXTS = ("label", "unit", "remark")
_PART_REQUIRED_TEXTS = ("text", "raw")
_PART_FLAGS = ("unit_marked", "paren_pair")


_LETTERS = re.compile(r"[A-Z](?:, [A-Z]){0,25}")


def check_written(written: Any) -> str:
    """Check the sandbox's parsed written answer (it crossed from the untrusted stage) field by
    field; '' when fine, else a one-line reason."""
    bad = "the answer could not be read (malformed result)"
    if not isinstance(written, dict) or not isinstance(written.get("boxes"), list) or not written["boxes"]:
        return bad
    boxes, final = written["boxes"], written.get("final")
    if len(boxes) > 50 or not isinstance(written.get("how", ""), str):
        return bad
    if not isinstance(final, list) or not final or not all(
            type(k) is int and 0 <= k < len(boxes) for k in final):
        return bad
    for name in ("letters", "wording"):  # an answer to a problem with options (stage 1 echoes the host's reading)
        value = written.get(name)
        if value is not None and not (isinstance(value, str) and _LETTERS.fullmatch(value)):
            return bad
    if type(written.get("has_content", False)) is not bool:
        return bad
    budget = [T.MAX_NODES]
    for box in boxes:
        if not isinstance(box, dict) or type(box.get("ok")) is not bool or not isinstance(box.get("parts"), list):
            return bad
        if not isinstance(box.get("error", ""), str):
            return bad
        for part in box["parts"]:
            problem = _part_problem(part, budget)
            if problem:
                return problem
    return ""


def _part_problem(part: Any, budget: list[int]) -> str:
    bad = "the answer could not be read (malformed result)"
    if not isinstance(part, dict) or not isinstance(part.get("value"), dict):
        return bad
    for name in _PART_TREES:
        if part.get(name) is not None:
            problem = T.validate(part[name], budget)
            if problem:
                return problem
    alts = part.get("alts", [])
    if not isinstance(alts, list) or any(T.validate(a, budget) for a in alts):
        return bad
    if any(not isinstance(part.get(name), str) for name in _PART_REQUIRED_TEXTS):
        return bad
    if any(part.get(name) is not None and not isinstance(part[name], str) for name in _PART_TEXTS):
        return bad
    if any(type(part.get(name, False)) is not bool for name in _PART_FLAGS):
        return bad
    literals = part.get("literals", {})
    if not isinstance(literals, dict) or not all(type(v) is int for v in literals.values()):
        return bad
    known = set(_PART_TREES) | set(_PART_TEXTS) | set(_PART_REQUIRED_TEXTS) | set(_PART_FLAGS) | {"alts", "literals"}
    # fields the reader may add later: plain JSON scalars only (nothing stage 2 would rebuild)
    if any(k not in known and not (v is None or type(v) in (str, bool, int, float)) for k, v in part.items()):
        return bad
    return ""
