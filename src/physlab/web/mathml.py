"""LaTeX -> safe MathML for the dashboard, rendered on the server.

A formula is converted by latex2mathml; its output is then parsed and checked against a MathML
element/attribute allow-list before it is emitted, because latex2mathml passes ``\\text{...}``
through unescaped (``\\text{<script>}`` would otherwise become a live element). Anything that fails
conversion or the check is shown as the raw TeX in ``<code>``. Text around formulas is found and
escaped by :mod:`physlab.web.markdown` (one pass per text, whatever its delimiters).
"""

from __future__ import annotations

import functools
import html
import re
import xml.etree.ElementTree as ET

from latex2mathml.converter import convert

_NS = "{http://www.w3.org/1998/Math/MathML}"
_TAGS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac",
         "msqrt", "mroot", "mstyle", "merror", "mpadded", "mphantom", "mfenced", "menclose", "munder",
         "mover", "munderover", "mtable", "mtr", "mtd", "mlabeledtr", "mmultiscripts", "mprescripts",
         "none", "semantics", "annotation"}
_ATTRS = {"display", "mathvariant", "mathsize", "stretchy", "fence", "separator", "lspace", "rspace",
          "linethickness", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines",
          "rowlines", "frame", "width", "height", "depth", "accent", "accentunder", "movablelimits",
          "largeop", "symmetric", "minsize", "maxsize", "notation", "displaystyle", "scriptlevel",
          "open", "close", "separators", "form", "encoding", "align", "equalrows", "equalcolumns"}
_MAX_TEX = 4000


@functools.lru_cache(maxsize=4096)  # a page is rendered again on every change of its run
def tex_to_mathml(tex: str, display: bool = False) -> str | None:
    """Sanitised MathML for ``tex``, or None when it cannot be converted safely."""
    if len(tex) > _MAX_TEX:
        return None
    try:
        raw = convert(tex, display="block" if display else "inline")
        root = ET.fromstring(raw)
    except Exception:  # noqa: BLE001 - any conversion failure falls back to the raw TeX
        return None
    for el in root.iter():
        tag = el.tag[len(_NS):] if el.tag.startswith(_NS) else None
        if tag not in _TAGS:
            return None
        for name, value in el.attrib.items():
            if name not in _ATTRS or not re.fullmatch(r"[\w\s.#%+-]*", value):
                return None
    ET.register_namespace("", _NS[1:-1])
    return ET.tostring(root, encoding="unicode", short_empty_elements=True)


def rich(text: str | None, limit: int | None = None) -> str:
    """Escape ``text`` for HTML, rendering its LaTeX fragments as MathML."""
    from physlab.web.markdown import math_text  # (it renders its formulas with tex_to_mathml)

    return math_text(text, limit)


def tex_value(value: str | None) -> str:
    """A bare expression (an ER's value): MathML when it converts, else ``<code>``."""
    value = (value or "").strip()
    if not value:
        return ""
    if "$" in value or "\\(" in value or "\\[" in value:
        return rich(value)
    ml = tex_to_mathml(value) if re.search(r"[\\^_{}]", value) else None
    return ml if ml is not None else f"<code>{html.escape(value)}</code>"


def tex_block(value: str | None) -> str:
    """A formula on a line of its own (the answer as the grader read it): display MathML when it
    converts, else the TeX in ``<code>``."""
    value = (value or "").strip()
    if not value:
        return ""
    ml = tex_to_mathml(value, display=True)
    return ml if ml is not None else f'<code class="tex">{html.escape(value)}</code>'
