"""HiPhO JSON (SciYu/HiPhO, MIT): olympiad items with ``\\boxed{}`` answers and marking schemes.

The file is a list: the first element is the general data sheet (``{"information": ...}``), the
rest are items with ``id``, ``context``, ``question``, ``marking`` (step scheme), ``answer`` (list
of ``\\boxed{...}``), ``answer_type``, ``unit``, ``points``, ``image_question`` (figure paths
relative to the file). Statement = data sheet + context + question; reference = the boxed
answers, one per line (LaTeX). The marking scheme and the answers also go to ``extra`` under
``answer_key_*`` so :meth:`Problem.public` strips them; answer types, units and points are public
(they say what to answer, not what the answer is).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from physlab.errors import ProblemFileError
from physlab.problems.fields import check_id, get_str, resolve_images, type_name
from physlab.problems.model import Problem

ITEM_KEYS = ("id", "question", "answer")


def looks_like_hipho(data: Any) -> bool:
    if not isinstance(data, list) or not data or not all(isinstance(x, dict) for x in data):
        return False
    return "information" in data[0] or all(k in data[0] for k in ("context", "question", "marking"))


def _str_list(item: dict, key: str, *, path: Path, where: str, allow_none_items: bool = False) -> list:
    value = item.get(key)
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise ProblemFileError(f"expected a list, got {type_name(value)}", path=path, field=f"{where}{key}")
    return value


def load_hipho_data(data: Any, path: Path) -> list[Problem]:
    if not isinstance(data, list) or not data:
        raise ProblemFileError(f"expected a HiPhO list (data sheet, then items), got {type_name(data)}", path=path)
    sheet = ""
    items = data
    if isinstance(data[0], dict) and "information" in data[0]:
        sheet = get_str(data[0], "information", path=path, where="[0].") or ""
        items = data[1:]
    problems = []
    for i, item in enumerate(items, start=len(data) - len(items)):
        where = f"[{i}]."
        if not isinstance(item, dict):
            raise ProblemFileError(f"expected a mapping, got {type_name(item)}", path=path, field=f"[{i}]")
        pid = check_id(item.get("id"), path=path, field=f"{where}id")
        context = get_str(item, "context", path=path, where=where) or ""
        question = get_str(item, "question", path=path, required=True, where=where)
        answers = _str_list(item, "answer", path=path, where=where)
        if answers and all(isinstance(a, str) and not a.strip() for a in answers):
            answers = []  # an open-ended item with no key (HiPhO grades it by its marking scheme only)
        elif not answers or not all(isinstance(a, str) and a.strip() for a in answers):
            raise ProblemFileError("expected a non-empty list of \\boxed{...} answers", path=path, field=f"{where}answer")
        marking = item.get("marking") or []
        if not isinstance(marking, list):
            raise ProblemFileError(f"expected a list of marking schemes, got {type_name(marking)}", path=path,
                                   field=f"{where}marking")
        images = resolve_images(item.get("image_question") or [], base=path.parent, path=path,
                                field=f"{where}image_question")
        parts = [p.strip() for p in (sheet, context, question) if p and p.strip()]
        extra: dict[str, Any] = {
            "format": "hipho",
            "answer_types": _str_list(item, "answer_type", path=path, where=where),
            "units": _str_list(item, "unit", path=path, where=where),
            "points": _str_list(item, "points", path=path, where=where),
            "field": item.get("field"),
            "modality": item.get("modality"),
            "answer_key_answers": answers,
            "answer_key_marking": marking,
        }
        problems.append(Problem(
            id=pid,
            statement="\n\n".join(parts),
            reference="\n".join(a.strip() for a in answers) if answers else None,
            # every answer open-ended (words): no rule reads them, a judge model may
            reference_format=(None if not answers else "prose" if extra["answer_types"] and all(
                str(t).lower() == "open-ended" for t in extra["answer_types"]) else "latex"),
            images=images,
            source=str(item.get("source") or "HiPhO"),
            path=path.resolve(),
            extra=extra,
        ))
    if not problems:
        raise ProblemFileError("no items after the data sheet", path=path)
    return problems
