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
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from physlab.bench.report import BudgetCurve, CurvePoint, Report, group_label

_AXIS_LABEL = {"tokens": "tokens spent per problem attempt, input + output (log scale)",
               "input_tokens": "input tokens spent per problem attempt (log scale)",
               "output_tokens": "output tokens spent per problem attempt (log scale)",
               "cost_usd": "cost spent per problem attempt, USD (log scale)"}


def _figure(width: float = 8.0, height: float = 4.5) -> tuple[Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def _legend_beside(fig: Figure, ax: plt.Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside right upper", fontsize=9, frameon=False)


def accuracy_vs_cost_figure(report: Report) -> Figure | None:
    """Accuracy against the median spend per problem attempt: in dollars for the groups whose models
    have a price, in tokens -- a panel of its own, labelled so -- for those without one (a local
    server's model: no cost is known, and a zero cost has no place on a log axis)."""
    groups = [g for g in report.solvers if g.accuracy is not None]
    colour = {group_label(g): f"C{i % 10}" for i, g in enumerate(groups)}
    marker = {group_label(g): "osD^v"[i // 10 % 5] for i, g in enumerate(groups)}  # past ten colours, a new mark
    priced = [(g, g.cost_median) for g in groups if (g.cost_median or 0) > 0]
    unpriced = [(g, g.tokens_median) for g in groups if not (g.cost_median or 0) > 0 and (g.tokens_median or 0) > 0]
    panels = [(points, axis) for points, axis in ((priced, "usd"), (unpriced, "tokens")) if points]
    if not panels:
        return None
    rows = -(-len(groups) // 2)  # the legend, two groups a line, goes under the panels
    fig, axes = plt.subplots(1, len(panels), figsize=(max(5.5 * len(panels), 10.5), 4.5 + 0.25 * rows),
                             layout="constrained", sharey=True, squeeze=False)
    for ax, (points, axis) in zip(axes[0], panels):
        for g, x in points:
            accuracy = cast(float, g.accuracy)  # groups holds the graded ones only
            lo = accuracy - g.ci_low if g.ci_low is not None else 0.0
            hi = g.ci_high - accuracy if g.ci_high is not None else 0.0
            ax.errorbar([x], [accuracy], yerr=[[lo], [hi]], fmt=marker[group_label(g)], capsize=4,
                        color=colour[group_label(g)], label=group_label(g, sep=" × "))
        # matplotlib's own log formatter: numbers at the minor ticks only when no power of ten is in view
        ax.set_xscale("log")
        if axis == "usd":
            ax.set_xlabel("median cost per problem attempt, USD (log scale)")
            ax.set_title("models with a price: dollars", fontsize=9)
        else:
            ax.set_xlabel("median input + output tokens per problem attempt (log scale)")  # unweighted: no price
            ax.set_title("no known price: tokens", fontsize=9)
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("accuracy (exact 95% CI)")  # Clopper-Pearson, at the effective size with clusters
    fig.suptitle("Accuracy vs spend")
    handles, labels = [], []
    for ax in axes[0]:  # each group once, whichever panel it is in
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=9, frameon=False)
    return fig


def accuracy_vs_budget_figure(report: Report, axis: str = "tokens") -> Figure | None:
    """Anytime accuracy (what a run held with at most that much spent, from its checkpoints): one
    panel per model (and config), a step line per strategy with its band: all the groups in one
    panel hide each other's bands."""
    groups = {group_label(g): g for g in report.solvers}
    curves = [c for c in report.curves if c.axis == axis and c.group in groups and any(p.cap > 0 for p in c.points)]
    if not curves:
        return None
    panels: dict[str, list[BudgetCurve]] = {}
    for c in curves:
        g = groups[c.group]
        panels.setdefault(g.model + (f" ({g.setting_label})" if g.setting_label else ""), []).append(c)
    strategies = sorted({groups[c.group].strategy_label for c in curves})
    colour = {s: f"C{i % 10}" for i, s in enumerate(strategies)}
    # every step line runs across the same range: nothing held before a run's first answer
    left = min(p.cap for c in curves for p in c.points if p.cap > 0)
    right = max(p.cap for c in curves for p in c.points) * 1.5
    # at most two panels a row, so each keeps a readable size on a laptop's screen
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols + 2.5, 3.6 * rows + 0.9), layout="constrained",
                             sharey=True, sharex=True, squeeze=False)
    flat = list(axes.flat)
    for ax, (title, cs) in zip(flat, sorted(panels.items())):
        for curve in cs:
            _draw_curve(ax, curve, left, right, colour[groups[curve.group].strategy_label])
        if axis == "tokens" and report.anytime_tokens:
            ax.axvline(report.anytime_tokens, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log")  # minor ticks numbered only when the view holds no power of ten
        ax.set_title(title, fontsize=10)
        ax.set_ylim(-0.02, 1.02)
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    fig.supxlabel(_AXIS_LABEL[axis], fontsize=10)
    fig.supylabel("anytime accuracy (exact 95% band)", fontsize=10)
    handles = [plt.Line2D([], [], color=colour[s], label=s) for s in strategies]
    if axis == "tokens" and report.anytime_tokens:
        handles.append(plt.Line2D([], [], color="grey", linestyle="--",
                                  label=f"anytime column's T ({report.anytime_tokens:,.0f})"))
    fig.legend(handles=handles, loc="outside right upper", fontsize=9, frameon=False)
    fig.suptitle("Anytime accuracy: the answer each run held by then (not a capped run)")
    return fig


def accuracy_at_budget_figure(report: Report) -> Figure | None:
    """Accuracy of sweeps run at several --budget-tokens (runs really capped), one line per
    strategy x model with its intervals; an uncapped sweep is drawn beyond the largest cap."""
    sweeps = [s for s in report.budget_sweeps if any(p.accuracy is not None for p in s.points)]
    if not sweeps:
        return None
    caps = [p.budget_tokens for s in sweeps for p in s.points if p.budget_tokens]
    if not caps:
        return None
    beyond = max(caps) * 3  # where "no cap" is drawn
    fig, ax = _figure()
    for i, sweep in enumerate(sweeps):
        pts = [(p, p.accuracy) for p in sweep.points if p.accuracy is not None]
        xs = [p.budget_tokens or beyond for p, _ in pts]
        ys = [acc for _, acc in pts]
        lo = [acc - (p.low if p.low is not None else acc) for p, acc in pts]
        hi = [(p.high if p.high is not None else acc) - acc for p, acc in pts]
        label = " × ".join([sweep.strategy, sweep.model] + ([sweep.params] if sweep.params else []))
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=3, color=f"C{i % 10}", label=label)
    if any(p.budget_tokens is None for s in sweeps for p in s.points):
        ax.axvline(beyond, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ticks = sorted(set(caps)) + ([beyond] if any(p.budget_tokens is None for s in sweeps for p in s.points) else [])
    ax.set_xticks(ticks, [f"{t:,}" if t != beyond else "no cap" for t in ticks])  # the budgets swept, by name
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("--budget-tokens per problem attempt (log scale)")
    ax.set_ylabel("accuracy (exact 95% CI)")
    ax.set_ylim(-0.02, 1.08)
    ax.set_title("Accuracy at each budget (runs capped there)")
    _legend_beside(fig, ax)
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
    ax.set_yticks(range(len(groups)), [group_label(g, sep=" × ") for g in groups], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("share of tokens")
    ax.set_xlim(0, 1)
    ax.set_title("Tokens per role")
    _legend_beside(fig, ax)
    return fig


# What each plot shows, in words: the HTML report's captions (the file names are for scripts).
CAPTIONS = {
    "accuracy_vs_cost": "Accuracy against the median spend per problem attempt: dollars where the model has a "
                        "price, input + output tokens where it has none (exact 95% intervals).",
    "accuracy_at_budget": "Accuracy of the sweeps run at each --budget-tokens: every run really capped there "
                          "(the equal-budget comparison).",
    "accuracy_vs_tokens_budget": "Anytime accuracy against tokens spent (input + output): the answer each run held "
                                 "by then, read off its checkpoints, with a 95% band; not what a capped run would "
                                 "have done.",
    "accuracy_vs_input_tokens_budget": "Anytime accuracy against input tokens spent.",
    "accuracy_vs_output_tokens_budget": "Anytime accuracy against output tokens spent.",
    "accuracy_vs_cost_budget": "Anytime accuracy against dollars spent.",
    "role_share": "Share of each group's tokens spent by each role.",
}


def figures(report: Report) -> dict[str, Figure]:
    made = {"accuracy_vs_cost": accuracy_vs_cost_figure(report),
            "accuracy_at_budget": accuracy_at_budget_figure(report),
            "accuracy_vs_tokens_budget": accuracy_vs_budget_figure(report, "tokens"),
            "accuracy_vs_input_tokens_budget": accuracy_vs_budget_figure(report, "input_tokens"),
            "accuracy_vs_output_tokens_budget": accuracy_vs_budget_figure(report, "output_tokens"),
            "accuracy_vs_cost_budget": accuracy_vs_budget_figure(report, "cost_usd"),
            "role_share": role_share_figure(report)}
    return {name: fig for name, fig in made.items() if fig is not None}


def write_all(report: Report, out_dir: str | Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, fig in figures(report).items():
        path = out_dir / f"{name}.png"
        fig.savefig(path, format="png", dpi=120)
        plt.close(fig)
        made[name] = path
    return made


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")
