"""CritPt challenge JSON (CritPt-Benchmark/CritPt, ``data/*.json``).

One file is ``{"dataset_name": ..., "problems": [...]}`` with a main problem and, for some
challenges, sub-problems. Each has ``problem_id``, ``problem_type`` (main/sub),
``problem_description`` (Markdown), ``code_template`` (defines ``answer(...)``) and — only in the
public example — ``answer_code`` / ``answer_only_code``. The reference is ``answer_only_code``: an
assignment in the template's names evaluated with the template's module scope (``sp``, ``p``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from physlab.errors import ProblemFileError
from physlab.problems.fields import check_id, get_str, type_name
from physlab.problems.model import Problem
from physlab.problems.templates import check_reference, parse_template

_ITEM_KEYS = ("problem_id", "code_template", "problem_description")


def looks_like_critpt(data: Any) -> bool:
    """A challenge mapping; also one that lost ``dataset_name`` but whose items are CritPt's, so
    the loader can say which field is missing instead of "unrecognised file"."""
    if not isinstance(data, dict) or "problems" not in data:
        return False
    items = data["problems"]
    return "dataset_name" in data or (isinstance(items, list) and any(
        isinstance(x, dict) and any(k in x for k in _ITEM_KEYS) for x in items))


def load_critpt_data(data: Any, path: Path) -> list[Problem]:
    if not isinstance(data, dict):
        raise ProblemFileError(f"expected a CritPt challenge (a mapping with 'dataset_name' and 'problems'), got {type_name(data)}", path=path)
    dataset = get_str(data, "dataset_name", path=path, required=True)
    items = data.get("problems")
    if not isinstance(items, list) or not items:
        raise ProblemFileError(f"expected a non-empty list of problems, got {type_name(items)}", path=path, field="problems")
    problems = []
    for i, item in enumerate(items):
        where = f"problems[{i}]."
        if not isinstance(item, dict):
            raise ProblemFileError(f"expected a mapping, got {type_name(item)}", path=path, field=f"problems[{i}]")
        pid = check_id(item.get("problem_id"), path=path, field=f"{where}problem_id")
        statement = get_str(item, "problem_description", path=path, required=True, where=where)
        template = get_str(item, "code_template", path=path, required=True, where=where)
        info = parse_template(template, path=path, field=f"{where}code_template")
        reference = (get_str(item, "answer_only_code", path=path, where=where) or "").strip() or None
        if reference is not None:
            check_reference(reference, "python", template=info, path=path, field=f"{where}answer_only_code")
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        extra: dict[str, Any] = {
            "format": "critpt",
            "dataset_name": dataset,
            "problem_type": item.get("problem_type"),
            "problem_index": item.get("problem_index"),
        }
        tag = str(meta.get("tag") or "").replace("# Tag:", "").strip().strip('"').strip()
        if tag:
            extra["tag"] = tag
        answer_code = get_str(item, "answer_code", path=path, where=where)
        if answer_code and reference is not None:
            extra["answer_key_answer_code"] = answer_code
        problems.append(Problem(
            id=pid,
            statement=statement.strip(),
            answer_template=template,
            reference=reference,
            reference_format="python" if reference is not None else None,
            source=f"CritPt/{dataset}",
            path=path.resolve(),
            extra=extra,
        ))
    return problems
