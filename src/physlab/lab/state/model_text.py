"""Model-written text as it goes into the lab's Markdown files (ANSWER.md, RESEARCH_STATE.md): kept as
written, except that it cannot pass for the lab's own list of verified references -- it opens no
References/Sources heading and writes no entry. One place for both files, so the two lists are
guarded alike.

Where a heading or a code block is, is what a CommonMark renderer (GitHub's, the dashboard's
markdown-it-py) sees: markdown-it-py's block parser says, so a fence a list item closes or a heading
inside a quote is found as the renderer finds it (a line-by-line guess was fooled by both). Everything
here is linear in the text's length (a reply may bring a megabyte).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_REFERENCE_TITLE = re.compile(r"(?:verified\s+)?(?:references?|sources?|bibliography|citations?|works\s+cited|"
                              r"literature(?:\s+cited)?|further\s+reading)(?:\s*\(verified\))?\s*:?", re.I)
_EMPHASIS_MARKS = ("**", "__", "*", "_")
_HTML_HEADING = re.compile(r"<(/?h[1-6])\b", re.I)
# what opens a line inside a quote or a list item ("> ", "- ", "1. "), before the line's own text
_CONTAINER = re.compile(r"(?:[ \t]*(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t])))*[ \t]*")
_ENTRY_START = re.compile(r"^(\*\*|__)?\[(\d+)\]")  # an entry of a reference list: "[n]", "**[n]**"
_UNDERLINE = re.compile(r"^[ \t>]*(?:=+|-+)[ \t]*$")
NOT_CHECKED = ("*(written by the formatter: not checked against what the literature tools showed; the verified "
               "references are listed at the end)*")
# what opens the lab's own list, in ANSWER.md and RESEARCH_STATE.md alike
VERIFIED_LIST = ("Each passage below was shown by a literature tool in this run (its source id is the one in "
                 "state.json); nothing above this list is checked against the literature.")


@lru_cache(maxsize=2)
def _parser(inline: bool = False) -> MarkdownIt:
    from markdown_it import MarkdownIt

    # raw HTML on (GitHub renders an <h2>); a text's block structure, and inline the text of headings alone
    md = MarkdownIt("commonmark", {"html": True})
    return md if inline else md.disable(["inline", "text_join"])


def _is_reference_title(text: str) -> bool:
    return _REFERENCE_TITLE.fullmatch(text.strip().strip("*_` ").strip()) is not None


def _shown(inline: str) -> str:
    """A heading's text as a reader sees it (links, emphasis, entities, comments resolved)."""
    shown = []
    for tok in _parser(inline=True).parseInline(inline)[0].children or []:
        if tok.type in ("text", "code_inline", "image"):
            shown.append(tok.content)
        elif tok.type == "softbreak":
            shown.append(" ")
    return "".join(shown).replace("\xad", "")


def _emphasis_line(text: str) -> str | None:
    """The text of a line that is one bold or italic span (``**References:**``, ``_Sources_:``), else None."""
    body = text.strip(" \t").removesuffix(":").rstrip(" \t")
    for mark in _EMPHASIS_MARKS:
        if len(body) > 2 * len(mark) and body.startswith(mark) and body.endswith(mark):
            return body[len(mark):-len(mark)]
    return None


def _plain_line(line: str, note: str) -> str:
    """A line of model text that is not code: a line of bold naming a reference list marked with
    ``note``, an entry's opening ``[n]`` escaped, HTML headings escaped (a quote's or list's mark kept)."""
    opening = _CONTAINER.match(line)
    cut = opening.end() if opening else 0
    prefix, rest = line[:cut], line[cut:]
    bold = _emphasis_line(rest)
    if bold is not None and _is_reference_title(bold):
        rest = f"{bold.strip()} {note}"
    rest = _ENTRY_START.sub(lambda m: f"{m.group(1) or ''}\\[{m.group(2)}]", rest)
    return _HTML_HEADING.sub(lambda m: f"&lt;{m.group(1)}", prefix + rest)


def model_markdown(text: str, *, note: str = NOT_CHECKED) -> str:
    """Model-written Markdown as it goes into the lab's files: kept as written, except that it cannot
    open a reference list of its own -- a References/Sources/Bibliography heading (ATX, setext, HTML, or a
    line of bold) becomes a plain line marked with ``note`` (not checked), and a line opening like an
    entry (``[n] ...``) is escaped. Code (fenced or indented, as a renderer sees it) is left alone."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # line breaks as the parser counts them
    lines = text.split("\n")
    code: set[int] = set()
    blank_after: set[int] = set()  # a blank line after these keeps what follows from underlining them
    tokens = _parser().parse(text)
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        first, end = tok.map
        if tok.type in ("fence", "code_block"):
            code.update(range(first, end))
        elif tok.type == "heading_open" and _is_reference_title(_shown(tokens[i + 1].content)):
            if tok.markup.startswith("#"):  # ATX: the line without its #s (a quote's or a list's mark stays)
                lines[first] = f"{lines[first].replace('#', '').rstrip()} {note}"
                last = first
            else:  # setext: the text marked, the underline set apart
                last = end - 2
                lines[last] = f"{lines[last].rstrip()} {note}"
            if last + 1 < len(lines) and _UNDERLINE.match(lines[last + 1]):
                blank_after.add(last)
    out = []
    for n, line in enumerate(lines):
        out.append(line if n in code else _plain_line(line, note))
        if n in blank_after:
            out.append("")
    return "\n".join(out)


def inline_text(text: str, limit: int) -> str:
    """A role's free text on one line of a reference list, unable to pass for the list's own marks
    (an entry's number, a quoted passage, a source id's code span, a heading)."""
    flat = " ".join(text.split())[:limit]
    flat = flat.replace("“", '"').replace("”", '"')
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", flat)
