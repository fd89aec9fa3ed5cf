"""Inline SVG written here (no chart library in the page): usage bars, the research graph overview,
sweep accuracy bars and budget curves. Every label is escaped."""

from __future__ import annotations

from html import escape

from physlab.bench.report import group_label
from physlab.lab.state.models import ResearchState

PALETTE = ["#3b6ea8", "#c0504d", "#4f9a4f", "#8064a2", "#d08a2e", "#2e9ca6", "#7f7f7f", "#b5547a", "#6b8e23"]


def usage_bars(usage: dict[str, "object"]) -> str:
    """Horizontal stacked bars: input and output tokens per role, cost in the label."""
    rows = sorted(usage.items(), key=lambda kv: -kv[1].total_tokens)
    if not rows:
        return '<p class="muted">no model calls yet</p>'
    top = max(u.total_tokens for _, u in rows) or 1
    w, label_w, bar_h, gap = 640, 110, 18, 6
    h = len(rows) * (bar_h + gap) + 24
    scale = (w - label_w - 170) / top
    out = [f'<svg class="chart" role="img" aria-label="tokens per role" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">']
    for i, (role, u) in enumerate(rows):
        y = i * (bar_h + gap)
        wi, wo = u.input_tokens * scale, u.output_tokens * scale
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(role)}</text>')
        out.append(f'<rect class="bar-in" x="{label_w}" y="{y}" width="{wi:.1f}" height="{bar_h}" fill="#3b6ea8">'
                   f'<title>{escape(role)}: {u.input_tokens} input tokens</title></rect>')
        out.append(f'<rect class="bar-out" x="{label_w + wi:.1f}" y="{y}" width="{wo:.1f}" height="{bar_h}" fill="#d08a2e">'
                   f'<title>{escape(role)}: {u.output_tokens} output tokens</title></rect>')
        out.append(f'<text x="{label_w + wi + wo + 6:.1f}" y="{y + 13}">{u.total_tokens:,} tok · {u.calls} calls'
                   f' · ${u.cost_usd:.4f}</text>')
    y = len(rows) * (bar_h + gap) + 14
    out.append(f'<rect x="{label_w}" y="{y - 9}" width="10" height="10" fill="#3b6ea8"/>'
               f'<text x="{label_w + 14}" y="{y}">input</text>'
               f'<rect x="{label_w + 64}" y="{y - 9}" width="10" height="10" fill="#d08a2e"/>'
               f'<text x="{label_w + 78}" y="{y}">output</text></svg>')
    return "".join(out)


_NODE_FILL = {"open": "#eef3fb", "answered": "#e6f2e6", "dropped": "#eee", "proposed": "#fff8e1",
              "verified": "#e6f2e6", "refuted": "#fbe9e9", "inconclusive": "#f3f3f3", "established": "#dff0d8",
              "demoted": "#fbe9e9", "active": "#dff0d8"}


def research_graph(s: ResearchState) -> str:
    """Columns RQ | evidence | WH | ER with edges (evidence -> its target, WH <- evidence, ER <- WH,
    WH dependencies). Demoted ERs are dashed red; flagged ones orange."""
    cols = [("RQ", s.rqs), ("EV", s.evidence), ("WH", s.whs), ("ER", s.ers)]
    col_w, node_w, node_h, gap = 190, 150, 30, 12
    pos: dict[str, tuple[float, float]] = {}
    nodes: list[str] = []
    rows = max([len(items) for _, items in cols] + [1])
    h = rows * (node_h + gap) + 30
    w = col_w * len(cols)
    for ci, (title, items) in enumerate(cols):
        x = ci * col_w + 10
        nodes.append(f'<text class="col" x="{x}" y="14">{escape(title)}</text>')
        for ri, item in enumerate(items):
            y = 24 + ri * (node_h + gap)
            pos[item.id] = (x, y)
            status = getattr(item, "status", "") or getattr(item, "confidence", "")
            fill = _NODE_FILL.get(status, "#f7f7f7")
            stroke, dash = "#888", ""
            if title == "ER" and item.status == "demoted":
                stroke, dash = "#c0392b", ' stroke-dasharray="5,3"'
            elif title == "ER" and getattr(item, "flagged", False):
                stroke = "#d08a2e"
            text = (getattr(item, "question", None) or getattr(item, "claim", None)
                    or getattr(item, "findings", None) or "")
            nodes.append(
                f'<g class="node" data-id="{escape(item.id)}" data-status="{escape(status)}">'
                f'<a href="#card-{escape(item.id)}"><rect x="{x}" y="{y}" width="{node_w}" height="{node_h}" rx="5" '
                f'fill="{fill}" stroke="{stroke}"{dash}/>'
                f'<text x="{x + 6}" y="{y + 19}">{escape(item.id)} · {escape(status)}</text>'
                f'<title>{escape(text[:300])}</title></a></g>')
    edges: list[str] = []

    def edge(a: str, b: str, cls: str = "") -> None:
        if a in pos and b in pos:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            if xa > xb:
                (xa, ya), (xb, yb) = (xb, yb), (xa, ya)
            x1, y1, x2, y2 = xa + node_w, ya + node_h / 2, xb, yb + node_h / 2
            if x1 > x2:  # same column (dependency): curve on the right
                x1, x2 = xa + node_w, xb + node_w
                edges.append(f'<path class="edge {cls}" d="M{x1},{y1} C{x1 + 30},{y1} {x2 + 30},{y2} {x2},{y2}" fill="none" stroke="#999"/>')
            else:
                mx = (x1 + x2) / 2
                edges.append(f'<path class="edge {cls}" d="M{x1},{y1} C{mx},{y1} {mx},{y2} {x2},{y2}" fill="none" stroke="#aaa"/>')

    for ev in s.evidence:
        edge(ev.target, ev.id)
    for wh in s.whs:
        for e in wh.evidence:
            edge(e, wh.id)
        for d in wh.depends_on:
            edge(d, wh.id, "dep")
    for er in s.ers:
        edge(er.wh, er.id, "demoted" if er.status == "demoted" else "")
    return (f'<svg class="graph" role="img" aria-label="research graph" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">' + "".join(edges) + "".join(nodes) + "</svg>")


def accuracy_bars(groups: list) -> str:
    """Accuracy per strategy x model with its Wilson 95% interval."""
    graded = [g for g in groups if g.accuracy is not None]
    if not graded:
        return '<p class="muted">no graded cells</p>'
    w, label_w, bar_h, gap = 640, 220, 18, 6
    h = len(graded) * (bar_h + gap) + 24
    span = w - label_w - 60
    out = [f'<svg class="chart" id="accuracy-chart" role="img" aria-label="accuracy" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">']
    for i, g in enumerate(graded):
        y = i * (bar_h + gap)
        label = group_label(g, sep=" · ")  # with its budget|params when it has one
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{label_w}" y="{y}" width="{g.accuracy * span:.1f}" height="{bar_h}" '
                   f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(label)}: {g.accuracy:.3f}</title></rect>')
        if g.ci_low is not None and g.ci_high is not None:
            yc = y + bar_h / 2
            out.append(f'<line x1="{label_w + g.ci_low * span:.1f}" x2="{label_w + g.ci_high * span:.1f}" '
                       f'y1="{yc}" y2="{yc}" stroke="#222" stroke-width="2"/>')
        out.append(f'<text x="{label_w + span + 6}" y="{y + 13}">{g.accuracy:.2f}</text>')
    y = len(graded) * (bar_h + gap) + 14
    out.append(f'<text x="{label_w}" y="{y}">0</text><text x="{label_w + span}" y="{y}" text-anchor="end">1</text></svg>')
    return "".join(out)


def budget_curves(curves: dict[str, list[tuple[float, float]]]) -> str:
    """Accuracy when every cell is capped at a common token budget (step curves)."""
    if not curves:
        return '<p class="muted">no graded cells</p>'
    w, h, pad = 640, 260, 40
    xmax = max((c for pts in curves.values() for c, _ in pts), default=1.0) or 1.0
    out = [f'<svg class="chart" id="budget-chart" role="img" aria-label="accuracy at equal token budget" width="{w}" '
           f'height="{h + 20 * len(curves)}" viewBox="0 0 {w} {h + 20 * len(curves)}" xmlns="http://www.w3.org/2000/svg">',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - 10}" y2="{h - pad}" stroke="#444"/>',
           f'<line x1="{pad}" y1="10" x2="{pad}" y2="{h - pad}" stroke="#444"/>',
           f'<text x="{pad}" y="{h - pad + 16}">0</text><text x="{w - 10}" y="{h - pad + 16}" text-anchor="end">'
           f'{xmax:,.0f} tokens / problem</text><text x="{pad - 4}" y="16" text-anchor="end">1</text>']
    for i, (name, pts) in enumerate(sorted(curves.items())):
        color = PALETTE[i % len(PALETTE)]
        xy = [(pad + c / xmax * (w - pad - 10), (h - pad) - a * (h - pad - 10)) for c, a in pts]
        d = " ".join(f"M{x:.1f},{y:.1f}" if j == 0 else f"H{x:.1f} V{y:.1f}" for j, (x, y) in enumerate(xy))
        out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"><title>{escape(name)}</title></path>')
        out.append(f'<rect x="{pad}" y="{h + 20 * i - 9}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{pad + 14}" y="{h + 20 * i}">{escape(name.replace("|", " · "))}</text>')
    out.append("</svg>")
    return "".join(out)
