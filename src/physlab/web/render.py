"""Server-side HTML for the dashboard: Jinja2 templates (``templates/``, package data) with
autoescaping, so everything from a run (model output included) is escaped unless it went through
the ``md``/``md_inline`` filters (:mod:`physlab.web.markdown`: Markdown without raw HTML, LaTeX as
allow-listed MathML). The browser only swaps these fragments in."""

from __future__ import annotations

import ast
import json
import textwrap
import time
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from physlab.lab.show import derivations
from physlab.lab.state.models import ResearchState
from physlab.web import svg
from physlab.web.markdown import claim_html, markdown_html, markdown_inline, tex_value
from physlab.web.mathml import tex_block

MESSAGES = ("comment", "hint", "challenge", "redirect")  # pause, stop and resume are buttons of their own


def run_link(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="/")


def _message_text(obj: Any, limit: int = 6000) -> str:
    """Readable text of a dumped pydantic-ai request/response (parts with their kind)."""
    lines: list[str] = []

    def parts_of(msg: dict) -> None:
        for p in msg.get("parts") or []:
            if not isinstance(p, dict):
                continue
            kind = p.get("part_kind", "?")
            if "content" in p and p["content"] is not None:
                body = p["content"] if isinstance(p["content"], str) else json.dumps(p["content"], default=str)
            elif "args" in p:
                body = f'{p.get("tool_name")}({p["args"] if isinstance(p["args"], str) else json.dumps(p["args"])})'
            else:
                body = json.dumps(p, default=str)
            lines.append(f"[{kind}] {body}")

    if isinstance(obj, dict) and "messages" in obj:
        for m in obj["messages"] or []:
            if isinstance(m, dict):
                parts_of(m)
    elif isinstance(obj, dict) and "parts" in obj:
        parts_of(obj)
    elif obj is not None:
        lines.append(json.dumps(obj, default=str))
    text = "\n\n".join(lines)
    return text if len(text) <= limit else "…" + text[-limit:]


def _claim(item: Any, limit: int = 3000) -> dict[str, Any]:
    """A WH's or ER's claim for its card, with its value drawn once: in the claim when the claim
    states it, else below it (``value``: empty when it is in the claim)."""
    html_, inline = claim_html(item.claim, item.value, limit)
    return {"claim": Markup(html_), "value": Markup("" if inline or not item.value else tex_value(item.value))}


ENV = Environment(loader=PackageLoader("physlab.web", "templates"), autoescape=True, trim_blocks=True,
                  lstrip_blocks=True)
ENV.filters.update(
    md=lambda text, limit=None: Markup(markdown_html(text, limit)),  # no raw HTML; sanitised MathML
    md_inline=lambda text, limit=None: Markup(markdown_inline(text, limit)),
    tex_value=lambda value: Markup(tex_value(value)),
    claim=_claim,
    tex_block=lambda value: Markup(tex_block(value)),
    num=lambda x, spec=",": "" if x is None else format(x, spec),
    clock=lambda t: time.strftime("%H:%M:%S", time.gmtime(t)),
    message_text=_message_text,
)
ENV.globals["run_link"] = run_link


def _render(template: str, **context: Any) -> str:
    return ENV.get_template(template).render(**context)


def page(template: str, title: str, *, script: str = "", data: dict[str, str] | None = None, **context: Any) -> str:
    """A whole page: ``template`` extends base.html (title, navigation, script, body data-*)."""
    return _render(template, title=title, script=script, data=data or {}, **context)


def runs_table(rows: list[dict[str, Any]]) -> str:
    return _render("runs_table.html", rows=rows)


def runs_page(rows: list[dict[str, Any]]) -> str:
    return page("runs.html", "Runs", script="app.js", data={"events": "/api/events"}, rows=rows)


def _graph(s: ResearchState) -> dict[str, Any]:
    """The research state grouped the way the graph's cards show it."""
    reviews = {r.id: r for r in s.reviews}
    critiques: dict[str, list] = {}
    for c in s.critiques:
        critiques.setdefault(c.target or c.target_type, []).append(c)
    humans: dict[str, list] = {}
    for h in s.human_messages:
        humans.setdefault(h.on or "", []).append(h)
    return {"layout": svg.research_graph(s), "critiques_by_target": critiques, "humans_by_target": humans,
            "other_targets": [k for k in critiques if not k.startswith("ER-")],
            "reviews_of": {w.id: [reviews[i] for i in w.reviews if i in reviews] for w in s.whs},
            "er_tags": {e.id: e.status for e in s.ers}}


UNPARSED_NOTE = "answer.py is nested too deeply to read as Python: shown as text only."


def filled_answer(code: str | None) -> str | None:
    """What the run filled into the template: the body of its ``answer`` function without the
    docstring and comments (``F = 1 - 3*p**2`` / ``return F``), shown above the whole file.
    None when the code does not parse or has no such function; :data:`UNPARSED_NOTE` when Python's
    parser cannot hold it (an expression nested 100,000 deep exhausts its stack)."""
    if not code:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        return UNPARSED_NOTE
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    func = next((f for f in funcs if f.name == "answer"), funcs[0] if funcs else None)
    if func is None:
        return None
    body = func.body[1:] if ast.get_docstring(func) is not None else func.body
    lines = [textwrap.dedent(ast.get_source_segment(code, stmt, padded=True) or "") for stmt in body]
    return "\n".join(line for line in lines if line.strip()) or None


def _filled(code: str | None) -> dict[str, str | None]:
    filled = filled_answer(code)
    return {"filled": None, "filled_note": filled} if filled == UNPARSED_NOTE else {"filled": filled,
                                                                                      "filled_note": None}


def _answer_latex(metrics: dict[str, Any]) -> str | None:
    """The answer's value as LaTeX, as the grader read it from the code's answer tree (in its
    trusted stage; never by running code here): rendered through the MathML allow-list. A run made
    before records kept it has it in its verdict only."""
    verdict = metrics.get("verdict")
    latex = metrics.get("answer_latex") or (verdict.get("candidate_latex") if isinstance(verdict, dict) else None)
    return latex if isinstance(latex, str) and latex.strip() else None


def _derivations(s: ResearchState | None) -> list[dict[str, Any]]:
    """The researchers' derivations; those the answer rests on open (else the latest)."""
    items = derivations(s) if s is not None else []
    opened = {d["id"] for d in items if d["behind_answer"]} or {d["id"] for d in items[-1:]}
    return [{**d, "open": d["id"] in opened} for d in items]


def _fragment_context(d: dict[str, Any]) -> dict[str, Any]:
    s: ResearchState | None = d["state"]
    consumed = set(s.inbox_consumed) if s else set()
    verdict = d["metrics"].get("verdict")
    return {"d": d, "pending": [m for m in d["inbox"] if m["id"] not in consumed],
            "verdict": verdict if isinstance(verdict, dict) else None, "answer_latex": _answer_latex(d["metrics"]),
            "derivations": _derivations(s),
            "graph": _graph(s) if s is not None else None, "usage": svg.usage_bars(d["usage"]),
            "run_path": quote(d["summary"]["id"], safe="/"), **_filled(d["answer_py"]),
            # a run that is going (or paused) shows its best answer so far, not a final one
            "answer_title": "Final answer" if d["metrics"].get("has_answer") and d["summary"]["status"] not in (
                "running", "resuming", "paused", "interrupted") else "Best answer so far (provisional)"}


def run_fragment(d: dict[str, Any]) -> str:
    return _render("run_fragment.html", **_fragment_context(d))


def run_page(run_id: str, d: dict[str, Any], name: str | None = None) -> str:
    """The page of a run; ``name`` heads it when its id says little (a sweep cell's ``~cell/N``)."""
    link = run_link(run_id)
    s = d["state"]
    claim_ids = [] if s is None else [x.id for x in (*s.ers, *s.whs, *s.rqs)]
    return page("run.html", name or run_id, script="app.js",
                data={"events": f"/api/events{link}", "actions": f"/api{link}/actions"},
                run_id=name or run_id, link=link, messages=MESSAGES, claim_ids=claim_ids, **_fragment_context(d))


def login_page(error: str = "", next_path: str = "/") -> str:
    """The token form; ``next_path``: the page to go back to once the token is taken."""
    return page("login.html", "Token", error=error, next_path=next_path)
