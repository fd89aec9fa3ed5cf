"""Reading the option letters an answer names, for multiple-choice problems (``choices:``), and
the options a statement lists itself (``(a) ... (b) ... (c) ...``, recognised when a problem loads).

One reader for both sides: the problem file's ``answer`` (read when the problem loads) and a
model's final answer (read by the grader), so the two can never read a letter differently.
"""

import re

TEXT_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|textrm|textit|mathit|emph|operatorname)\s*\{([^{}]*)\}")
STATEMENT = re.compile(r"\b(?:options?|choices?|statements?|answers?|letters?)\s*(?:is\b\s*)?:?\s*(?:\*\*)?\(?([A-Za-z])\)?(?![A-Za-z])"
                        r"|\(([A-Za-z])\)\s*(?:is|are)\s+(?:the\s+)?(?:correct|right|true)", re.IGNORECASE)


def read_choice(answer: str, letters: list[str] | tuple[str, ...]) -> str | None:
    """The letters an answer to a multiple-choice problem names, as ``"B"`` or ``"A, C"`` (upper
    case, in the problem's order), or None when it names none of ``letters``.

    Read: a letter alone (``C``, ``c``, ``(c)``, ``c)``, ``\\text{(a)}``), a list of them
    (``A, C``, ``(a) and (c)``), a letter before its option's text (``b) 1 MeV``, ``(c) $Z/137$``),
    or a named option (``option B``, ``statement (a) is correct``)."""
    allowed = {x.upper() for x in letters}
    s = answer[:2000]  # a letter and its option's text; bounds the regexes below
    for _ in range(3):
        s = TEXT_WRAP.sub(r"\1", s)
    s = re.sub(r"\$|\\[()\[\]]|\\[,;:! ]|\*\*|\\boxed\s*\{|[{}]", " ", s).strip().strip(".").strip()
    one = r"\(?\s*([A-Za-z])\s*\)?"
    m = re.fullmatch(one + r"(?:\s*(?:,|;|&|and|\\&)\s*" + one + r")*", s, re.IGNORECASE)
    if m:
        found = re.findall(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])", re.sub(r"\band\b", " ", s, flags=re.IGNORECASE))
    else:
        lead = re.match(r"\(?\s*([A-Za-z])\s*\)(?=\s|$)|([A-Za-z])[.:](?=\s|$)", s)
        named = list(STATEMENT.finditer(s))
        found = [lead.group(1) or lead.group(2)] if lead else [x.group(1) or x.group(2) for x in named[-1:]]
    picked = {x.upper() for x in found}
    if not picked or not picked <= allowed:
        return None
    return ", ".join(x for x in sorted(allowed) if x in picked)


# ------------------------------------------------------------------ options written in a statement

# What opens a sub-question rather than an option ("(a) Find ...", "(b) What is ..."): a question or an order.
# (An option completing the statement may open with "can", "is", "must": a question ends with "?".)
_ASKS = re.compile(r"(?:find|calculate|compute|determine|derive|show|explain|estimate|what|why|how|which|when|where|"
                   r"describe|discuss|sketch|prove|obtain|write|evaluate|give|state|use|draw|plot|consider|suppose|"
                   r"assume|express|identify|list|solve|verify|check|compare|predict|indicate)\b", re.IGNORECASE)
_MARK = re.compile(r"(?:(?<=\s)|^)\(\s?([A-Za-z])\s?\)(?=\s)|^[ \t]*([A-Za-z])[.)](?=[ \t])", re.MULTILINE)
MAX_OPTION_CHARS = 300


def options_in_statement(statement: str) -> dict[str, str] | None:
    """The options a multiple-choice statement lists after its question -- ``(a) ... (b) ... (c) ...``
    inline or one a line, ``A) ...``/``A. ...`` one a line -- as ``{"A": text, ...}``; None when it
    lists none. Sub-questions are not options: three or more consecutive letters from a/A are needed,
    at the end of the statement, each short, none a question or an order ("(a) Find ...", "... ?")."""
    text = (statement or "")[-20_000:]
    marks = [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _MARK.finditer(text)]
    # the last run of consecutive letters a, b, c, ... (one case) that ends the statement
    for k in range(len(marks) - 1, -1, -1):
        if marks[k][2].lower() != "a":
            continue
        run = [marks[k]]
        for m in marks[k + 1:]:
            if m[2].islower() == run[0][2].islower() and ord(m[2].lower()) == ord(run[-1][2].lower()) + 1:
                run.append(m)
        if len(run) < 3:
            continue
        items = {}
        for i, (_, end, letter) in enumerate(run):
            stop = run[i + 1][0] if i + 1 < len(run) else len(text)
            items[letter.upper()] = re.sub(r"\n\s*[-*]\s*$", "", text[end:stop].strip()).strip().rstrip(";,").strip()
        last = items[run[-1][2].upper()]
        if "\n\n" in last.strip():  # more text after the options: they do not end the statement
            continue
        if all(item and len(item) <= MAX_OPTION_CHARS and "?" not in item and not _ASKS.match(item)
               for item in items.values()):
            return {k: v.rstrip(".").strip() if v.count("$") % 2 == 0 else v for k, v in items.items()}
        return None
    return None


def _words(text: str) -> list[str]:
    text = TEXT_WRAP.sub(r"\1", TEXT_WRAP.sub(r"\1", text))
    return re.findall(r"[a-z0-9]+", re.sub(r"\\[A-Za-z]+", " ", text.lower()))


def letters_by_wording(answer: str, options: dict[str, str]) -> str | None:
    """The option whose wording ``answer`` repeats (most of the option's words, in a text of about its
    length: "along lines circling the current" for "(c) along lines circling the current."), as
    ``"C"``; None when no single option fits."""
    said = _words(answer)
    if not said:
        return None
    fits = []
    for letter, text in options.items():
        words = _words(text)
        if len(words) < 2 or len(said) > 3 * len(words) + 6:
            continue
        shared = sum(1 for w in words if w in said)
        if shared >= 0.8 * len(words):
            fits.append(letter)
    return fits[0] if len(fits) == 1 else None


def split_choice(answer: str, letters: list[str] | tuple[str, ...]) -> tuple[str | None, str]:
    """(the letters ``answer`` names or None, what it says beside them): ``(c) along lines circling the
    current`` -> ("C", "along lines circling the current"); ``\\text{The answer is (c) } \\frac{Z}{137}``
    -> ("C", "\\frac{Z}{137}"); ``Only statement (a) is correct.`` -> ("A", "")."""
    named = read_choice(answer, letters)
    s = answer.strip()
    s = re.sub(r"^\\text\s*\{([^{}]*)\}", r"\1", s)
    lead = re.match(r"\s*(?:(?:the\s+)?(?:correct\s+)?(?:final\s+)?(?:answer|option|choice)\s*(?:is)?\s*:?\s*)?"
                    r"\(?\s*[A-Za-z]\s*\)(?=\s|$)\s*[.:,]?\s*", s, re.IGNORECASE)
    if named and lead:
        return named, s[lead.end():].strip()
    if named:
        return named, ""
    return None, s
