"""The YAML problem format (as used by physics-intern), also accepted as a JSON object.

Keys (:data:`KNOWN_KEYS`; docs/problems.md has them with an example): ``problem`` (statement,
required), ``answer`` (reference: Python expression or assignments in the template's names, a
number, or LaTeX), ``answer_template`` (Python defining ``answer(...)``), optional ``solution``,
``rtol`` (relative tolerance in (0, 1)), ``images`` (paths relative to the file), ``id`` (default:
the file name), ``title``, ``source``, ``difficulty``, ``reference_format`` (overrides detection),
``tags``, ``metadata`` (anything else, kept with the problem). Any other key is refused with the
nearest known one. A file with only ``problem`` is an open question. A file may also hold a list
of such mappings (each then needs an ``id``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, cast

from physlab.errors import ProblemFileError
from physlab.problems.fields import (
    check_id,
    check_keys,
    get_int,
    get_rtol,
    get_str,
    resolve_images,
    slug,
    type_name,
)
from physlab.problems.model import Problem, ReferenceFormat
from physlab.problems.templates import check_reference, detect_reference_format, parse_template

KNOWN_KEYS = {
    "problem": "the statement, Markdown with LaTeX",
    "answer": "the reference answer",
    "answer_template": "Python defining answer(...) with ... blanks",
    "solution": "a reference solution",
    "rtol": "relative tolerance for numbers, e.g. 1e-3",
    "images": "figure files",
    "id": "the problem's id",
    "title": "a short title",
    "source": "where the problem comes from",
    "difficulty": "an integer",
    "reference_format": "python, number, latex or prose",
    "answer_format": "python, number or latex",
    "tags": "a list of labels",
    "metadata": "a mapping of anything else",
    "choices": "multiple choice: the option letters, e.g. [A, B, C, D] (or a mapping letter: option)",
}
# Names people reach for that difflib would not match to ours.
ALIASES = {"tolerance": "rtol", "tol": "rtol", "rel_tol": "rtol", "reltol": "rtol", "relative_tolerance": "rtol",
           "statement": "problem", "question": "problem", "template": "answer_template",
           "code_template": "answer_template", "reference": "answer", "reference_answer": "answer",
           "final_answer": "answer", "figures": "images", "image": "images", "name": "id"}


def _reference(data: dict, template_info, *, path: Path, where: str) -> tuple[str | None, str | None]:
    value = data.get("answer")
    fmt_field = "reference_format" if "reference_format" in data else "answer_format"
    explicit = data.get(fmt_field)
    if explicit is not None and not isinstance(explicit, str):
        raise ProblemFileError(f"expected python, number or latex, got {type_name(explicit)}", path=path,
                               field=f"{where}{fmt_field}")
    if value is None:
        return None, None
    if isinstance(value, bool):
        raise ProblemFileError("expected a Python expression, a number or LaTeX, got a boolean", path=path,
                               field=f"{where}answer")
    if isinstance(value, float) and not math.isfinite(value):
        raise ProblemFileError(f"expected a finite number, got {value}", path=path, field=f"{where}answer")
    if isinstance(value, (int, float)):
        text, fmt = repr(value), explicit or "number"
    elif isinstance(value, list) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        text, fmt = repr(value), explicit or "python"
    elif isinstance(value, str):
        text, fmt = value.strip(), explicit or detect_reference_format(value)
    else:
        raise ProblemFileError(f"expected a Python expression, a number or LaTeX, got {type_name(value)}",
                               path=path, field=f"{where}answer")
    check_reference(text, fmt, template=template_info, path=path, field=f"{where}answer")
    return text, fmt


def _choices(data: dict, *, path: Path, where: str) -> list[str] | None:
    """``choices: [A, B, C, D]`` (or ``{A: ..., B: ...}``, ``ABCD``): distinct single letters."""
    value = data.get("choices")
    if value is None:
        return None
    items = list(value) if isinstance(value, (list, dict, str)) else None
    if isinstance(value, str):
        items = [x for x in re.split(r"[\s,;]+", value) if x] if re.search(r"[\s,;]", value) else list(value)
    if (not items or not all(isinstance(x, str) and re.fullmatch(r"[A-Za-z]", x.strip()) for x in items)
            or len({x.strip().upper() for x in items}) != len(items)):
        raise ProblemFileError(f"expected distinct option letters, e.g. [A, B, C, D], got {value!r}"[:200],
                               path=path, field=f"{where}choices")
    return [x.strip().upper() for x in items]


def _option_texts(data: dict, choices: list[str] | None) -> dict[str, str] | None:
    """``choices: {A: text, B: text}``: the options' texts (a list of letters gives none)."""
    value = data.get("choices")
    if choices is None or not isinstance(value, dict) or not all(isinstance(v, (str, int, float)) for v in value.values()):
        return None
    return {str(k).strip().upper(): str(v).strip() for k, v in value.items()}


def _choice_reference(data: dict, choices: list[str], *, path: Path, where: str) -> str | None:
    """The reference of a multiple-choice problem: one or more of its letters (``B``, ``(b)``, ``[A, C]``)."""
    from physlab.problems.choices import read_choice

    value = data.get("answer")
    if value is None:
        return None
    text = ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    letters = read_choice(text, choices)
    if letters is None:
        raise ProblemFileError(f"expected one or more of the letters {', '.join(choices)}, got {text!r}"[:200],
                               path=path, field=f"{where}answer")
    return letters


def problem_from_mapping(data: Any, *, path: Path, default_id: str, where: str = "") -> Problem:
    if not isinstance(data, dict):
        raise ProblemFileError(f"expected a mapping with at least a 'problem' key, got {type_name(data)}",
                               path=path, field=where.rstrip(".") or None)
    check_keys(data, KNOWN_KEYS, path=path, where=where, aliases=ALIASES)
    statement = get_str(data, "problem", path=path, required=True, where=where)
    template = get_str(data, "answer_template", path=path, where=where)
    info = parse_template(template, path=path, field=f"{where}answer_template") if template is not None else None
    choices = _choices(data, path=path, where=where)
    if choices is not None:
        reference, fmt = _choice_reference(data, choices, path=path, where=where), "latex"
    else:
        reference, fmt = _reference(data, info, path=path, where=where)
    pid = check_id(data["id"], path=path, field=f"{where}id") if data.get("id") is not None else default_id
    extra: dict[str, Any] = {"format": "yaml"}
    if data.get("title") is not None:
        extra["title"] = str(data["title"])
    tags = data.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ProblemFileError(f"expected a list of strings, got {type_name(tags)}", path=path, field=f"{where}tags")
        extra["tags"] = tags
    metadata = data.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ProblemFileError(f"expected a mapping, got {type_name(metadata)}", path=path, field=f"{where}metadata")
        # anything that looks like part of the answer key stays hidden (Problem.public drops it)
        hidden = {str(k): v for k, v in metadata.items() if "answer" in str(k).lower() or "solution" in str(k).lower()}
        extra["metadata"] = {str(k): v for k, v in metadata.items() if str(k) not in hidden}
        if hidden:
            extra["answer_key_metadata"] = hidden
    return Problem(
        id=pid,
        statement=statement.strip(),
        answer_template=template,
        reference=reference,
        reference_format=cast("ReferenceFormat | None", fmt),  # check_reference accepted it
        solution=get_str(data, "solution", path=path, where=where),
        rtol=get_rtol(data, "rtol", path=path, where=where),
        choices=choices,
        options=_option_texts(data, choices),
        images=resolve_images(data.get("images"), base=path.parent, path=path, field=f"{where}images"),
        source=get_str(data, "source", path=path, where=where),
        difficulty=get_int(data, "difficulty", path=path, where=where),
        path=path.resolve(),
        extra=extra,
    )


def load_yaml_data(data: Any, path: Path) -> list[Problem]:
    """Problems from already-parsed YAML/JSON data (one mapping, or a list of mappings)."""
    if data is None:
        raise ProblemFileError("file is empty; expected a mapping with at least a 'problem' key", path=path)
    if isinstance(data, list):
        if not data:
            raise ProblemFileError("expected a non-empty list of problems", path=path)
        problems = []
        for i, item in enumerate(data):
            if not isinstance(item, dict) or item.get("id") is None:
                raise ProblemFileError("each problem in a list needs an 'id'", path=path, field=f"[{i}].id")
            problems.append(problem_from_mapping(item, path=path, default_id="", where=f"[{i}]."))
        return problems
    return [problem_from_mapping(data, path=path, default_id=slug(path.stem))]
