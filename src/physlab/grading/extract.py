"""Pull the answer out of model output (pure text processing: nothing is executed here)."""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass

from physlab.problems.choices import STATEMENT as _STATEMENT, read_choice  # (read_choice: re-exported)

# One line at a time (never a regex over the whole reply: a pattern with a lazy body between
# line-anchored fences backtracks over every unclosed opener, 31 s for 40 KB of "```python").
_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)")
_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*")
_PY_LANGS = {"python", "py", "python3", "sympy", "ipython"}


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block, in order.

    A block opens at a line starting with three or more backticks (or tildes) and an optional
    language, and closes at the next line holding exactly the same fence; an opener that is never
    closed is skipped. Linear in the reply's length: each line is read once, and the closer of an
    opener is looked up in a per-fence index of closing lines."""
    pieces = (text or "").split("\n")
    lines = [p + "\n" for p in pieces[:-1]] + [pieces[-1]]
    closers: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        m = _CLOSE.fullmatch(line.rstrip("\n").rstrip("\r"))
        if m:
            closers.setdefault(m.group(1), []).append(i)
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m and lines[i].endswith("\n"):
            fence = m.group(1)
            # a longer opener no line closes is read as a shorter fence plus text ("````" closed
            # by "```"), as extraction always read it
            for n in range(len(fence), 2, -1):
                after = closers.get(fence[:n], [])
                k = bisect.bisect_right(after, i)
                if k < len(after):
                    j = after[k]
                    out.append(((m.group(2) if n == len(fence) else "").lower(), "".join(lines[i + 1:j])))
                    i = j
                    break
        i += 1
    return out


def defines_function(source: str, name: str | None = "answer") -> bool:
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
        defining = [b for b in untagged if defines_function(b, function)]
        return (defining or untagged)[-1]
    if defines_function(text, function):
        return text
    if not blocks and re.search(rf"^[ \t]*def[ \t]+{re.escape(function)}[ \t]*\(", text, re.MULTILINE):
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
# "Answer: 9", and "Answer $9$" / "Answer \[ 9 \]" (math right after the word)
_ANSWER_LINE = re.compile(r"^[ \t>*#_]*answer(?:\s*\*\*)?\s*(?:[:：]|(?=\$|\\\[|\\\())", re.IGNORECASE | re.MULTILINE)
# A conclusion in prose: "So, the required value is 5.", "Therefore, the answer is 0.35.",
# "Thus the speed is $v = 3$ m/s." (the rest of the sentence is the answer). Ours, not Math-Verify's
# extraction: that one lowercases symbols and falls back to the first number of the text.
_HEDGE = r"(?:(?:approximately|about|roughly|around|nearly|just|exactly|equal\s+to|given\s+by)\s+)?"
_CONCLUSION = re.compile(
    r"\b(?:answer|result|value|solution)s?\b(?:\s+(?:to|for|of)\s+[^.\n]{1,80}?)?"
    r"\s+(?:is|are|equals|=|would\s+be|will\s+be|should\s+be|comes\s+out\s+to|becomes)\b\s*:?"
    r"|\b(?:therefore|thus|hence|so|finally|consequently)\b,?\s+(?:the\s+)?(?:[A-Za-z][A-Za-z' -]{0,60}?\s)?"
    r"(?:is|are|equals|=|becomes|comes\s+out\s+to|satisfies|satisfy|obeys|obey|reads)\s+" + _HEDGE + r"(?=[$\\\d+-])"
    r"|\b(?:is|are|equals)\s+(?:therefore|thus|hence|then)\s+" + _HEDGE + r"(?=[$\\\d+-])"
    r"|\b(?:therefore|thus|hence|so|finally|consequently)\b,?\s+(?:we\s+(?:get|find|obtain|have)\s*:?\s*)?(?=\$)",
    re.IGNORECASE)
# Where a conclusion's answer ends and a remark begins: ", as expected", " (in units of hbar)", ", i.e."
_REMARK = re.compile(r",?\s*\((?=[A-Za-z]{2}|i\.e)|,\s*(?=(?:as|which|where|i\.e|e\.g|so|since|because|that|"
                     r"and|or|in|with|for|when|if|assuming|neglecting)\b)|\s+(?=(?:as\s+expected|as\s+required|"
                     r"which|where|assuming|neglecting|when|if|since|because|provided|(?:in|for|at|on)\s+"
                     r"(?:the|this|a|an|our)\s)\b)", re.IGNORECASE)
_THINK_TAG = re.compile(r"<(/?)(?:think|thinking|reasoning)>", re.IGNORECASE)
# What may stand between two boxes of one answer ("\boxed{1}, \boxed{2}", "\boxed{a} and \boxed{b}").
# Stricter than Math-Verify's rule (any text under 70 characters holding a comma), which joins
# "\boxed{1}. After checking again, the answer is \boxed{2}" into one answer "1, 2".
_JOINER = re.compile(r"[,;]?(?:and|or|&)?[,;.]?", re.IGNORECASE)
_NOISE = re.compile(r"\$|\\[\[\]()]|\\(?:quad|qquad|[,;:! ])|\\text\s*\{\s*(and|or)\s*\}|\s+")


@dataclass(frozen=True)
class WrittenAnswer:
    """The final answer of a written (non-code) reply.

    ``boxes``: the answer strings in order (every box, or the boxes after the last "Final answer"
    marker when it points at boxes; a single string when the answer is a marker line, a prose
    conclusion or display math). ``final``: indices into ``boxes`` of the final group (the last run
    of adjacent boxes). ``how``: where it was found ("boxed", "final answer line", "answer line",
    "conclusion", "display math")."""

    boxes: tuple[str, ...]
    final: tuple[int, ...]
    how: str

    @property
    def last(self) -> str:
        return self.boxes[self.final[-1]]


_HOPE = "i hope it is correct"


def _clean_line(line: str) -> str:
    line = line.strip().strip("*_").strip()
    line = re.sub(r"^(?:the\s+)?(?:final\s+)?answer\s+is\s*:?\s*", "", line, flags=re.IGNORECASE)
    # string operations, not a regex searched at every position (quadratic in a run of spaces)
    low = line.rstrip().rstrip(".").rstrip()
    if low.lower().endswith(_HOPE):
        line = low[:-len(_HOPE)].rstrip().rstrip(".").rstrip()
    line = line.strip().strip("*_").strip()
    if line.startswith("$$") and line.endswith("$$") and len(line) > 3:
        line = line[2:-2]
    elif line.startswith("$") and line.endswith("$") and len(line) > 1 and line.count("$") == 2:
        line = line[1:-1]
    elif line.startswith("\\[") and line.endswith("\\]"):
        line = line[2:-2]
    line = re.sub(r"^(?:\\approx|\\simeq|\\sim|≈|~)\s*", "", line.strip())
    return line.strip().rstrip(".").strip()


_CHAT_TOKEN = re.compile(r"<\|(?:im_start|im_end|endoftext|eot_id|end_of_turn|start_header_id)\|>")
# "Final Answer: The largest $n$ is 34." -- the value after the last "is" of a sentence on the line
_LINE_VALUE = re.compile(r"\b(?:is|are|equals)\s+(?:approximately\s+|about\s+)?(?=[$\\\d+-]|[A-Za-z_]\w*\s*=)",
                         re.IGNORECASE)


def outside_thinking(text: str) -> str:
    """The reply without its reasoning: what follows the last ``</think>`` (a reasoning model's
    scratch work, boxes included, is not its answer; some servers drop the opening tag), cut at a
    ``<think>`` that is never closed."""
    special = _CHAT_TOKEN.search(text)  # a chat template's token leaked into the reply: the turn ended there
    if special and text[:special.start()].strip():
        text = text[:special.start()]
    tags = list(_THINK_TAG.finditer(text))
    closes = [m for m in tags if m.group(1)]
    if closes:
        text = text[closes[-1].end():]
    opening = _THINK_TAG.search(text)
    return text[:opening.start()] if opening else text


def _display_math(text: str) -> list[tuple[int, str]]:
    """(start, body) of every ``$$...$$`` / ``\\[...\\]`` block, leftmost first, linear in the text
    (a lazy regex between delimiters rescans the rest of the reply for every unclosed opener)."""
    tokens = [(m.start(), m.group(0)) for m in re.finditer(r"\$\$|\\\[|\\\]", text)]
    dollars = [k for k, (_, t) in enumerate(tokens) if t == "$$"]
    closes = [k for k, (_, t) in enumerate(tokens) if t == "\\]"]
    out, k, pos = [], 0, 0
    while k < len(tokens):
        start, tok = tokens[k]
        if start < pos or tok == "\\]":
            k += 1
            continue
        pool = dollars if tok == "$$" else closes
        q = bisect.bisect_right(pool, k)
        if q < len(pool):
            end_k = pool[q]
            body = text[start + 2:tokens[end_k][0]]
            if body.strip():
                out.append((start, body))
                pos = tokens[end_k][0] + 2
                k = end_k + 1
                continue
        k += 1
    return out


def _sentence_after(text: str, i: int) -> str:
    """The rest of the sentence starting at ``i``: up to a full stop (not a decimal point) outside
    math, a blank line, or the end of its line once it has some text."""
    j, n, closing = i, len(text), None
    while j < n:
        if closing:
            if text.startswith(closing, j):
                j += len(closing)
                closing = None
            else:
                j += 1
            continue
        for opener, closer in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
            if text.startswith(opener, j):
                closing = closer
                j += len(opener)
                break
        else:
            ch = text[j]
            if ch == "\n" and text[i:j].strip():
                break
            if ch in ".!?" and (j + 1 == n or text[j + 1].isspace()):
                break
            j += 1
    return text[i:j]


def _trim_remark(answer: str) -> str:
    """The answer without what follows it in its sentence, outside math ("$T = mg$, as expected")."""
    answer = re.sub(r"^\s*" + _HEDGE, "", answer, flags=re.IGNORECASE)
    m = re.match(r"\s*(\$[^$]+\$|\\\(.+?\\\))\s+(?=[A-Za-z]{2,})", answer)
    if m and "$" not in answer[m.end():] and "\\(" not in answer[m.end():]:
        # "$x \geq 5$ is the solution": the math, not the words after it
        return m.group(1)
    for m in _REMARK.finditer(answer):
        if m.start() > 0 and answer.count("$", 0, m.start()) % 2 == 0:
            return answer[:m.start()]
    return answer


# "valid for $x > 0$", "positive when ...": a property of the result, not its value
_QUALIFIED = re.compile(r"[A-Za-z]{3,}\s+(?:for|if|when|whenever|only|unless|provided|because|since|as|in|at|under)\b",
                        re.IGNORECASE)


def _conclusion(text: str) -> tuple[int, str] | None:
    """(position, answer) of the last prose conclusion ("the answer is 0.35."), or None."""
    found = list(_CONCLUSION.finditer(text))
    for m in reversed(found[-3:]):
        rest = _sentence_after(text, m.end())
        if not rest.strip():  # "The answer is:" and the answer on the next lines
            nxt = text[m.end():].lstrip()
            display = _display_math(nxt[:4000])
            if display and display[0][0] == 0:
                return m.start(), display[0][1].strip().rstrip(".,").strip()
            rest = _sentence_after(text, m.end() + (len(text[m.end():]) - len(nxt)))
        answer = _clean_line(_trim_remark(rest))
        # a value, not a remark ("... the value is positive.", "the result is valid for $x > 0$.")
        if answer and len(answer) <= 400 and re.search(r"[\d$\\]|^\(?[A-Za-z]\)|^(?:yes|no)\b", answer, re.I) \
                and not _QUALIFIED.match(answer):
            return m.start(), answer
    return None


# The inline math that ends a reply: "... the tension is $T$.", "We find that $x < 3$.", "Here is the
# matrix: $...$", or a reply that is only "$28$ %". The words before it must state a result (a verb or
# a colon); after "where", "for", "on", "as" the math names a symbol or a condition, not an answer.
_CLOSING_UNIT = re.compile(r"(?:\\?%|percent)\Z")
_STATES_RESULT = re.compile(r"(?:\b(?:is|are|was|were|be|becomes|equals|gives|yields|get|gets|obtain|obtains|"
                            r"find|finds|found|have|has|that)|[:=])\s*\Z", re.IGNORECASE)


def _closing_math(text: str) -> str | None:
    """The inline math closing the reply's last sentence when that sentence states it as its result
    (Math-Verify's shape), or the math of a reply that is nothing else; None otherwise. Reads the
    end of the reply only (string operations from the end: linear)."""
    tail = text[-4000:].rstrip().rstrip(".!").rstrip()
    unit = _CLOSING_UNIT.search(tail)
    if unit:
        tail = tail[:unit.start()].rstrip()
    if tail.endswith("$") and not tail.endswith("$$"):
        start = tail.rfind("$", 0, len(tail) - 1)
        body = tail[start + 1:-1] if start >= 0 else ""
        if start > 0 and tail[start - 1] == "$":
            return None
    elif tail.endswith("\\)"):
        start = tail.rfind("\\(")
        body = tail[start + 2:-2] if start >= 0 else ""
    else:
        return None
    if start < 0 or not body.strip():
        return None
    before = tail[:start]
    sentence = re.split(r"[.!?](?:\s|\Z)|\n", before[-1000:])[-1]
    if before.strip() and not _STATES_RESULT.search(sentence):
        return None
    return body.strip() + (" \\%" if unit else "")


def _cut_off_after(tail: str) -> bool:
    """Does the reply break off mid-word several words after its last display math (``tail`` starts
    there)? Then it had not concluded: the display is a step it was still weighing ("Hmm, this seems
    straightforward, but I'm wondering if I've missed something rel"), not its answer. A short
    sign-off ("I hope this helps") is no reasoning."""
    end = re.search(r"\\\]|\$\$", tail[2:])  # past the opening $$ or \[
    words = re.findall(r"[A-Za-z']+", tail[2 + end.end():]) if end else []
    return len(words) >= 6 and bool(re.search(r"[A-Za-z,]\Z", tail.rstrip()))


def extract_written(text: str | None) -> WrittenAnswer | None:
    """The final answer of a written reply (pure text processing: nothing is parsed or run).

    Reasoning (``<think>...</think>``) is not the answer: only what follows it is read. Boxes
    decide when there are any: the boxes after the last "Final answer" marker when it points at a
    box, otherwise every box (a marker line that restates a box in prose does not override it).
    Without a box: the rest of the last marker's line, else an "Answer:" line, else the later of
    the last prose conclusion ("So, the required value is 5.") and the last display-math block
    (``$$...$$`` or ``\\[...\\]``). None when there is no final answer. Linear in the text."""
    if not text or not text.strip():
        return None
    text = outside_thinking(text)
    if not text.strip():
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
            display = _display_math(rest[:4000]) if rest.startswith(("$$", "\\[")) else []
            if display and display[0][0] == 0:  # "Answer: $$ ... $$" over several lines
                rest = display[0][1].strip()
            line = _clean_line(rest.split("\n\n", 1)[0].split("\n", 1)[0]) if rest else ""
            stated = list(_LINE_VALUE.finditer(line))
            if stated and re.match(r"[A-Za-z]+\s+[A-Za-z]+", line):  # a sentence: what it says the value is
                line = _clean_line(_trim_remark(line[stated[-1].end():]))
            if line:
                return WrittenAnswer((line,), (0,), how)
    display = _display_math(text)
    said = _conclusion(text)
    if said and (not display or said[0] > display[-1][0]):
        return WrittenAnswer((said[1],), (0,), "conclusion")
    if display and not _cut_off_after(text[display[-1][0]:]):
        body = display[-1][1].strip().rstrip(".,").strip()
        if body:
            return WrittenAnswer((body,), (0,), "display math")
    closing = _closing_math(text)
    return WrittenAnswer((closing,), (0,), "closing math") if closing else None


# ---------------------------------------------------------------- multiple choice

_MARK_VERDICT = re.compile(r"\(?\s*([A-Za-z])\s*\)?\s*[:.)]?\s*(true|false|correct|incorrect|wrong|right)\b", re.IGNORECASE)
_ARRAY_SYNTAX = re.compile(r"\\begin\s*\{\w+\*?\}(?:\s*\{[^{}]*\})?|\\end\s*\{\w+\*?\}|\\\\|&|[,;.*$]|\\[,;:! ]")


def marked_true(answer: str, letters: list[str] | tuple[str, ...]) -> str | None:
    """The options an answer marks true when it marks every option it names true or false, one by one
    ("(a) True (b) False (c) False", an array of "(a): True" rows), as ``"A"`` or ``"A, B"``; None when
    the answer is not such a list (or marks none true)."""
    s = answer[:2000]
    for _ in range(3):
        s = re.sub(r"\\(?:text|textbf|mathrm|textrm|textit)\s*\{([^{}]*)\}", r"\1", s)
    marks = list(_MARK_VERDICT.finditer(s))
    if len(marks) < 2 or _ARRAY_SYNTAX.sub(" ", _MARK_VERDICT.sub(" ", s)).strip():
        return None
    allowed = {x.upper() for x in letters}
    named = [m.group(1).upper() for m in marks]
    if len(set(named)) != len(named) or not set(named) <= allowed:
        return None
    true = {x for x, m in zip(named, marks) if m.group(2).lower() in ("true", "correct", "right")}
    return ", ".join(x for x in sorted(allowed) if x in true) or None


def extract_choice(text: str | None, letters: list[str] | tuple[str, ...]) -> WrittenAnswer | None:
    """The final answer of a reply to a multiple-choice problem, as its letters (see
    :func:`read_choice`): the final answer :func:`extract_written` finds, else the last sentence
    naming an option ("Only statement (a) is correct."). None when no letter is named."""
    written = extract_written(text)
    if written is not None:
        got = marked_true(written.last, letters) or read_choice(written.last, letters)
        if got:
            return WrittenAnswer((got,), (0,), written.how)
    tail = outside_thinking(text or "")[-2000:]
    for m in reversed(list(_STATEMENT.finditer(tail))):
        got = read_choice(m.group(0), letters)
        if got:
            return WrittenAnswer((got,), (0,), "conclusion")
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
