"""Markdown with LaTeX -> safe HTML for the dashboard: problem statements, ANSWER.md, claims,
findings, reviews and critiques are written in Markdown with LaTeX, by people and by models.

markdown-it-py (CommonMark, plus tables and strikethrough) with raw HTML off, so text from a
model cannot add markup: an HTML tag in it is shown as text. Math — ``$…$`` and ``$$…$$``
(mdit-py-plugins' dollarmath; ``$5 and $6`` stays money) and ``\\(…\\)``, ``\\[…\\]`` (its texmath,
brackets) — becomes tokens rendered by :func:`physlab.web.mathml.tex_to_mathml` (latex2mathml, then
the MathML allow-list), or the TeX in ``<code>`` when that fails. Links keep markdown-it's own URL
check (no ``javascript:``) and open without a referrer; images are not rendered (model text must not
make the browser fetch anything).
"""

from __future__ import annotations

import html
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline.state_inline import Delimiter
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.texmath import texmath_plugin

from physlab.web.mathml import tex_to_mathml

_MATH_TOKENS = {"math_inline": False, "math_inline_double": True, "math_block": True,
                "math_block_label": True, "math_block_eqno": True}


def _math(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    tok = tokens[idx]
    display = _MATH_TOKENS[tok.type]
    tex = tok.content.strip()
    ml = tex_to_mathml(tex, display)
    if ml is None:
        shown = f"$${tex}$$" if display else f"${tex}$"
        ml = f'<code class="tex">{html.escape(shown)}</code>'
    return f'<div class="math">{ml}</div>\n' if tok.type.startswith("math_block") else ml


def _link_open(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    tokens[idx].attrSet("target", "_blank")
    return self.renderToken(tokens, idx, options, env)


def _display_brackets(state: Any, silent: bool) -> bool:
    r"""``\[…\]`` inside a paragraph (mdit-py-plugins reads it only at the start of a line; models
    also write it mid-sentence): a display-math token like ``$$…$$`` inline."""
    if not state.src.startswith("\\[", state.pos):
        return False
    end = state.src.find("\\]", state.pos + 2)
    if end < 0:
        return False
    if not silent:
        token = state.push("math_inline_double", "math", 0)
        token.content, token.markup = state.src[state.pos + 2:end], "\\["
    state.pos = end + 2
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


def _build() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.inline.ruler.at("emphasis", _emphasis_between_words)
    texmath_plugin(md, delimiters="brackets")
    md.inline.ruler.before("escape", "math_display_brackets", _display_brackets)
    dollarmath_plugin(md, allow_labels=False, allow_space=False, allow_digits=False, double_inline=True)
    for name in _MATH_TOKENS:
        md.add_render_rule(name, _math)
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _build()


def _clip(text: str | None, limit: int | None) -> str:
    text = text or ""
    return text[: limit - 1] + "…" if limit is not None and len(text) > limit else text


def markdown_html(text: str | None, limit: int | None = None) -> str:
    """``text`` (Markdown with LaTeX) as safe HTML; ``limit`` shortens it first (with an ellipsis)."""
    return _MD.render(_clip(text, limit))


def markdown_inline(text: str | None, limit: int | None = None) -> str:
    """A short text (a review, a critique, a sanity check) as inline HTML: no paragraphs."""
    return _MD.renderInline(_clip(text, limit))
