"""Telling a reference answer in words from one in math, when a problem loads.

Some references are sentences ("the equilibrium is unstable", "energy bands form because ...");
no rule of the grader reads them, so such a problem is marked ``reference_format: prose`` and its
answers are ``ungraded`` unless a judge model is named (docs/grading.md). Text only: nothing is
parsed or evaluated here.
"""

from __future__ import annotations

import re

# Words that make a run of words a sentence rather than a unit or a name ("MeV per nucleon" is none).
_FUNCTION_WORDS = frozenset("""a an the is are was were be been will would can cannot could should must may might not no
yes it its this that these those there they he she we you of to in on at by with from for as because since so than
then and or but if when which who whose what does do did has have had into onto over under between through both
either neither only also""".split())
_TEXT = re.compile(r"\\(?:text|textrm|textbf|textit|textnormal|mathrm|mbox|emph)\s*\{([^{}]*)\}")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _answers(reference: str) -> list[str]:
    """The boxed answers of a reference (each box's content), or the reference as one answer."""
    out, i = [], 0
    for m in _BOX.finditer(reference):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(reference) and depth:
            depth += {"{": 1, "}": -1}.get(reference[j], 0)
            j += 1
        out.append(reference[m.end():j - 1])
        i = j
    return out or [reference]


def _words(text: str) -> tuple[list[list[str]], bool]:
    """(runs of consecutive words, whether anything but words is there): words are letters (a hyphen
    joins them), runs are split by math, digits and symbols."""
    plain = _TEXT.sub(lambda m: f" {m.group(1)} ", text)
    math = bool(re.sub(r"[A-Za-z.,;:!?'()\"\s$-]", "", plain))  # digits, commands, operators
    runs: list[list[str]] = [[]]
    for token in re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)*|[^A-Za-z\s.,;:!?'()\"]", plain):
        if re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)*", token):
            runs[-1].append(token.lower())
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r], math


def is_prose(reference: str | None) -> bool:
    """Is some answer of ``reference`` words rather than math? A sentence (three words or more in a
    row, one of them a function word: "the wire will not melt") anywhere, or an answer of two words
    or more and nothing else ("Objective lens"). A yes/no, a single word, a value with its unit or a
    label ("E_{II} = 54.4 \\text{ eV}") is not prose."""
    if not reference or not reference.strip():
        return False
    for answer in _answers(reference):
        runs, math = _words(answer)
        for run in runs:
            if len(run) >= 3 and any(w in _FUNCTION_WORDS for w in run):
                return True
        parts = [p for r in runs for w in r for p in w.split("-")]  # "Blue-shifted" is two words
        if not math and len(parts) >= 2 and all(len(p) >= 2 for p in parts):
            return True
    return False
