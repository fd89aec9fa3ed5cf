"""Load problems from a file (any supported format) or a directory (a suite)."""

from __future__ import annotations

from pathlib import Path

from physlab.errors import ProblemFileError
from physlab.problems.critpt import load_critpt_data, looks_like_critpt
from physlab.problems.fields import DEEP, read_json, read_jsonl, read_yaml, slug, type_name
from physlab.problems.hipho import load_hipho_data, looks_like_hipho
from physlab.problems.markdown import load_markdown
from physlab.problems.model import Problem
from physlab.problems.tpbench import load_tpbench_data, looks_like_tpbench
from physlab.problems.yaml_format import load_yaml_data

SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".md")
# Files in a suite directory that document it rather than pose a problem.
_DOC_STEMS = {"readme", "source", "sources", "license", "licence", "notice", "changelog", "copying"}


def _load_json_like(data, path: Path) -> list[Problem]:
    if looks_like_critpt(data):
        return load_critpt_data(data, path)
    if looks_like_hipho(data):
        return load_hipho_data(data, path)
    if looks_like_tpbench(data):
        return load_tpbench_data(data, path)
    if isinstance(data, dict) and "problem" in data:
        return load_yaml_data(data, path)
    if isinstance(data, list) and data and all(isinstance(x, dict) and "problem" in x for x in data):
        return load_yaml_data(data, path)
    if isinstance(data, (dict, list)):
        raise ProblemFileError(
            "unrecognised problem file: expected a CritPt challenge (mapping with 'dataset_name' and "
            "'problems'), a HiPhO list (data sheet then items with 'question'/'answer'), TPBench records "
            "(items with 'problem'/'answer') or a single problem (mapping with 'problem')", path=path)
    raise ProblemFileError(f"expected a JSON object or list, got {type_name(data)}", path=path)


def _unique_ids(problems: list[Problem], path: Path) -> list[Problem]:
    """``FILE#ID`` must name one problem: a file may not hold the same id twice."""
    seen: set[str] = set()
    for i, prob in enumerate(problems):
        if prob.id in seen:
            raise ProblemFileError(f"duplicate problem id '{prob.id}' (problem {i + 1} of {len(problems)}); "
                                   "ids must be unique in a file", path=path)
        seen.add(prob.id)
    return problems


def load_file(path: str | Path) -> list[Problem]:
    """Every problem in one file. Format by suffix, then by shape for JSON."""
    try:
        return _unique_ids(_load_file(Path(path)), Path(path))
    except (RecursionError, MemoryError):
        # Python's parser and our readers recurse with the file's nesting (an expression like
        # ``------...1`` 100,000 deep exhausts the parser's stack): the file's fault, one line.
        raise ProblemFileError(f"{DEEP} (something in it is nested too many levels deep)", path=Path(path)) from None


def _load_file(path: Path) -> list[Problem]:
    if path.is_dir():
        raise ProblemFileError("expected a problem file, got a directory (load it as a suite)", path=path)
    if not path.exists():
        raise ProblemFileError("file not found", path=path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return load_yaml_data(read_yaml(path), path)
    if suffix == ".json":
        return _load_json_like(read_json(path), path)
    if suffix == ".jsonl":
        records = read_jsonl(path)
        if not records:
            raise ProblemFileError("file is empty; expected one JSON record per line", path=path)
        return load_tpbench_data(records, path) if looks_like_tpbench(records) else _load_json_like(records, path)
    if suffix in (".md", ".markdown"):
        return load_markdown(path, default_id=slug(path.stem))
    raise ProblemFileError(f"unsupported problem file type {suffix or '(none)'!r}; expected one of {', '.join(SUFFIXES)}",
                           path=path)


def suite_files(directory: Path) -> list[Path]:
    """Problem files under ``directory`` (recursive), skipping hidden paths and README/LICENSE-like docs."""
    out = []
    for p in sorted(directory.rglob("*")):
        rel = p.relative_to(directory)
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        if p.is_file() and p.suffix.lower() in SUFFIXES and p.stem.lower() not in _DOC_STEMS:
            out.append(p)
    return out


def load_directory(directory: str | Path, *, suite: str | None = None) -> list[Problem]:
    """All problems in a directory; ids must be unique across its files."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProblemFileError("expected a directory of problem files", path=directory)
    seen: dict[str, Path] = {}
    problems: list[Problem] = []
    for f in suite_files(directory):
        for prob in load_file(f):
            if prob.id in seen:
                raise ProblemFileError(
                    f"duplicate problem id '{prob.id}' (also in {seen[prob.id]}); ids must be unique in a suite",
                    path=f, field="id")
            seen[prob.id] = f
            problems.append(prob.model_copy(update={"suite": suite}) if suite else prob)
    return problems
