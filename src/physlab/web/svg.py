"""Geometry of the dashboard's inline SVG charts (no chart library in the page): usage bars, the
research graph overview, sweep accuracy bars and budget curves. Pure functions from data to
positions; ``templates/charts.html`` draws them (and escapes every label)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from physlab.bench.report import group_label
from physlab.lab.state.models import ResearchState
from physlab.llm.usage import Usage

# Width of a label in the charts' 12 px sans-serif, on the generous side (no font metrics on the
# server): a chart is made wide enough for its longest label instead of clipping it.
CHAR_W = 7.2


def text_w(text: str) -> float:
    return len(text) * CHAR_W


PALETTE = ["#3b6ea8", "#c0504d", "#4f9a4f", "#8064a2", "#d08a2e", "#2e9ca6", "#7f7f7f", "#b5547a", "#6b8e23"]


def usage_bars(usage: dict[str, Usage]) -> dict[str, Any] | None:
    """Horizontal stacked bars: input and output tokens per role (None: no calls yet)."""
    rows = sorted(usage.items(), key=lambda kv: -kv[1].total_tokens)
    if not rows:
        return None
    top = max(u.total_tokens for _, u in rows) or 1
    notes = [f"{u.total_tokens:,} tok" + (f" ({u.cache_read_tokens:,} cached)" if u.cache_read_tokens else "")
             + f" · {u.calls} calls · ${u.cost_usd:.4f}" for _, u in rows]
    label_w = max(110, int(max(text_w(role) for role, _ in rows)) + 12)
    w, bar_h, gap = 640, 18, 6
    scale = (w - label_w - 6 - max(map(text_w, notes)) - 4) / top  # the longest bar leaves room for its note
    return {"w": w, "h": len(rows) * (bar_h + gap) + 24, "label_w": label_w, "bar_h": bar_h,
            "legend_y": len(rows) * (bar_h + gap) + 14,
            "rows": [{"role": role, "u": u, "note": notes[i], "y": i * (bar_h + gap), "wi": u.input_tokens * scale,
                      "wo": u.output_tokens * scale} for i, (role, u) in enumerate(rows)]}


_NODE_FILL = {"open": "#eef3fb", "answered": "#e6f2e6", "dropped": "#eee", "proposed": "#fff8e1",
              "verified": "#e6f2e6", "refuted": "#fbe9e9", "inconclusive": "#f3f3f3", "established": "#dff0d8",
              "demoted": "#fbe9e9", "active": "#dff0d8"}


def research_graph(s: ResearchState) -> dict[str, Any]:
    """Columns RQ | evidence | WH | ER with edges (evidence -> its target, WH <- evidence, ER <- WH,
    WH dependencies). Demoted ERs are dashed red."""
    cols: list[tuple[str, Sequence[Any]]] = [("RQ", s.rqs), ("EV", s.evidence), ("WH", s.whs), ("ER", s.ers)]
    col_w, node_w, node_h, gap = 190, 150, 30, 12
    pos: dict[str, tuple[float, float]] = {}
    nodes: list[dict[str, Any]] = []
    for ci, (title, items) in enumerate(cols):
        x = ci * col_w + 10
        for ri, item in enumerate(items):
            y = 24 + ri * (node_h + gap)
            pos[item.id] = (x, y)
            status = getattr(item, "status", "") or getattr(item, "confidence", "")
            demoted = title == "ER" and item.status == "demoted"
            nodes.append({"id": item.id, "status": status, "x": x, "y": y, "fill": _NODE_FILL.get(status, "#f7f7f7"),
                          "stroke": "#c0392b" if demoted else "#888", "dashed": demoted,
                          "text": (getattr(item, "question", None) or getattr(item, "claim", None)
                                   or getattr(item, "findings", None) or "")})
    edges: list[dict[str, str]] = []

    def edge(a: str, b: str, cls: str = "") -> None:
        if a in pos and b in pos:
            (xa, ya), (xb, yb) = sorted((pos[a], pos[b]))
            x1, y1, x2, y2 = xa + node_w, ya + node_h / 2, xb, yb + node_h / 2
            if x1 > x2:  # same column (dependency): curve on the right
                x1, x2 = xa + node_w, xb + node_w
                edges.append({"cls": cls, "stroke": "#999", "d": f"M{x1},{y1} C{x1 + 30},{y1} {x2 + 30},{y2} {x2},{y2}"})
            else:
                mx = (x1 + x2) / 2
                edges.append({"cls": cls, "stroke": "#aaa", "d": f"M{x1},{y1} C{mx},{y1} {mx},{y2} {x2},{y2}"})

    for ev in s.evidence:
        edge(ev.target, ev.id)
    for wh in s.whs:
        for e in wh.evidence:
            edge(e, wh.id)
        for d in wh.depends_on:
            edge(d, wh.id, "dep")
    for er in s.ers:
        edge(er.wh, er.id, "demoted" if er.status == "demoted" else "")
    rows = max([len(items) for _, items in cols] + [1])
    return {"w": col_w * len(cols), "h": rows * (node_h + gap) + 30, "node_w": node_w, "node_h": node_h,
            "columns": [{"title": t, "x": ci * col_w + 10} for ci, (t, _) in enumerate(cols)],
            "nodes": nodes, "edges": edges}


def accuracy_bars(groups: list) -> dict[str, Any] | None:
    """Accuracy per strategy x model with its 95% interval (the report's exact interval; None: nothing graded)."""
    graded = [g for g in groups if g.accuracy is not None]
    if not graded:
        return None
    labels = [group_label(g, sep=" · ") for g in graded]  # with its budget|params when it has one
    label_w = max(120, int(max(map(text_w, labels))) + 12)
    w, bar_h, gap = label_w + 480, 18, 6
    return {"w": w, "h": len(graded) * (bar_h + gap) + 24, "label_w": label_w, "bar_h": bar_h,
            "span": w - label_w - 60, "axis_y": len(graded) * (bar_h + gap) + 14,
            "rows": [{"label": labels[i], "y": i * (bar_h + gap), "accuracy": g.accuracy, "color": PALETTE[i % len(PALETTE)],
                      "ci": (g.ci_low, g.ci_high) if g.ci_low is not None and g.ci_high is not None else None}
                     for i, g in enumerate(graded)]}


def budget_curves(curves: dict[str, list[tuple[float, float]]]) -> dict[str, Any] | None:
    """Anytime accuracy against tokens spent per problem (step curves: what the runs held by then, not
    what a cap would leave), on a log scale: the scaffolds' spends differ by orders of magnitude."""
    curves = {name: [(c, a) for c, a in pts if c > 0] for name, pts in curves.items()}
    curves = {name: pts for name, pts in curves.items() if pts}
    if not curves:
        return None
    h, pad = 260, 40
    w = max(640, int(pad + 14 + max(text_w(n.replace("|", " · ")) for n in curves)) + 10)  # the legend fits
    xmin = min(c for pts in curves.values() for c, _ in pts)
    xmax = max(c for pts in curves.values() for c, _ in pts)
    span = math.log(xmax / xmin) or 1.0

    def x_of(c: float) -> float:
        return pad + math.log(c / xmin) / span * (w - pad - 10)

    series = []
    for i, (name, pts) in enumerate(sorted(curves.items())):
        xy = [(x_of(c), (h - pad) - a * (h - pad - 10)) for c, a in pts] + [(w - 10, (h - pad) - pts[-1][1] * (h - pad - 10))]
        d = " ".join(f"M{x:.1f},{y:.1f}" if j == 0 else f"H{x:.1f} V{y:.1f}" for j, (x, y) in enumerate(xy))
        series.append({"name": name, "color": PALETTE[i % len(PALETTE)], "d": d})
    return {"w": w, "h": h, "pad": pad, "xmin": xmin, "xmax": xmax, "series": series}
