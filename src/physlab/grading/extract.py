"""Pull the answer out of model output (pure text processing: nothing is executed here)."""

from __future__ import annotations

import ast
import re

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$",
                    re.DOTALL | re.MULTILINE)
_PY_LANGS = {"python", "py", "python3", "sympy", "ipython"}


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block, in order."""
    return [(m.group(2).lower(), m.group(3)) for m in _FENCE.finditer(text)]


def _defines_function(source: str, name: str | None = "answer") -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (name is None or n.name == name)
               for n in tree.body)


def extract_code(text: str | None, function: str = "answer") -> str | None:
    """The candidate's Python: the LAST fenced python block (an untagged block counts when no
    tagged one exists), or the text itself when it is Python defining ``function``. None when
    there is neither. A block that does not parse is still returned: the grader then reports the
    syntax error (invalid) rather than "no code"."""
    if not text or not text.strip():
        return None
    blocks = fenced_blocks(text)
    py = [b for lang, b in blocks if lang in _PY_LANGS]
    if py:
        return py[-1]
    untagged = [b for lang, b in blocks if lang == ""]
    if untagged:
        defining = [b for b in untagged if _defines_function(b, function)]
        return (defining or untagged)[-1]
    if _defines_function(text, function):
        return text
    if not blocks and re.search(rf"^\s*def\s+{re.escape(function)}\s*\(", text, re.MULTILINE):
        return text  # looks like Python that does not parse: let the grader say why
    return None


def _balanced(text: str, start: int) -> str | None:
    depth, j = 1, start
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:j]
        j += 1
    return None


def extract_boxed(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` (balanced braces), in order."""
    out = []
    for m in re.finditer(r"\\boxed\s*\{", text):
        body = _balanced(text, m.end())
        if body is not None:
            out.append(body.strip())
    return out


def extract_final_answer(text: str | None) -> str | None:
    """The final answer of a text reply: what follows the last "Final Answer:" marker (to the end
    of its line, or the boxed content on it), else the last ``\\boxed{...}``; None if neither."""
    if not text:
        return None
    marks = list(re.finditer(r"final\s+answer\s*(?:is)?\s*[:：]\s*", text, re.IGNORECASE))
    if marks:
        rest = text[marks[-1].end():]
        boxed = extract_boxed(rest)
        if boxed:
            return boxed[0]
        line = rest.strip().split("\n", 1)[0].strip()
        line = line.strip("*").strip()
        if line.startswith("$") and line.endswith("$") and len(line) > 1:
            line = line.strip("$").strip()
        if line:
            return line
    boxed = extract_boxed(text)
    return boxed[-1] if boxed else None


def fill_template(template: str, values: dict[str, str]) -> str:
    """Replace the template's ``NAME = ...`` placeholders with ``NAME = <values[NAME]>`` (keeping
    indentation and trailing comments out). Names not in ``values`` stay ``...``."""
    def sub(m: re.Match) -> str:
        indent, name = m.group(1), m.group(2)
        if name not in values:
            return m.group(0)
        return f"{indent}{name} = {values[name].strip()}"

    return re.sub(r"^([ \t]*)([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*\.\.\.[^\n]*$", sub, template, flags=re.MULTILINE)
