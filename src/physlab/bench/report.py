"""Sweep reports, computed from the results database only.

Per strategy x model: accuracy over graded cells with a Wilson 95% interval, mean pass@k for every
k the repeats allow (unbiased estimator per problem, then averaged over problems), tokens / cost /
wall per problem (median, p90), the share of tokens per role, and the equal-budget view: each
group's accuracy when every cell is capped at the same number of tokens per problem. Beside them,
the score CritPt's grading server gave the group's batches (``bench submit-critpt``): per repeat the
latest graded batch, and CritPt's protocol figure, the mean over the runs, with its spread.
"""

from __future__ import annotations

import csv
import html
import statistics
from pathlib import Path

from pydantic import BaseModel, Field

from physlab.bench import stats
from physlab.bench.store import ResultsStore, cell_config


class GroupSummary(BaseModel):
    strategy: str
    model: str
    config: str = Field(default="-", description="Budget tag, then strategy parameters when any: cells "
                                                 "run at another budget or with other --param are another group.")
    cells: int = Field(description="Finished cells.")
    failed: int = 0
    pending: int = 0
    graded: int = 0
    correct: int = 0
    accuracy: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    answered: int = 0
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    tokens_median: float | None = None
    tokens_p90: float | None = None
    cost_median: float | None = None
    cost_p90: float | None = None
    wall_median: float | None = None
    wall_p90: float | None = None
    total_tokens: int = 0
    total_cost: float = 0.0
    role_share: dict[str, float] = Field(default_factory=dict, description="Share of tokens per role.")
    equal_budget_correct: int | None = None
    equal_budget_accuracy: float | None = None
    critpt_runs: int = Field(default=0, description="Repeats CritPt's server graded.")
    critpt_mean: float | None = Field(default=None, description="CritPt accuracy, mean over those runs.")
    critpt_sd: float | None = None


CRITPT_PROTOCOL_RUNS = 5  # CritPt reports the mean accuracy over 5 runs of the 70 challenges (README)


class CritptScore(BaseModel):
    """What CritPt's grading server said about one group's batches."""

    strategy: str
    model: str
    config: str = "-"
    runs: dict[int, float] = Field(description="repeat -> accuracy of its latest graded batch.")
    graded: int = Field(description="Graded batches in all (a repeat sent twice counts twice).")
    mean: float
    sd: float | None = Field(default=None, description="Sample standard deviation over the runs (2+ runs).")
    low: float
    high: float


def critpt_scores(store: ResultsStore) -> list[CritptScore]:
    by_group: dict[tuple[str, str, str], list[dict]] = {}
    for s in store.critpt_submissions("state='scored'"):
        by_group.setdefault((s["strategy"], s["model"], s["config"]), []).append(s)
    out = []
    for (strategy, model, config), subs in sorted(by_group.items()):
        runs = {s["repeat"]: s["accuracy"] for s in sorted(subs, key=lambda s: s["id"])}  # the latest wins
        acc = [runs[r] for r in sorted(runs)]
        out.append(CritptScore(strategy=strategy, model=model, config=config, runs=dict(sorted(runs.items())),
                               graded=len(subs), mean=statistics.fmean(acc),
                               sd=statistics.stdev(acc) if len(acc) > 1 else None, low=min(acc), high=max(acc)))
    return out


class Report(BaseModel):
    db: str
    groups: list[GroupSummary]
    equal_budget_tokens: float | None = Field(
        default=None, description="The common per-problem token cap of the equal-budget view.")
    budget_curves: dict[str, list[tuple[float, float]]] = Field(
        default_factory=dict, description="'strategy|model' ('strategy|model|config' for a group with a "
                                          "budget or parameters) -> [(token cap, accuracy)].")
    cells_total: int = 0
    critpt: list[CritptScore] = Field(default_factory=list, description="Scores from CritPt's grading server.")


def group_label(g: GroupSummary, *, sep: str = "|") -> str:
    """'strategy|model', plus '|config' for a group run at a budget or with parameters."""
    parts = [g.strategy, g.model] + ([g.config] if g.config != "-" else [])
    return sep.join(parts)


def _with_config(rows: list[dict]) -> list[dict]:
    return [{**r, "config": cell_config(r)} for r in rows]


def build_report(store: ResultsStore, *, equal_tokens: float | None = None) -> Report:
    # Grouped by strategy x model x config: pooling cells run at different budgets or parameters
    # would mix two experiments in one accuracy, and count them as repeats in pass@k.
    rows = _with_config(store.cells())
    by_group = stats.group_by(rows, "strategy", "model", "config")
    role_rows = stats.group_by(_with_config(store.roles()), "strategy", "model", "config")
    groups: list[GroupSummary] = []
    graded_cells: dict[tuple, list[tuple[bool, float]]] = {}
    for (strategy, model, config), cells in sorted(by_group.items()):
        done = [c for c in cells if c["state"] == "done"]
        graded = [c for c in done if c["verdict"] is not None]
        correct = sum(c["verdict"] == "correct" for c in graded)
        g = GroupSummary(
            strategy=strategy, model=model, config=config, cells=len(done),
            failed=sum(c["state"] == "failed" for c in cells),
            pending=sum(c["state"] in ("pending", "running") for c in cells),
            graded=len(graded), correct=correct,
            answered=sum(bool(c["answer_code"] or c["answer_text"]) for c in done),
        )
        if graded:
            g.accuracy = correct / len(graded)
            g.ci_low, g.ci_high = stats.wilson_interval(correct, len(graded))
            per_problem = stats.group_by(graded, "problem_id")
            counts = [(len(cs), sum(c["verdict"] == "correct" for c in cs)) for cs in per_problem.values()]
            kmax = min(n for n, _ in counts)
            for k in range(1, kmax + 1):
                v = stats.mean_pass_at_k(counts, k)
                if v is not None:
                    g.pass_at_k[k] = v
            graded_cells[(strategy, model, config)] = [
                (c["verdict"] == "correct", c["input_tokens"] + c["output_tokens"]) for c in graded]
        tokens = [c["input_tokens"] + c["output_tokens"] for c in done]
        costs = [c["cost_usd"] for c in done]
        walls = [c["wall_s"] for c in done]
        g.tokens_median, g.tokens_p90 = stats.quantile(tokens, 0.5), stats.quantile(tokens, 0.9)
        g.cost_median, g.cost_p90 = stats.quantile(costs, 0.5), stats.quantile(costs, 0.9)
        g.wall_median, g.wall_p90 = stats.quantile(walls, 0.5), stats.quantile(walls, 0.9)
        g.total_tokens, g.total_cost = sum(tokens), sum(costs)
        role_tokens: dict[str, int] = {}
        for r in role_rows.get((strategy, model, config), []):
            role_tokens[r["role"]] = role_tokens.get(r["role"], 0) + r["input_tokens"] + r["output_tokens"]
        total_role = sum(role_tokens.values())
        if total_role:
            g.role_share = {k: v / total_role for k, v in sorted(role_tokens.items())}
        groups.append(g)

    report = Report(db=str(store.path), groups=groups, cells_total=len(rows))
    if isinstance(store, ResultsStore):  # a view of the cells only (the dashboard's filter) has no CritPt record
        report.critpt = critpt_scores(store)
        for score in report.critpt:
            for g in groups:
                if (g.strategy, g.model, g.config) == (score.strategy, score.model, score.config):
                    g.critpt_runs, g.critpt_mean, g.critpt_sd = len(score.runs), score.mean, score.sd
    if graded_cells:
        if equal_tokens is None:
            # Default common cap: the cheapest group's p90 tokens per problem, so that the cheapest
            # scaffold is (nearly) uncapped and every other one is held to the same spend.
            p90s = [stats.quantile([t for _, t in v], 0.9) for v in graded_cells.values()]
            equal_tokens = min(p for p in p90s if p is not None)
        report.equal_budget_tokens = equal_tokens
        all_caps = sorted({t for v in graded_cells.values() for _, t in v} | {0.0})
        for g in groups:
            cs = graded_cells.get((g.strategy, g.model, g.config))
            if not cs:
                continue
            k, n = stats.accuracy_at_cap(cs, equal_tokens)
            g.equal_budget_correct, g.equal_budget_accuracy = k, k / n
            report.budget_curves[group_label(g)] = [
                (float(cap), stats.accuracy_at_cap(cs, cap)[0] / n) for cap in all_caps]
    return report


def _fmt(x: float | None, spec: str = ".3g") -> str:
    return "" if x is None else format(x, spec)


def summary_rows(report: Report) -> list[dict[str, str]]:
    kmax = max((max(g.pass_at_k) for g in report.groups if g.pass_at_k), default=0)
    out = []
    for g in report.groups:
        row = {
            "strategy": g.strategy, "model": g.model, "cells": str(g.cells),
            "failed": str(g.failed), "pending": str(g.pending),
            "graded": str(g.graded), "correct": str(g.correct),
            "accuracy": _fmt(g.accuracy, ".3f"), "ci95_low": _fmt(g.ci_low, ".3f"),
            "ci95_high": _fmt(g.ci_high, ".3f"),
        }
        for k in range(1, kmax + 1):
            row[f"pass@{k}"] = _fmt(g.pass_at_k.get(k), ".3f")
        row.update({
            "tokens_median": _fmt(g.tokens_median, ".0f"), "tokens_p90": _fmt(g.tokens_p90, ".0f"),
            "cost_median_usd": _fmt(g.cost_median, ".4g"), "cost_p90_usd": _fmt(g.cost_p90, ".4g"),
            "wall_median_s": _fmt(g.wall_median, ".3g"), "wall_p90_s": _fmt(g.wall_p90, ".3g"),
            "equal_budget_accuracy": _fmt(g.equal_budget_accuracy, ".3f"),
            "role_token_share": "; ".join(f"{r}={s:.0%}" for r, s in g.role_share.items()),
            "config": g.config,  # last, so the columns before it keep their places
        })
        if report.critpt:
            row.update({"critpt_runs": str(g.critpt_runs), "critpt_accuracy_mean": _fmt(g.critpt_mean, ".4f"),
                        "critpt_accuracy_sd": _fmt(g.critpt_sd, ".4f")})
        out.append(row)
    return out


def write_csv(report: Report, path: str | Path) -> Path:
    path = Path(path)
    rows = summary_rows(report)
    fields = list(rows[0]) if rows else ["strategy", "model"]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def _done_failed(g: GroupSummary) -> str:
    """'done/failed', and the cells not run yet when there are any (a group whose sweep stopped
    early is not a group of zero results)."""
    return f"{g.cells}/{g.failed}" + (f" ({g.pending} pending)" if g.pending else "")


def print_report(report: Report, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=None if Console().is_terminal else 160)
    if not report.groups:
        console.print(f"no cells in {report.db}")
        return
    table = Table(title=f"PhysLab sweep report ({report.db})")
    configs = any(g.config != "-" for g in report.groups)  # the column only when it tells groups apart
    left = ("strategy", "model", "budget|params") if configs else ("strategy", "model")
    critpt = bool(report.critpt)
    for col in (*left, "done/failed", "accuracy [95% CI]", "pass@k",
                "tokens med/p90", "cost med $", "wall med s", "equal-budget acc", *(["CritPt"] if critpt else [])):
        table.add_column(col, justify="left" if col in left else "right")
    for g in report.groups:
        acc = (f"{g.accuracy:.3f} [{g.ci_low:.3f}, {g.ci_high:.3f}] ({g.correct}/{g.graded})"
               if g.accuracy is not None else "ungraded")
        table.add_row(
            g.strategy, g.model, *([g.config] if configs else []), _done_failed(g), acc,
            " ".join(f"@{k} {v:.2f}" for k, v in g.pass_at_k.items()),
            f"{_fmt(g.tokens_median, '.0f')}/{_fmt(g.tokens_p90, '.0f')}",
            _fmt(g.cost_median, ".3g"), _fmt(g.wall_median, ".3g"),
            _fmt(g.equal_budget_accuracy, ".3f"),
            *([critpt_cell(g.critpt_mean, g.critpt_sd, g.critpt_runs)] if critpt else []),
        )
    console.print(table)
    for score in report.critpt:
        label = " × ".join([score.strategy, score.model] + ([score.config] if score.config != "-" else []))
        runs = ", ".join(f"r{r} {a:.1%}" for r, a in score.runs.items())
        console.print(f"CritPt grading server, {label}: {critpt_cell(score.mean, score.sd, len(score.runs))}"
                      f" — runs: {runs}")
    if report.equal_budget_tokens is not None:
        console.print(f"equal-budget view: every cell capped at {report.equal_budget_tokens:.0f} tokens per problem")
    for g in report.groups:
        if g.role_share:
            console.print(f"{group_label(g, sep=' × ')} token share: "
                          + ", ".join(f"{r} {s:.0%}" for r, s in g.role_share.items()))


def critpt_cell(mean: float | None, sd: float | None, runs: int) -> str:
    """'31.4% ± 2.1 (5 of 5 runs)': CritPt's figure is the mean over 5 runs; fewer are said so."""
    if mean is None:
        return ""
    spread = f" ± {sd:.1%}" if sd is not None else ""
    return f"{mean:.1%}{spread} ({runs} of {CRITPT_PROTOCOL_RUNS} runs)"


def write_html(report: Report, path: str | Path, *, plots_dir: str | Path | None = None) -> Path:
    """A self-contained HTML report: tables plus the plots embedded as data URIs (no external
    assets). PNG files are also written to ``plots_dir`` (default: beside the HTML)."""
    from physlab.bench import plots

    path = Path(path)
    plots_dir = Path(plots_dir) if plots_dir else path.with_suffix("").parent / (path.stem + "_plots")
    pngs = plots.write_all(report, plots_dir)
    rows = summary_rows(report)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>PhysLab sweep report</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,td:nth-child(2){text-align:left}img{max-width:48%;margin:1%}</style>",
        "</head><body>",
        f"<h1>PhysLab sweep report</h1><p>Database: <code>{html.escape(report.db)}</code>; "
        f"{report.cells_total} cells.</p>",
        "<p>Accuracy is over graded cells, with Wilson 95% intervals; pass@k uses the unbiased "
        "estimator per problem averaged over problems; tokens, cost and wall are per problem "
        "attempt (median and 90th percentile).</p>",
    ]
    if rows:
        parts.append("<table><tr>" + "".join(f"<th>{html.escape(k)}</th>" for k in rows[0]) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r.values()) + "</tr>")
        parts.append("</table>")
    if report.equal_budget_tokens is not None:
        parts.append(f"<h2>Equal budget</h2><p>Each strategy's accuracy when every problem attempt is "
                     f"capped at {report.equal_budget_tokens:.0f} tokens (an attempt that spent more "
                     f"counts as not solved): column <code>equal_budget_accuracy</code>.</p>")
    parts.append("<h2>Plots</h2>")
    for name, png in pngs.items():
        parts.append(f"<figure><img alt='{html.escape(name)}' src='{plots.data_uri(png)}'>"
                     f"<figcaption>{html.escape(name)}</figcaption></figure>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
