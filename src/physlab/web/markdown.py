"""Markdown with LaTeX -> safe HTML for the dashboard: problem statements, ANSWER.md, claims,
findings, reviews and critiques are written in Markdown with LaTeX, by people and by models.

markdown-it-py (CommonMark, plus tables and strikethrough) with raw HTML off, so text from a
model cannot add markup: an HTML tag in it is shown as text. Math — ``$…$`` and ``$$…$$``
(mdit-py-plugins' dollarmath; ``$5 and $6`` stays money) and ``\\(…\\)``, ``\\[…\\]`` (its texmath,
brackets) — becomes tokens rendered by :func:`physlab.web.mathml.tex_to_mathml` (latex2mathml, then
the MathML allow-list), or the TeX in ``<code>`` when that fails. Links keep markdown-it's own URL
check (no ``javascript:``) and open without a referrer; images are not rendered (model text must not
make the browser fetch anything).

Model text is hostile: delimiters that never close are found in one pass per text (each opener
looks its closer up in a list of their positions, instead of searching the rest of the text), and
past :data:`MAX_FORMULAS` formulas or :data:`MAX_TEX_CHARS` characters of TeX in one text the rest is
shown as TeX, with a note, so no text costs the server more than a fraction of a second.
"""

from __future__ import annotations

import bisect
import html
import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline.state_inline import Delimiter
from mdit_py_plugins.dollarmath import dollarmath_plugin

from physlab.web.mathml import tex_to_mathml
from physlab.web.pyexpr import python_to_tex

_MATH_TOKENS = {"math_inline": False, "math_inline_double": True, "math_block": True,
                "math_block_label": True}
MAX_FORMULAS = 1000      # formulas rendered as MathML in one text (a long derivation has a few hundred)
MAX_TEX_CHARS = 50_000   # characters of TeX converted in one text
_BUDGET = "physlab_math"  # the env key counting one text's formulas and TeX characters


def _math(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    tok = tokens[idx]
    display = _MATH_TOKENS[tok.type]
    tex = tok.content.strip()
    spent = env.setdefault(_BUDGET, {"formulas": 0, "chars": 0, "over": False})
    spent["formulas"] += 1
    spent["chars"] += len(tex)
    within = spent["formulas"] <= MAX_FORMULAS and spent["chars"] <= MAX_TEX_CHARS
    spent["over"] |= not within
    ml = tex_to_mathml(tex, display) if within else None
    if ml is None:
        shown = f"$${tex}$$" if display else f"${tex}$"
        ml = f'<code class="tex">{html.escape(shown)}</code>'
    return f'<div class="math">{ml}</div>\n' if tok.type.startswith("math_block") else ml


def _link_open(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    tokens[idx].attrSet("target", "_blank")
    return self.renderToken(tokens, idx, options, env)


def _next_closer(state: Any, closer: str, start: int) -> int:
    """Where ``closer`` next occurs in the state's source at or after ``start`` (-1: nowhere). The
    positions are found once per source text and render: searching the rest of the text from every
    opener would be quadratic in the openers that never close."""
    found = state.env.setdefault("physlab_closers", {})
    key = (closer, state.src)
    if key not in found:
        found[key] = [m.start() for m in re.finditer(re.escape(closer), state.src)]
    positions = found[key]
    i = bisect.bisect_left(positions, start)
    return positions[i] if i < len(positions) else -1


def _bracket_rule(opener: str, closer: str, token_type: str):
    r"""An inline rule for ``\(…\)`` or ``\[…\]`` (anywhere in a paragraph: models write display
    math mid-sentence too), one formula at least one character long."""
    def rule(state: Any, silent: bool) -> bool:
        if not state.src.startswith(opener, state.pos):
            return False
        end = _next_closer(state, closer, state.pos + len(opener) + 1)
        if end < 0:
            return False
        if not silent:
            token = state.push(token_type, "math", 0)
            token.content, token.markup = state.src[state.pos + len(opener):end], opener
        state.pos = end + len(closer)
        return True

    return rule


def _display_block(state: Any, start: int, end: int, silent: bool) -> bool:
    r"""``\[`` opening a line, ``\]`` closing a later one (or the same), nothing after it but an
    equation label ``(1)``: a display formula block, blank lines inside it included."""
    begin = state.bMarks[start] + state.tShift[start]
    if state.sCount[start] - state.blkIndent >= 4 or not state.src.startswith("\\[", begin):
        return False
    close = _next_closer(state, "\\]", begin + 3)
    if close < 0:
        return False
    line = start
    while line < end and close > state.eMarks[line]:
        line += 1
    if line >= end or close < state.bMarks[line]:
        return False  # it closes outside this block (after a blockquote, say)
    rest = state.src[close + 2:state.eMarks[line]].strip()
    if rest and not re.fullmatch(r"\([^)$\r\n]+\)", rest):
        return False  # text after the formula: the paragraph's inline rules read it
    content = state.src[begin + 2:close]
    if state.parentType == "blockquote" and "\n" in content:
        return False  # its lines carry the quote's '>' markers
    if silent:
        return True
    token = state.push("math_block", "math", 0)
    token.block, token.content, token.markup = True, content, "\\["
    token.map = [start, line + 1]
    state.line = line + 1
    return True


def _emphasis_between_words(state: Any, silent: bool) -> bool:
    """markdown-it's emphasis rule, except that ``*`` inside a word neither opens nor closes
    emphasis (CommonMark's rule for ``_``): models write Python expressions in prose, and
    ``229376*p**5 - 1116160*p**4`` must stay a formula, not turn italic and bold."""
    marker = state.src[state.pos]
    if silent or marker not in ("_", "*"):
        return False
    scanned = state.scanDelims(state.pos, False)
    for _ in range(scanned.length):
        token = state.push("text", "", 0)
        token.content = marker
        state.delimiters.append(Delimiter(marker=ord(marker), length=scanned.length, token=len(state.tokens) - 1,
                                          end=-1, open=scanned.can_open, close=scanned.can_close))
    state.pos += scanned.length
    return True


def _math_rules(md: MarkdownIt) -> MarkdownIt:
    # \(…\) and \[…\] our own way (mdit-py-plugins' texmath searches the rest of the text from
    # every opener with a regular expression: quadratic in unclosed openers)
    md.inline.ruler.before("escape", "math_inline_brackets", _bracket_rule("\\(", "\\)", "math_inline"))
    md.inline.ruler.before("escape", "math_display_brackets", _bracket_rule("\\[", "\\]", "math_inline_double"))
    dollarmath_plugin(md, allow_labels=False, allow_space=False, allow_digits=False, double_inline=True)
    for name in _MATH_TOKENS:
        md.add_render_rule(name, _math)
    return md


def _build() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.inline.ruler.at("emphasis", _emphasis_between_words)
    md.block.ruler.before("fence", "math_display_block", _display_block, {"alt": ["paragraph", "reference",
                                                                                   "blockquote", "list"]})
    _math_rules(md)
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _build()
# Plain text with formulas (a claim's value): everything but the math escaped, no Markdown.
_MATH_ONLY = _math_rules(MarkdownIt("zero", {"html": False}))


def _clip(text: str | None, limit: int | None) -> str:
    text = text or ""
    return text[: limit - 1] + "…" if limit is not None and len(text) > limit else text


def _with_note(out: str, env: dict, tag: str = "p") -> str:
    if env.get(_BUDGET, {}).get("over"):
        out += (f'<{tag} class="muted math-note">Formulas past the first {MAX_FORMULAS:,} (or {MAX_TEX_CHARS:,} '
                f"characters of TeX) in this text are shown as TeX.</{tag}>")
    return out


def markdown_html(text: str | None, limit: int | None = None) -> str:
    """``text`` (Markdown with LaTeX) as safe HTML; ``limit`` shortens it first (with an ellipsis)."""
    env: dict = {}
    return _with_note(_MD.render(_clip(text, limit), env), env)


def math_text(text: str | None, limit: int | None = None) -> str:
    """``text`` escaped for HTML except its formulas (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``),
    rendered as MathML: no Markdown, no paragraphs."""
    env: dict = {}
    return _with_note(_MATH_ONLY.renderInline(_clip(text, limit), env), env, "span")


def markdown_inline(text: str | None, limit: int | None = None) -> str:
    """A short text (a review, a critique, a sanity check) as inline HTML: no paragraphs."""
    env: dict = {}
    return _with_note(_MD.renderInline(_clip(text, limit), env), env, "span")


def rich(text: str | None, limit: int | None = None) -> str:
    """Escape ``text`` for HTML, rendering its LaTeX fragments as MathML."""
    return math_text(text, limit)


def tex_value(value: str | None, display: bool = False) -> str:
    """A bare expression (an ER's value): MathML when it converts -- LaTeX, or a Python (SymPy)
    expression read by :mod:`physlab.web.pyexpr` -- else ``<code>``; ``display``: on a line of its own."""
    value = (value or "").strip()
    if not value:
        return ""
    if "$" in value or "\\(" in value or "\\[" in value:
        return rich(value)
    python = python_to_tex(value)
    ml = tex_to_mathml(python, display) if python is not None else None
    if ml is None and re.search(r"[\\^_{}]", value):
        ml = tex_to_mathml(value, display)
    return ml if ml is not None else f"<code>{html.escape(value)}</code>"


_VALUE_MARK = "PHYSLABVALUEHERE"


def claim_html(claim: str | None, value: str | None, limit: int | None = None) -> tuple[str, bool]:
    """(a claim as HTML, whether its value is drawn in it): a claim that states its value verbatim
    (``… is F(p) = (1 - p)**2``) shows it there, as math (``tex_value``), and a card need not show
    the value a second time."""
    claim, value = claim or "", (value or "").strip()
    if not value or value not in claim or _VALUE_MARK in claim:
        return markdown_html(claim, limit), False
    head, _, tail = claim.partition(value)
    out = markdown_html(f"{head}{_VALUE_MARK}{tail}", limit)
    if _VALUE_MARK not in out:  # cut off by the limit, or inside something Markdown kept as code
        return markdown_html(claim, limit), False
    # a long formula on a line of its own, at full size, scrolling sideways if the card is narrower
    shown = tex_value(value, display=len(value) > 30)
    if len(value) > 30:
        shown = f'<span class="formula">{shown}</span>'
    return out.replace(_VALUE_MARK, shown, 1), True
