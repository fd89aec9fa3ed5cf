"""After a sweep: grade recorded answers when references arrive, and export the CritPt payload."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, Field, ValidationError

from physlab.bench.store import ResultsStore, cell_config
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
                   regrade: bool = False,
                   on_unknown: Callable[[list[str]], None] | None = None) -> dict[str, int]:
    """Grade every finished cell whose problem has a reference in FILE. Cells that already have a
    verdict are left alone unless ``regrade``. Returns counts per verdict. Answer ids that match
    no problem of the database (a typo, another suite) go to ``on_unknown``."""
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
    for cell in store.cells("state='done'"):
        entry = answers.get(cell["problem_id"])
        if entry is None or (cell["verdict"] is not None and not regrade):
            continue
        public = store.problem_public(cell["problem_id"])
        problem = Problem(**{**public, **entry})
        code = cell["answer_code"]
        if not code:
            verdict, reason = "invalid", "no answer code recorded"
        else:
            v = grader.grade(problem, code)
            if inspect.isawaitable(v):
                v = await v
            verdict, reason = v.verdict, v.reason
        store.set_verdict(cell["key"], verdict, reason)
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


def critpt_payload(store: ResultsStore, *, strategy: str | None = None, model: str | None = None,
                   repeat: int | None = None, model_label: str | None = None,
                   config: str | None = None) -> dict[str, Any]:
    """The CritPt batch submission: one entry per challenge with its generated code (a fenced
    Python block, the form the evaluation API takes). With several repeats, the lowest repeat
    that produced code is used (or ``repeat`` when given). Cells run at another budget or with
    other parameters (``config``, as in the report) are another group, never mixed in."""
    where, params = ["state='done'"], []
    groups = {(c["strategy"], c["model"]) for c in store.cells("state='done'")}
    if strategy:
        where.append("strategy=?")
        params.append(strategy)
    if model:
        where.append("model=?")
        params.append(model)
    if repeat is not None:
        where.append("repeat=?")
        params.append(repeat)
    cells = store.cells(" AND ".join(where), tuple(params))
    if config is not None:
        cells = [c for c in cells if cell_config(c) == config]
    chosen_groups = {(c["strategy"], c["model"]) for c in cells}
    if len(chosen_groups) > 1:
        raise UserError(f"the database holds {len(groups)} strategy x model groups; choose one with "
                        f"--strategy and --model", field="--strategy/--model")
    if not cells:
        raise UserError("no finished cells match", field="--strategy/--model" + ("/--config" if config else ""))
    configs = sorted({cell_config(c) for c in cells})
    if len(configs) > 1:
        raise UserError(f"these cells were run at {len(configs)} budgets/parameter sets ({', '.join(configs)}); "
                        f"choose one with --config", field="--config")
    best: dict[str, dict] = {}
    for c in sorted(cells, key=lambda c: c["repeat"]):
        if c["problem_id"] not in best or (not best[c["problem_id"]]["answer_code"] and c["answer_code"]):
            best[c["problem_id"]] = c
    (strat, mod), = chosen_groups
    submissions = []
    for pid, c in sorted(best.items()):
        public = store.problem_public(pid) or {}
        sub_id = (public.get("extra") or {}).get("critpt_problem_id") or pid
        code = (c["answer_code"] or "").strip()
        if code and not code.startswith("```"):
            code = f"```python\n{code}\n```"
        submissions.append({
            "problem_id": sub_id,
            "generated_code": code,
            "model": model_label or mod,
            "generation_config": {"scaffold": strat, "physlab_cell": c["key"]},
        })
    return {"submissions": submissions, "batch_metadata": {"tool": "physlab", "strategy": strat, "model": mod}}
