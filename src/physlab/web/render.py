"""Server-side HTML for the dashboard. Everything from a run (model output included) goes through
``html.escape`` or :func:`physlab.web.mathml.rich`; the browser only swaps these fragments in."""

from __future__ import annotations

import json
import time
from html import escape
from typing import Any
from urllib.parse import quote

from physlab.lab.state.models import ResearchState
from physlab.web import svg
from physlab.web.mathml import rich, tex_value

ACTIONS = ("comment", "hint", "challenge", "redirect", "pause", "resume", "stop")


def page(title: str, body: str, *, script: str = "", data: dict[str, str] | None = None) -> str:
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in (data or {}).items())
    js = f'<script src="/static/{script}" defer></script>' if script else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} — PhysLab</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="/static/style.css">{js}</head><body{attrs}>'
            f'<nav><a href="/">Runs</a> <a href="/sweeps">Sweeps</a> <span id="conn" class="muted"></span></nav>'
            f'<main>{body}</main></body></html>')


def _fmt_num(x: Any, spec: str = ",") -> str:
    return "" if x is None else format(x, spec)


def _badge(text: str | None, kind: str = "") -> str:
    if not text:
        return ""
    return f'<span class="badge {escape(kind or text)}">{escape(text)}</span>'


def run_link(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="/")


# ----------------------------------------------------------------------------- runs list
def runs_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return '<p class="muted" id="no-runs">No runs in this directory yet.</p>'
    head = "".join(f"<th>{h}</th>" for h in ("run", "status", "problem", "strategy", "model", "iteration",
                                              "verdict", "tokens", "cost USD"))
    body = []
    for r in rows:
        body.append(
            f'<tr data-run="{escape(r["id"])}"><td><a href="{escape(run_link(r["id"]))}">{escape(r["id"])}</a></td>'
            f'<td>{_badge(r["status"])}</td><td>{escape(r["problem"])}</td><td>{escape(r["strategy"])}</td>'
            f'<td>{escape(r["model"])}</td><td>{_fmt_num(r["iteration"])}</td><td>{_badge(r["verdict"])}</td>'
            f'<td class="num">{_fmt_num(r["tokens"])}</td><td class="num">{float(r["cost_usd"] or 0):.4f}</td></tr>')
    return f'<table id="runs-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def runs_page(rows: list[dict[str, Any]]) -> str:
    return page("Runs", f'<h1>Runs</h1><div id="live" data-fragment="/fragments/runs">{runs_table(rows)}</div>',
                script="app.js", data={"events": "/api/events"})


# ----------------------------------------------------------------------------- one run
def _card(id_: str, head: str, body: str, cls: str = "") -> str:
    return (f'<div class="card {escape(cls)}" id="card-{escape(id_)}"><div class="card-head"><b>{escape(id_)}</b> '
            f'{head}</div><div class="card-body">{body}</div></div>')


def _refs(ids: list[str]) -> str:
    return ", ".join(f'<a href="#card-{escape(i)}">{escape(i)}</a>' for i in ids)


def graph_html(s: ResearchState) -> str:
    reviews = {r.id: r for r in s.reviews}
    crit_by_target: dict[str, list] = {}
    for c in s.critiques:
        crit_by_target.setdefault(c.target or c.target_type, []).append(c)
    humans_by_target: dict[str, list] = {}
    for h in s.human_messages:
        humans_by_target.setdefault(h.on or "", []).append(h)

    def human_notes(id_: str) -> str:
        return "".join(f'<div class="human" data-hm="{escape(h.id)}">{escape(h.id)} {escape(h.kind)} from the physicist '
                       f'(it. {h.received_iteration}, → {escape(h.routed_to)}): {rich(h.text, 2000)}</div>'
                       for h in humans_by_target.get(id_, []))

    def critiques(id_: str) -> str:
        return "".join(
            f'<div class="critique {escape(c.status)}" id="card-{escape(c.id)}">{escape(c.id)} ({escape(c.source)}, '
            f'{escape(c.kind)}) {_badge(c.status)} {rich(c.text, 2000)}'
            + (f'<div class="ruling">ruling: {rich(c.ruling, 2000)}</div>' if c.ruling else "") + "</div>"
            for c in crit_by_target.get(id_, []))

    rq = "".join(_card(r.id, _badge(r.status) + f' <span class="muted">it. {r.iteration}</span>',
                       rich(r.question, 3000) + human_notes(r.id), "rq") for r in s.rqs)
    ev = "".join(_card(e.id, f'{escape(e.role)} on {_refs([e.target])} {_badge(e.confidence)}',
                       rich(e.findings, 3000)
                       + (f'<details><summary>code</summary><pre>{escape(e.code[:20000])}</pre></details>' if e.code else "")
                       + (f'<details><summary>output</summary><pre>{escape(e.output[:20000])}</pre></details>' if e.output else ""),
                       "ev") for e in s.evidence)
    wh = []
    for w in s.whs:
        revs = "".join(f'<div class="review">{escape(r.id)} {_badge(r.verdict)} {rich(r.reasoning, 1500)}</div>'
                       for r in (reviews.get(i) for i in w.reviews) if r)
        wh.append(_card(w.id, _badge(w.status) + (f" → {_refs([w.er])}" if w.er else ""),
                        f'<div class="claim">{rich(w.claim, 3000)}</div>' + (f'<div class="value">{tex_value(w.value)}</div>' if w.value else "")
                        + f'<div class="muted">evidence {_refs(w.evidence)}'
                        + (f"; depends on {_refs(w.depends_on)}" if w.depends_on else "") + "</div>"
                        + revs + human_notes(w.id), "wh " + w.status))
    er = []
    for e in s.ers:
        tag = "demoted" if e.status == "demoted" else ("flagged" if e.flagged else "active")
        er.append(_card(e.id, _badge(tag) + f" from {_refs([e.wh])}",
                        f'<div class="claim">{rich(e.claim, 3000)}</div>' + (f'<div class="value">{tex_value(e.value)}</div>' if e.value else "")
                        + (f'<div class="demotion">demoted: {rich(e.demotion_reason, 1500)}</div>' if e.demotion_reason else "")
                        + critiques(e.id) + human_notes(e.id), "er " + tag))
    cols = (f'<div class="graph-cols"><div><h3>Research questions</h3>{rq}</div><div><h3>Evidence</h3>{ev}</div>'
            f'<div><h3>Working hypotheses</h3>{"".join(wh)}</div><div><h3>Established results</h3>{"".join(er)}</div></div>')
    other_crit = "".join(critiques(k) for k in crit_by_target if not k.startswith("ER-"))
    dead = "".join(_card(d.id, f'<span class="muted">it. {d.iteration}</span>', rich(d.description, 2000), "dead")
                   for d in s.dead_ends)
    humans = "".join(f'<li data-hm="{escape(h.id)}">{escape(h.id)} <b>{escape(h.kind)}</b>'
                     f'{" on " + escape(h.on) if h.on else ""} (it. {h.received_iteration}, → {escape(h.routed_to)}): '
                     f'{rich(h.text, 2000)}</li>' for h in s.human_messages)
    return (f'<section id="graph"><h2>Research graph</h2><div class="graph-svg">{svg.research_graph(s)}</div>{cols}'
            + (f'<h3>Other critiques</h3>{other_crit}' if other_crit else "")
            + (f'<h3>Dead ends</h3>{dead}' if dead else "")
            + (f'<h3>Messages from the physicist</h3><ul id="human-messages">{humans}</ul>' if humans else "")
            + "</section>")


def strategy_html(s: ResearchState) -> str:
    checks = "".join(f'<li>{escape(c.id)} {_badge(c.status)} {rich(c.predicate, 1000)}</li>' for c in s.sanity_checks)
    conv = "".join(f"<li>{rich(c, 1000)}</li>" for c in s.conventions)
    return (f'<section id="strategy"><h2>Strategy (v{s.strategy_version})</h2><div class="prose">'
            f'{rich(s.strategy, 20000) or "<i>none yet</i>"}</div>'
            + (f"<h3>Conventions</h3><ul>{conv}</ul>" if conv else "")
            + (f'<h3>Sanity checks</h3><ul id="sanity-checks">{checks}</ul>' if checks else "") + "</section>")


def timeline_html(history: list[dict[str, Any]]) -> str:
    if not history:
        return ""
    rows = "".join(f'<li><span class="muted">{time.strftime("%H:%M:%S", time.gmtime(h["time"]))}Z · {escape(h["sha"])}'
                   f'</span> {escape(h["subject"])}</li>' for h in history)
    return f'<section id="timeline"><h2>Timeline</h2><ol>{rows}</ol></section>'


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


def calls_html(run_id: str, calls: list) -> str:
    if not calls:
        return ""
    items = []
    for i, c in enumerate(calls):
        head = (f'#{i} <b>{escape(c.role)}</b> {escape(c.model)} · {c.input_tokens:,}+{c.output_tokens:,} tok · '
                f'${c.cost_usd:.4f} · {c.latency_s:.2f}s · {escape(c.finish_reason or "")}'
                + (f' <span class="badge invalid">{escape(c.error)}</span>' if c.error else ""))
        items.append(f'<details id="call-{i}"><summary>{head}</summary>'
                     f'<h4>prompt (last part)</h4><pre>{escape(_message_text(c.request))}</pre>'
                     f'<h4>reply</h4><pre>{escape(_message_text(c.response))}</pre>'
                     f'<a href="/api/runs/{escape(quote(run_id, safe="/"))}/calls/{i}">full JSON</a></details>')
    return f'<section id="calls"><h2>Model calls ({len(calls)})</h2>{"".join(items)}</section>'


def answer_html(d: dict[str, Any]) -> str:
    m = d["metrics"]
    v = m.get("verdict") if isinstance(m.get("verdict"), dict) else None
    parts = []
    if v:
        parts.append(f'<p id="verdict">verdict {_badge(v.get("verdict"))} {escape(str(v.get("reason", "")))}</p>')
    if d["answer_md"]:
        parts.append(f'<div class="prose" id="answer-md">{rich(d["answer_md"], 50000)}</div>')
    if d["answer_py"]:
        parts.append(f'<pre id="answer-py">{escape(d["answer_py"])}</pre>')
    if not parts:
        return ""
    return f'<section id="answer"><h2>Final answer</h2>{"".join(parts)}</section>'


def run_fragment(d: dict[str, Any]) -> str:
    s: ResearchState | None = d["state"]
    sm = d["summary"]
    head = (f'<p id="run-status">status {_badge(sm["status"])}'
            + (f' · lab {_badge(sm["lab_status"])}' if sm["lab_status"] and sm["lab_status"] != sm["status"] else "")
            + f' · problem <b>{escape(sm["problem"])}</b> · strategy {escape(sm["strategy"])} · model {escape(sm["model"])}'
            + (f' · iteration <b id="iteration">{sm["iteration"]}</b>' if sm["iteration"] is not None else "")
            + f' · {sm["tokens"]:,} tokens · ${float(sm["cost_usd"] or 0):.4f}'
            + (f' · stop reason: {escape(s.stop_reason)}' if s and s.stop_reason else "") + "</p>")
    pending = [m for m in d["inbox"] if not s or m["id"] not in set(s.inbox_consumed)]
    pend = ("<p class='muted' id='pending'>waiting for the next iteration boundary: "
            + ", ".join(escape(f'{m["kind"]}{" on " + m["on"] if m.get("on") else ""}') for m in pending) + "</p>"
            if pending else "")
    usage = f'<section id="usage"><h2>Usage per role</h2>{svg.usage_bars(d["usage"])}</section>'
    body = [head, pend, answer_html(d)]
    if s is not None:
        body += [graph_html(s), strategy_html(s)]
    body += [timeline_html(d["history"]), usage, calls_html(sm["id"], d["calls"])]
    if d["problem_md"]:
        body.append(f'<section id="problem"><h2>Problem</h2><div class="prose">{rich(d["problem_md"], 50000)}</div></section>')
    return "".join(body)


def actions_form(s: ResearchState | None) -> str:
    ids = [] if s is None else [x.id for x in (*s.ers, *s.whs, *s.rqs)]
    opts = "".join(f'<option value="{escape(a)}">{escape(a)}</option>' for a in ACTIONS)
    targets = "".join(f'<option value="{escape(i)}"></option>' for i in ids)
    return (f'<form id="action-form" autocomplete="off"><h2>Talk to the run</h2>'
            f'<select name="kind" id="action-kind">{opts}</select> '
            f'<input name="on" id="action-on" list="claim-ids" placeholder="on (ER-1, WH-2, …)" size="12"> '
            f'<datalist id="claim-ids">{targets}</datalist>'
            f'<input name="text" id="action-text" placeholder="message" size="60"> '
            f'<button type="submit" id="action-send">send</button> '
            f'<button type="button" class="quick" data-kind="pause">pause</button> '
            f'<button type="button" class="quick" data-kind="resume">resume</button> '
            f'<button type="button" class="quick" data-kind="stop" id="stop-button">stop</button>'
            f'<p id="action-result" class="muted" aria-live="polite"></p></form>')


def run_page(run_id: str, d: dict[str, Any]) -> str:
    link = run_link(run_id)
    body = (f'<h1>{escape(run_id)}</h1>{actions_form(d["state"])}'
            f'<div id="live" data-fragment="/fragments{escape(link)}">{run_fragment(d)}</div>')
    return page(run_id, body, script="app.js",
                data={"events": f"/api/events{link}", "actions": f"/api{link}/actions"})


def login_page(error: str = "") -> str:
    return page("Token", '<h1>Access token</h1><p>This dashboard is not bound to loopback; enter the token '
                'printed by <code>physlab ui</code>.</p><form method="get" action="/login">'
                '<input type="password" name="token" id="token" size="40" autofocus> <button>open</button></form>'
                + (f'<p class="badge invalid">{escape(error)}</p>' if error else ""))
