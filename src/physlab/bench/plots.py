"""Report plots (matplotlib, Agg backend, PNG files) a reader can use: spend on log axes (the
scaffolds differ by orders of magnitude), legends beside the axes rather than over the data, and
constrained layout so no label is clipped. Each ``*_figure`` function draws one figure from a
Report (None when there is nothing to show); :func:`write_all` saves them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from physlab.bench.report import BudgetCurve, CurvePoint, Report, group_label  # noqa: E402

_AXIS_LABEL = {"tokens": "token cap per problem attempt (log scale)",
               "cost_usd": "cost cap per problem attempt, USD (log scale)"}


def _figure(width: float = 8.0, height: float = 4.5) -> tuple[Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def _legend_beside(fig: Figure, ax: plt.Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside right upper", fontsize=7, frameon=False)


def accuracy_vs_cost_figure(report: Report) -> Figure | None:
    """Accuracy against the median spend per problem attempt: in dollars for the groups whose models
    have a price, in tokens -- a panel of its own, labelled so -- for those without one (a local
    server's model: no cost is known, and a zero cost has no place on a log axis)."""
    groups = [g for g in report.solvers if g.accuracy is not None]
    colour = {group_label(g): f"C{i % 10}" for i, g in enumerate(groups)}
    priced = [(g, g.cost_median) for g in groups if (g.cost_median or 0) > 0]
    unpriced = [(g, g.tokens_median) for g in groups if not (g.cost_median or 0) > 0 and (g.tokens_median or 0) > 0]
    panels = [(points, axis) for points, axis in ((priced, "usd"), (unpriced, "tokens")) if points]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 2.8, 4.5), layout="constrained",
                             sharey=True, squeeze=False)
    for ax, (points, axis) in zip(axes[0], panels):
        for g, x in points:
            accuracy = cast(float, g.accuracy)  # groups holds the graded ones only
            lo = accuracy - g.ci_low if g.ci_low is not None else 0.0
            hi = g.ci_high - accuracy if g.ci_high is not None else 0.0
            ax.errorbar([x], [accuracy], yerr=[[lo], [hi]], fmt="o", capsize=4, color=colour[group_label(g)],
                        label=group_label(g, sep=" × "))
        ax.set_xscale("log")
        if axis == "usd":
            ax.set_xlabel("median cost per problem attempt, USD (log scale)")
            ax.set_title("models with a price: dollars", fontsize=9)
        else:
            ax.set_xlabel("median tokens per problem attempt (log scale)")
            ax.set_title("no known price: tokens", fontsize=9)
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("accuracy (95% CI, bootstrap over problems)")
    fig.suptitle("Accuracy vs spend")
    _legend_beside(fig, axes[0][0])
    return fig


def accuracy_vs_budget_figure(report: Report, axis: str = "tokens") -> Figure | None:
    """One panel per model (and config), a step line per strategy with its band: all the groups in
    one panel hide each other's bands."""
    groups = {group_label(g): g for g in report.solvers}
    curves = [c for c in report.curves if c.axis == axis and c.group in groups and any(p.cap > 0 for p in c.points)]
    if not curves:
        return None
    panels: dict[str, list[BudgetCurve]] = {}
    for c in curves:
        g = groups[c.group]
        panels.setdefault(g.model + (f" ({g.config})" if g.config != "-" else ""), []).append(c)
    strategies = sorted({groups[c.group].strategy_label for c in curves})
    colour = {s: f"C{i % 10}" for i, s in enumerate(strategies)}
    # every step line runs across the same range: nothing held before a run's first answer
    left = min(p.cap for c in curves for p in c.points if p.cap > 0)
    right = max(p.cap for c in curves for p in c.points) * 1.5
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 2.5, 4.5), layout="constrained",
                             sharey=True, squeeze=False)
    for ax, (title, cs) in zip(axes[0], sorted(panels.items())):
        for curve in cs:
            _draw_curve(ax, curve, left, right, colour[groups[curve.group].strategy_label])
        if axis == "tokens" and report.equal_budget_tokens:
            ax.axvline(report.equal_budget_tokens, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_xlabel(_AXIS_LABEL[axis])
        ax.set_title(title, fontsize=9)
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("accuracy within the cap (95% band)")
    handles = [plt.Line2D([], [], color=colour[s], label=s) for s in strategies]
    if axis == "tokens" and report.equal_budget_tokens:
        handles.append(plt.Line2D([], [], color="grey", linestyle="--",
                                  label=f"equal-budget cap ({report.equal_budget_tokens:,.0f})"))
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, frameon=False)
    fig.suptitle("Accuracy as a function of budget")
    return fig


def _draw_curve(ax: plt.Axes, curve: BudgetCurve, left: float, right: float, colour: str) -> None:
    pts = [p for p in curve.points if p.cap > 0]
    if pts[0].cap > left:
        pts.insert(0, CurvePoint(cap=left, accuracy=0.0, low=0.0, high=0.0))
    xs = [p.cap for p in pts] + [right]
    ys = [p.accuracy for p in pts] + [pts[-1].accuracy]
    ax.step(xs, ys, where="post", color=colour)
    if all(p.low is not None and p.high is not None for p in pts):
        lows = cast("list[float]", [p.low for p in pts] + [pts[-1].low])  # all set: checked above
        highs = cast("list[float]", [p.high for p in pts] + [pts[-1].high])
        ax.fill_between(xs, lows, highs, step="post", alpha=0.12, color=colour, linewidth=0)


def role_share_figure(report: Report) -> Figure | None:
    groups = [g for g in report.groups if g.role_share]
    if not groups:
        return None
    roles = sorted({r for g in groups for r in g.role_share})
    fig, ax = _figure(8.0, 0.4 * len(groups) + 1.8)
    left = [0.0] * len(groups)
    for role in roles:
        vals = [g.role_share.get(role, 0.0) for g in groups]
        ax.barh(range(len(groups)), vals, left=left, label=role)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(groups)), [group_label(g, sep=" × ") for g in groups], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("share of tokens")
    ax.set_xlim(0, 1)
    ax.set_title("Tokens per role")
    _legend_beside(fig, ax)
    return fig


def figures(report: Report) -> dict[str, Figure]:
    made = {"accuracy_vs_cost": accuracy_vs_cost_figure(report),
            "accuracy_vs_tokens_budget": accuracy_vs_budget_figure(report, "tokens"),
            "accuracy_vs_cost_budget": accuracy_vs_budget_figure(report, "cost_usd"),
            "role_share": role_share_figure(report)}
    return {name: fig for name, fig in made.items() if fig is not None}


def write_all(report: Report, out_dir: str | Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, fig in figures(report).items():
        path = out_dir / f"{name}.png"
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
        made[name] = path
    return made


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")
