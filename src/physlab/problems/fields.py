"""Small typed readers shared by the loaders: each failure is one ProblemFileError line saying
which file, which field and what was expected."""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import yaml

from physlab.errors import ProblemFileError

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "nothing (null)"}.get(type(value), type(value).__name__)


def slug(name: str) -> str:
    """A file name made into a valid problem id."""
    s = re.sub(r"[^A-Za-z0-9_.\-]+", "_", name).strip("_.-")
    return s or "problem"


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProblemFileError("file not found", path=path) from None
    except IsADirectoryError:
        raise ProblemFileError("expected a file, got a directory", path=path) from None
    except UnicodeDecodeError as exc:
        raise ProblemFileError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise ProblemFileError(f"cannot read file ({exc.strerror})", path=path) from None


# How much YAML aliases may add: the document as constructed (values and characters, every alias
# counted as the copy it becomes) may be this many times the file's size, plus this much. Sharing a
# template between a suite's problems stays far below; a "billion laughs" file is refused before
# anything is built (a few hundred bytes of aliases can stand for billions of values).
ALIAS_GROWTH, ALIAS_SLACK = 10, 1_000_000
DEEP = "nested too deeply to read"
# Lists and mappings inside each other: real problem files stay under ten levels; past this, the
# JSON of a problem (a results database, `problems show --json`) could not be written.
MAX_DEPTH = 64


def _check_depth(data: Any, path: Path, where: str = "") -> Any:
    """``data`` if no list or mapping in it lies more than MAX_DEPTH levels deep. A structure that
    shares a part (as YAML aliases make) is measured through every path to it, each part once; one
    that contains itself is infinitely deep."""
    heights: dict[int, int] = {}  # levels from a container down to its deepest (-1: being measured)

    def too_deep() -> ProblemFileError:
        return ProblemFileError(f"{where}{DEEP} (lists or mappings inside each other more than {MAX_DEPTH} "
                                "levels deep)", path=path)

    def height(value: Any, depth: int) -> int:
        if not isinstance(value, (dict, list)):
            return 0
        known = heights.get(id(value))
        if known is not None:
            if known < 0 or depth + known - 1 > MAX_DEPTH:
                raise too_deep()
            return known
        if depth > MAX_DEPTH:
            raise too_deep()
        heights[id(value)] = -1
        children = value.values() if isinstance(value, dict) else value
        heights[id(value)] = 1 + max((height(child, depth + 1) for child in children), default=0)
        return heights[id(value)]

    height(data, 1)
    return data


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Values plus characters of ``node`` once every alias in it is a copy (shared nodes counted
    each time they are used, computed once)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    if isinstance(node, yaml.ScalarNode):
        size = 1 + len(node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, memo) for child in node.value)
    else:
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[id(node)] = size
    return size


# Constructs PyYAML reports where they opened (its "context") when they never close.
_OPENED = {"while scanning a quoted scalar": "a quoted string opens here and never closes",
           "while parsing a flow sequence": "a [ list opens here and never closes",
           "while parsing a flow mapping": "a { mapping opens here and never closes"}


def yaml_error(text: str, exc: Exception) -> str:
    """Where a YAML mistake was made, and what it is. PyYAML places an unclosed quote or list where
    it gave up -- the end of the file, or wherever the runaway string stopped -- so the line that
    opened it is named instead (its ``context_mark``, or the quoted string that ran on over lines
    before the error)."""
    mark, context = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    opened = _OPENED.get(getattr(exc, "context", None) or "")
    if context is not None and opened:
        at = f" at line {mark.line + 1}" if mark is not None and mark.line != context.line else ""
        return f"line {context.line + 1}, column {context.column + 1}: {opened} ({problem}{at})"
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    runaway = _runaway_quote(text, mark.line) if mark is not None else None
    if runaway is not None:
        return (f"line {runaway[0] + 1}: a quoted string opens here and runs on to line {runaway[1] + 1} -- a "
                f"closing quote missing? ({where}{problem})")
    return f"{where}{problem}"


def _runaway_quote(text: str, before_line: int) -> tuple[int, int] | None:
    """(first, last line) of the last quoted string spanning lines that ends at or before
    ``before_line`` (legal YAML, but in a problem file a missing closing quote), or None."""
    found = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.line > before_line:
                break
            if (isinstance(token, yaml.ScalarToken) and token.style in ('"', "'")
                    and token.end_mark.line > token.start_mark.line):
                found = (token.start_mark.line, token.end_mark.line)
    except yaml.YAMLError:
        pass  # the scanner stops where the parser did, or before: what it saw is all there is
    return found


def read_yaml(path: Path) -> Any:
    text = read_text(path)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size, limit = _expanded_size(node, {}), ALIAS_GROWTH * len(text) + ALIAS_SLACK
        if size > limit:
            raise ProblemFileError(f"its YAML aliases (*name) expand it to {size:.2g} values and characters "
                                   f"(at most {limit:,} for this file); write the shared parts out", path=path)
        return _check_depth(loader.construct_document(node), path, "YAML ")
    except yaml.YAMLError as exc:
        raise ProblemFileError(f"invalid YAML ({yaml_error(text, exc)})", path=path) from None
    except RecursionError:
        raise ProblemFileError(f"YAML {DEEP} (lists or mappings inside each other too many levels deep)",
                               path=path) from None
    finally:
        loader.dispose()


def read_json(path: Path) -> Any:
    text = read_text(path)
    try:
        return _check_depth(json.loads(text), path, "JSON ")
    except json.JSONDecodeError as exc:
        raise ProblemFileError(f"invalid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path=path) from None
    except RecursionError:
        raise ProblemFileError(f"JSON {DEEP} (arrays or objects inside each other too many levels deep)",
                               path=path) from None


def read_jsonl(path: Path) -> list[Any]:
    records = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(_check_depth(json.loads(line), path, f"JSON on line {n} "))
        except json.JSONDecodeError as exc:
            raise ProblemFileError(f"invalid JSON on line {n} (column {exc.colno}: {exc.msg})", path=path) from None
        except RecursionError:
            raise ProblemFileError(f"JSON on line {n} {DEEP} (arrays or objects inside each other too many "
                                   "levels deep)", path=path) from None
    return records


def get_str(data: dict, key: str, *, path: Path, required: bool = False, where: str = "") -> str | None:
    field = f"{where}{key}"
    value = data.get(key)
    if value is None:
        if required:
            raise ProblemFileError("missing; expected a non-empty string", path=path, field=field)
        return None
    if not isinstance(value, str):
        raise ProblemFileError(f"expected a string, got {type_name(value)}", path=path, field=field)
    if required and not value.strip():
        raise ProblemFileError("is empty; expected a non-empty string", path=path, field=field)
    return value


def get_float(data: dict, key: str, *, path: Path, where: str = "", positive: bool = True) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ProblemFileError(f"expected a number, got {value!r}", path=path, field=f"{where}{key}") from None
        else:
            raise ProblemFileError(f"expected a number, got {type_name(value)}", path=path, field=f"{where}{key}")
    if positive and not value > 0:
        raise ProblemFileError(f"expected a positive number, got {value}", path=path, field=f"{where}{key}")
    return float(value)


def get_rtol(data: dict, key: str = "rtol", *, path: Path, where: str = "") -> float | None:
    """A relative tolerance: a finite number in (0, 1). 1 or more would accept 0 for any reference
    (and infinity everything): that is a typo for a percentage or a missing exponent, not a tolerance."""
    value = get_float(data, key, path=path, where=where)
    if value is not None and not (math.isfinite(value) and value < 1):
        raise ProblemFileError(f"expected a relative tolerance between 0 and 1 (e.g. 1e-3), got {value}",
                               path=path, field=f"{where}{key}")
    return value


def get_int(data: dict, key: str, *, path: Path, where: str = "") -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise ProblemFileError(f"expected an integer, got {type_name(value)}", path=path, field=f"{where}{key}")
    return value


def check_id(value: Any, *, path: Path, field: str = "id") -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise ProblemFileError(
            f"expected an id made of letters, digits, '_', '.', '-' (no spaces or '/'), got {value!r}",
            path=path, field=field)
    return value


# What every provider PhysLab sends figures to (OpenAI, Anthropic, Google) takes as an image, told by
# the file's first bytes: a figure named ``.png`` that holds anything else is not sent.
_IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"))


def image_format(head: bytes) -> str | None:
    """PNG, JPEG, GIF or WebP from a file's first 12 bytes; None for anything else."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    return next((name for magic, name in _IMAGE_MAGIC if head.startswith(magic)), None)


def contained_image(name: str, *, base: Path, path: Path, field: str) -> Path:
    """``name`` (relative to ``base``, or absolute) as a resolved path that is still inside
    ``base``: no absolute path or ``../`` that leaves it, no link that points out of it."""
    target = (base / name).absolute()  # (an absolute name stays itself)
    if not Path(os.path.normpath(target)).is_relative_to(os.path.normpath(base.absolute())):
        raise ProblemFileError(f"image {name} is outside the problem's directory ({base.absolute()}); figures "
                               "must be files beside the problem", path=path, field=field)
    resolved = target.resolve()
    if not resolved.is_relative_to(base.resolve()):
        raise ProblemFileError(f"image {name} is a link to a file outside the problem's directory ({resolved}); "
                               "copy the file in instead", path=path, field=field)
    return resolved


def resolve_images(names: Any, *, base: Path, path: Path, field: str = "images") -> list[Path]:
    """Image names relative to ``base`` -> absolute paths of image files inside ``base``."""
    if names is None:
        return []
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ProblemFileError(f"expected a list of file paths, got {type_name(names)}", path=path, field=field)
    out = []
    for name in names:
        p = contained_image(name, base=base, path=path, field=field)
        if not p.is_file():
            raise ProblemFileError(f"image not found: {name} (looked for {p})", path=path, field=field)
        try:
            with p.open("rb") as fh:
                head = fh.read(12)
        except OSError as exc:
            raise ProblemFileError(f"cannot read image {name} ({exc.strerror})", path=path, field=field) from None
        if image_format(head) is None:
            raise ProblemFileError(f"image {name} is not a PNG, JPEG, GIF or WebP image (by its first bytes)",
                                   path=path, field=field)
        out.append(p)
    return out


def check_keys(data: dict, known: dict[str, str], *, path: Path, where: str = "",
               aliases: dict[str, str] | None = None) -> None:
    """Refuse a key that is not one of ``known`` (name -> what it holds), naming the nearest known
    one: a misspelt ``rtoll`` silently ignored would grade at the default tolerance."""
    for key in data:
        if key in known:
            continue
        text = str(key)
        near = (aliases or {}).get(text.lower()) or next(iter(difflib.get_close_matches(text.lower(), known, n=1, cutoff=0.6)), None)
        hint = f"did you mean '{near}'? ({near}: {known[near]})" if near else f"known keys: {', '.join(known)}"
        raise ProblemFileError(f"unknown key; {hint}", path=path, field=f"{where}{text}")
