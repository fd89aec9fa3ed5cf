"""Reading the option letters an answer names, for multiple-choice problems (``choices:``).

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
