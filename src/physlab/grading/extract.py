"""Pull the answer out of model output (pure text processing: nothing is executed here)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

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


def _balanced(text: str, start: int) -> int | None:
    """Index of the brace closing the group opened just before ``start`` (None if unbalanced)."""
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
                return j
        j += 1
    return None


_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _boxes(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of every top-level ``\\boxed{...}`` / ``\\fbox{...}`` (nested boxes
    stay inside their parent's content); an unbalanced last box takes the rest of the text."""
    out: list[tuple[int, int, str]] = []
    i = 0
    while True:
        m = _BOX.search(text, i)
        if not m:
            return out
        close = _balanced(text, m.end())
        if close is None:
            out.append((m.start(), len(text), text[m.end():].strip()))
            return out
        out.append((m.start(), close + 1, text[m.end():close].strip()))
        i = close + 1


def extract_boxed(text: str) -> list[str]:
    """Contents of every top-level ``\\boxed{...}`` (or ``\\fbox{...}``), in order."""
    return [c for _, _, c in _boxes(text or "")]


# "Final answer" markers ("Final Answer:", "**Final answer**", "The final answer is").
_MARKER = re.compile(r"final\s+answer(?:\s*\*\*)?\s*(?:is\b)?\s*[:：]?", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"^[ \t>*#_]*answer(?:\s*\*\*)?\s*[:：]", re.IGNORECASE | re.MULTILINE)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.DOTALL)
# What may stand between two boxes of one answer ("\boxed{1}, \boxed{2}", "\boxed{a} and \boxed{b}").
# Stricter than Math-Verify's rule (any text under 70 characters holding a comma), which joins
# "\boxed{1}. After checking again, the answer is \boxed{2}" into one answer "1, 2".
_JOINER = re.compile(r"[,;]?(?:and|or|&)?[,;.]?", re.IGNORECASE)
_NOISE = re.compile(r"\$|\\[\[\]()]|\\(?:quad|qquad|[,;:! ])|\\text\s*\{\s*(and|or)\s*\}|\s+")


@dataclass(frozen=True)
class WrittenAnswer:
    """The final answer of a written (non-code) reply.

    ``boxes``: the answer strings in order (every box, or the boxes after the last "Final answer"
    marker when it points at boxes; a single string when the answer is a marker line or display
    math). ``final``: indices into ``boxes`` of the final group (the last run of adjacent boxes).
    ``how``: where it was found ("boxed", "final answer line", "answer line", "display math")."""

    boxes: tuple[str, ...]
    final: tuple[int, ...]
    how: str

    @property
    def last(self) -> str:
        return self.boxes[self.final[-1]]


def _clean_line(line: str) -> str:
    line = line.strip().strip("*_").strip()
    line = re.sub(r"^(?:the\s+)?(?:final\s+)?answer\s+is\s*:?\s*", "", line, flags=re.IGNORECASE)
    line = re.sub(r"\.?\s*I hope it is correct\.?\s*$", "", line, flags=re.IGNORECASE)
    line = line.strip().strip("*_").strip()
    if line.startswith("$$") and line.endswith("$$") and len(line) > 3:
        line = line[2:-2]
    elif line.startswith("$") and line.endswith("$") and len(line) > 1:
        line = line[1:-1]
    elif line.startswith("\\[") and line.endswith("\\]"):
        line = line[2:-2]
    return line.strip().rstrip(".").strip()


def extract_written(text: str | None) -> WrittenAnswer | None:
    """The final answer of a written reply (pure text processing: nothing is parsed or run).

    Boxes decide when there are any: the boxes after the last "Final answer" marker when it points
    at a box, otherwise every box (a marker line that restates a box in prose does not override
    it). Without a box: the rest of the last marker's line, else an "Answer:" line, else the last
    display-math block (``$$...$$`` or ``\\[...\\]``). None when there is no final answer."""
    if not text or not text.strip():
        return None
    marks = list(_MARKER.finditer(text))
    boxes = _boxes(text)
    if boxes:
        after = [b for b in boxes if marks and b[0] >= marks[-1].end()]
        chosen = after or boxes
        groups: list[list[int]] = [[0]]
        for k in range(1, len(chosen)):
            between = _NOISE.sub(lambda m: m.group(1) or "", text[chosen[k - 1][1]:chosen[k][0]])
            if _JOINER.fullmatch(between):
                groups[-1].append(k)
            else:
                groups.append([k])
        final = tuple(range(len(chosen))) if after else tuple(groups[-1])
        return WrittenAnswer(tuple(c for _, _, c in chosen), final, "boxed")
    for pattern, how in ((_MARKER, "final answer line"), (_ANSWER_LINE, "answer line")):
        found = list(pattern.finditer(text))
        if found:
            rest = text[found[-1].end():].strip()
            line = _clean_line(rest.split("\n\n", 1)[0].split("\n", 1)[0]) if rest else ""
            if line:
                return WrittenAnswer((line,), (0,), how)
    display = list(_DISPLAY.finditer(text))
    if display:
        body = (display[-1].group(1) or display[-1].group(2) or "").strip().rstrip(".,").strip()
        if body:
            return WrittenAnswer((body,), (0,), "display math")
    return None


def extract_final_answer(text: str | None) -> str | None:
    """The final answer string of a text reply (the last box of its final group, a "Final answer"
    line, an "Answer:" line or the last display math; see :func:`extract_written`), or None."""
    found = extract_written(text)
    return found.last if found else None


def fill_template(template: str, values: dict[str, str]) -> str:
    """Replace the template's ``NAME = ...`` placeholders with ``NAME = <values[NAME]>`` (keeping
    indentation and trailing comments out). Names not in ``values`` stay ``...``."""
    def sub(m: re.Match) -> str:
        indent, name = m.group(1), m.group(2)
        if name not in values:
            return m.group(0)
        return f"{indent}{name} = {values[name].strip()}"

    return re.sub(r"^([ \t]*)([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*\.\.\.[^\n]*$", sub, template, flags=re.MULTILINE)
