"""TPBench-style records (JSON list or JSONL).

Shape taken from the public dataset card of ZhiqiGao/TPBench: ``problem_id``, ``domain``,
``difficulty_level``, ``problem``, ``solution``, ``answer`` (usually LaTeX),
``code_answer_requirements`` (how the answer must be written as a Python function) and
``reference_implementation`` (that function, i.e. answer key). The reference is ``answer``; the
template is built from the signature of the reference implementation, renamed to ``answer`` so
every grader path sees the same entry point, and the implementation itself is kept hidden under
``extra["answer_key_reference_implementation"]``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from physlab.errors import ProblemFileError
from physlab.problems.fields import check_id, get_str, type_name
from physlab.problems.model import Problem
from physlab.problems.templates import check_reference, detect_reference_format, parse_template


def looks_like_tpbench(data: Any) -> bool:
    return (isinstance(data, list) and bool(data) and all(isinstance(x, dict) for x in data)
            and "problem" in data[0] and ("answer" in data[0] or "problem_id" in data[0])
            and "answer_template" not in data[0])  # that is a list of YAML-format problems


def _template_from(impl: str | None, requirements: str | None, *, path: Path, field: str) -> str | None:
    if not impl or not impl.strip():
        return None
    try:
        tree = ast.parse(impl)
    except SyntaxError as exc:
        raise ProblemFileError(f"does not parse as Python (line {exc.lineno}: {exc.msg})", path=path, field=field) from None
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if func is None:
        raise ProblemFileError("expected a Python function definition", path=path, field=field)
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    args = ast.unparse(func.args)
    doc = (requirements or f"Fill in the result of {func.name}.").replace('"""', "'''")
    lines = [*imports, "", "", f"def answer({args}):", f'    r"""{doc.strip()}"""', "    result = ...", "    return result", ""]
    return "\n".join(lines).lstrip("\n")


def _difficulty(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = re.search(r"\d+", str(value or ""))
    return int(m.group()) if m else None


def load_tpbench_data(data: Any, path: Path) -> list[Problem]:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ProblemFileError(f"expected TPBench records (a list of mappings), got {type_name(data)}", path=path)
    problems = []
    for i, rec in enumerate(data):
        where = f"[{i}]."
        if not isinstance(rec, dict):
            raise ProblemFileError(f"expected a mapping, got {type_name(rec)}", path=path, field=f"[{i}]")
        raw_id = rec.get("problem_id", rec.get("id", f"{path.stem}_{i}"))
        pid = check_id(str(raw_id).strip().replace(" ", "_"), path=path, field=f"{where}problem_id")
        statement = get_str(rec, "problem", path=path, required=True, where=where)
        requirements = get_str(rec, "code_answer_requirements", path=path, where=where)
        impl = get_str(rec, "reference_implementation", path=path, where=where)
        template = _template_from(impl, requirements, path=path, field=f"{where}reference_implementation")
        info = parse_template(template, path=path) if template else None
        answer = get_str(rec, "answer", path=path, where=where)
        reference = fmt = None
        if answer and answer.strip():
            reference, fmt = answer.strip(), detect_reference_format(answer)
            if fmt == "python":  # a bare formula without LaTeX markers: keep it as text to compare
                fmt = "latex"
            check_reference(reference, fmt, template=info, path=path, field=f"{where}answer")
        extra: dict[str, Any] = {"format": "tpbench", "domain": rec.get("domain")}
        if requirements:
            extra["code_answer_requirements"] = requirements
        if impl:
            extra["answer_key_reference_implementation"] = impl
        text = statement.strip()
        if requirements:
            text += "\n\n" + requirements.strip()
        problems.append(Problem(
            id=pid, statement=text, answer_template=template, reference=reference, reference_format=fmt,
            solution=get_str(rec, "solution", path=path, where=where), source="TPBench",
            difficulty=_difficulty(rec.get("difficulty_level")), path=path.resolve(), extra=extra,
        ))
    return problems
