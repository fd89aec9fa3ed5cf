"""After a sweep: grade recorded answers when references arrive (the CritPt export is bench/critpt_export.py)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, Field, ValidationError

from physlab.bench.store import ResultsStore
from physlab.errors import UserError
from physlab.problems.model import ReferenceFormat


def load_answers(path: str | Path) -> dict[str, dict[str, Any]]:
    """FILE maps problem id -> reference (YAML or JSON). A value is the reference itself (string
    or number) or a mapping with ``reference`` and optional ``reference_format`` / ``rtol``."""
    path = Path(path)
    if not path.is_file():
        raise UserError("answers file not found", path=path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"not valid YAML/JSON ({str(exc).splitlines()[0]})", path=path) from None
    if not isinstance(data, dict) or not data:
        raise UserError("expected a mapping of problem id -> reference", path=path)
    out: dict[str, dict[str, Any]] = {}
    for pid, val in data.items():
        if isinstance(val, dict):
            if "reference" not in val:
                raise UserError("expected a 'reference' key", path=path, field=str(pid))
            entry = {k: val[k] for k in ("reference", "reference_format", "rtol") if k in val}
        elif isinstance(val, (str, int, float)):
            entry = {"reference": val}
        else:
            raise UserError("expected a string, a number or a mapping with 'reference'",
                            path=path, field=str(pid))
        ref = entry["reference"]
        if isinstance(ref, (int, float)):
            entry["reference"] = repr(ref)
            entry.setdefault("reference_format", "number")
        elif not isinstance(ref, str):
            raise UserError("reference must be a string or a number", path=path, field=str(pid))
        out[str(pid)] = _checked(entry, path, str(pid))
    return out


class AnswerEntry(BaseModel):
    """One reference of an answers file, checked before any cell is graded (a bad rtol or format
    is one line naming the entry, not a traceback halfway through the database)."""

    reference: str
    reference_format: ReferenceFormat | None = None
    rtol: float | None = Field(default=None, ge=0)


def _checked(entry: dict[str, Any], path: Path, pid: str) -> dict[str, Any]:
    try:
        return AnswerEntry(**entry).model_dump(exclude_none=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UserError(f"{where}: {err['msg']} (got {err.get('input')!r})", path=path, field=pid) from None


async def grade_db(store: ResultsStore, answers_path: str | Path, *, grader: Any = None,
                   regrade: bool = False, judge: str | None = None, api_base: str | None = None,
                   api_key_env: str | None = None,
                   on_unknown: Callable[[list[str]], None] | None = None) -> dict[str, int]:
    """Grade every finished cell whose problem has a reference in FILE (its answer code, else its
    written answer, as a run is graded). Cells that already have a verdict are left alone unless
    ``regrade`` (an ``ungraded`` one is graded again when a ``judge`` model is named). Returns counts
    per verdict. Answer ids that match no problem of the database (a typo, another suite) go to
    ``on_unknown``."""
    from physlab.problems.model import Problem

    answers = load_answers(answers_path)
    if grader is None:
        from physlab.grading import Grader

        grader = Grader()
    counts: dict[str, int] = {}
    unknown = [pid for pid in answers if store.problem_public(pid) is None]
    if unknown and len(unknown) == len(answers):
        raise UserError(f"no problem id in the answers file is in the database (e.g. {unknown[0]!r})",
                        path=answers_path)
    if unknown and on_unknown is not None:
        on_unknown(unknown)
    checkpoints: dict[str, list[dict[str, Any]]] = {}
    for cp in store.checkpoints():
        checkpoints.setdefault(cp["cell_key"], []).append(cp)
    for cell in store.cells(state="done"):
        entry = answers.get(cell["problem_id"])
        if entry is None or (cell["verdict"] is not None and not regrade
                             and not (judge and cell["verdict"] == "ungraded")):
            continue
        public = cast(dict[str, Any], store.problem_public(cell["problem_id"]))  # stored with its cells
        problem = Problem(**{**public, **entry})
        verdicts: dict[str, tuple[str, str]] = {}  # each distinct answer of the cell graded once

        async def grade(code: str | None, problem: Problem = problem,
                        verdicts: dict[str, tuple[str, str]] = verdicts) -> tuple[str, str]:  # this cell's
            if not code:
                return "invalid", "no answer code recorded"
            if code not in verdicts:
                v = grader.grade(problem, code)
                if inspect.isawaitable(v):
                    v = await v
                verdicts[code] = (v.verdict, v.reason)
            return verdicts[code]

        verdict, reason = await grade(cell["answer_code"] or cell["answer_text"])
        graded_checkpoints = {cp["idx"]: await grade(cp["answer_code"] or cp["answer_text"])
                              for cp in checkpoints.get(cell["key"], [])}
        by: dict[str, Any] = {}
        if verdict == "ungraded" and judge:  # a prose reference: the judge model decides the cell (not its checkpoints)
            from physlab.llm.judge import judge_with

            v = await judge_with(problem, cell["answer_text"] or cell["answer_code"] or "", judge, api_base=api_base,
                                 api_key_env=api_key_env)
            verdict, reason = v.verdict, v.reason
            j = v.details.get("judge") or {}
            if j.get("verdict"):
                by = {"graded_by": f"judge:{judge}", "grading_calls": int(j.get("calls") or 0),
                      "grading_cost_usd": float(j.get("cost_usd") or 0.0)}
        store.set_verdict(cell["key"], verdict, reason, graded_checkpoints, **by)
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts
