"""A sweep report for people: the terminal tables (rich) and the self-contained HTML page (a
Jinja2 template with autoescaping; the plots embedded as data URIs). The figures come from
:mod:`physlab.bench.report`; nothing is computed here."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader

from physlab.bench.report import (
    CRITPT_PROTOCOL_RUNS,
    GroupSummary,
    Report,
    fmt,
    group_label,
    matrix_tables,
    summary_rows,
)


def critpt_cell(mean: float | None, sd: float | None, runs: int) -> str:
    """'31.4% ± 2.1 (5 of 5 runs)': CritPt's figure is the mean over 5 runs; fewer are said so."""
    if mean is None:
        return ""
    spread = f" ± {sd:.1%}" if sd is not None else ""
    return f"{mean:.1%}{spread} ({runs} of {CRITPT_PROTOCOL_RUNS} runs)"


def accuracy_cell(g: GroupSummary) -> str:
    if g.accuracy is None:
        return "ungraded"
    ci = f" [{g.ci_low:.3f}, {g.ci_high:.3f}]" if g.ci_low is not None and g.ci_high is not None else ""
    return f"{g.accuracy:.3f}{ci}"


def equal_budget_cell(g: GroupSummary) -> str:
    if g.equal_budget_accuracy is None:
        return ""
    ci = (f" [{g.equal_budget_low:.3f}, {g.equal_budget_high:.3f}]"
          if g.equal_budget_low is not None and g.equal_budget_high is not None else "")
    return f"{g.equal_budget_accuracy:.3f}{ci}"


def agreement_cell(g: GroupSummary) -> str:
    if not g.judge_checks:
        return ""
    return f"{g.judge_agreed}/{g.judge_checks} ({g.judge_agreed / g.judge_checks:.0%})"


def _done_failed(g: GroupSummary) -> str:
    """'done/failed', and the cells not run yet when there are any (a group whose sweep stopped
    early is not a group of zero results)."""
    return f"{g.cells}/{g.failed}" + (f" ({g.pending} pending)" if g.pending else "")


def difference_cell(c) -> str:
    """A paired comparison's difference with its interval: '+0.133 [-0.133, +0.467]'."""
    ci = f" [{c.low:+.3f}, {c.high:+.3f}]" if c.low is not None and c.high is not None else ""
    return f"{c.difference:+.3f}{ci}"



LEFT_COLUMNS = ("strategy", "model", "budget|params")


def group_table(report: Report, groups: list[GroupSummary], *, judge: bool = False
                ) -> tuple[list[str], list[list[str]]]:
    """The report's main table, as the terminal and the HTML page show it: (column heads, rows).
    The figures a reader compares, a dozen columns at most; a column only when it says something
    (budget|params when groups differ by it, equal-budget accuracy when there is a common cap, cost
    when a model has a price, CritPt when its server graded). Every figure is in the CSV."""
    configs = any(g.config != "-" for g in report.groups)  # the column only when it tells groups apart
    costs = any((g.cost_median or 0) > 0 for g in report.groups)
    equal = report.equal_budget_tokens is not None or any(g.equal_budget_accuracy is not None for g in groups)
    critpt = bool(report.critpt)
    columns: list[tuple[str, bool, object]] = [
        ("strategy", True, lambda g: g.strategy_label), ("model", True, lambda g: g.model),
        ("budget|params", configs, lambda g: g.config), ("done/failed", True, _done_failed),
        ("correct/graded", True, lambda g: f"{g.correct}/{g.graded}"), ("accuracy [95% CI]", True, accuracy_cell),
        ("pass@k", True, lambda g: " ".join(f"@{k} {v:.2f}" for k, v in g.pass_at_k.items())),
        ("tokens med/p90", True, lambda g: f"{fmt(g.tokens_median, ',.0f')}/{fmt(g.tokens_p90, ',.0f')}"),
        ("cost med $", costs, lambda g: fmt(g.cost_median, ".3g")), ("wall med s", True, lambda g: fmt(g.wall_median, ".3g")),
        ("equal-budget accuracy [95% CI]", equal, equal_budget_cell), ("judge = grader", judge, agreement_cell),
        ("CritPt", critpt, lambda g: critpt_cell(g.critpt_mean, g.critpt_sd, g.critpt_runs)),
    ]
    shown = [(head, cell) for head, on, cell in columns if on]
    return [h for h, _ in shown], [[str(cell(g)) for _, cell in shown] for g in groups]  # type: ignore[operator]


def print_report(report: Report, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=None if Console().is_terminal else 200)
    if not report.groups:
        console.print(f"no cells in {report.db}")
        return

    def groups_table(title: str, groups: list[GroupSummary], *, judge: bool) -> Table:
        table = Table(title=title)
        heads, rows = group_table(report, groups, judge=judge)
        for col in heads:
            table.add_column(col, justify="left" if col in LEFT_COLUMNS else "right")
        for row in rows:
            table.add_row(*row)
        return table

    if report.solvers:
        console.print(groups_table(f"PhysLab sweep report ({report.db})", report.solvers, judge=False))
        problems = sorted({g.problems for g in report.solvers if g.problems})
        console.print("accuracy: mean over problems of the share of repeats solved; 95% intervals by bootstrap "
                      "over problems (a problem's repeats stay together)"
                      + ("; problems per group: " + ", ".join(map(str, problems)) if problems else ""))
    if report.reference_conditioned:
        console.print(groups_table("Reference-conditioned runs (a role saw the reference: not solvers, not ranked)",
                                   report.reference_conditioned, judge=True))
    for score in report.critpt:
        label = " × ".join([score.strategy, score.model] + ([score.config] if score.config != "-" else []))
        runs = ", ".join(f"r{r} {a:.1%}" for r, a in score.runs.items())
        console.print(f"CritPt grading server, {label}: {critpt_cell(score.mean, score.sd, len(score.runs))}"
                      f" — runs: {runs}")
    if report.equal_budget_tokens is not None:
        console.print(f"equal-budget view: every cell capped at {report.equal_budget_tokens:.0f} tokens per "
                      "problem, read off the accuracy-vs-budget curves (a run holds its best answer so far)")
    if report.comparisons:
        table = Table(title="Paired comparisons (same problems)")
        for col in ("a", "b", "problems", "acc a", "acc b", "a − b [95% CI]", "a better / b better", "p (exact)"):
            table.add_column(col, justify="left" if col in ("a", "b") else "right")
        for c in report.comparisons:
            table.add_row(c.a.replace("|", " × "), c.b.replace("|", " × "), str(c.problems), f"{c.accuracy_a:.3f}",
                          f"{c.accuracy_b:.3f}", difference_cell(c), f"{c.a_better} / {c.b_better}",
                          f"{c.p_value:.3g}")
        console.print(table)
    for title, heads, rows in matrix_tables(report):
        console.print(f"Problems × strategies: {title} (correct/graded repeats)")  # a title would wrap
        table = Table()
        table.add_column("problem")
        for h in heads:
            table.add_column(h, justify="right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    for curve in report.curves:
        if curve.axis != "tokens" or not curve.points:
            continue
        shown = _milestones(curve.points)
        console.print(f"accuracy vs token cap, {curve.group.replace('|', ' × ')}: "
                      + ", ".join(f"≤{p.cap:,.0f} {p.accuracy:.2f}" for p in shown))
    for g in report.groups:
        if g.role_share:
            console.print(f"{group_label(g, sep=' × ')} token share: "
                          + ", ".join(f"{r} {s:.0%}" for r, s in g.role_share.items()))
        if g.role_cached:
            console.print(f"{group_label(g, sep=' × ')} input read from the prompt cache: "
                          + ", ".join(f"{r} {s:.0%}" for r, s in g.role_cached.items())
                          + f" ({g.cache_read_tokens:,} tokens read, {g.cache_write_tokens:,} written)")


def _milestones(points, n: int = 6):
    """Where the curve changes, at most ``n`` of them (the last always)."""
    changes = [p for i, p in enumerate(points) if i == 0 or p.accuracy != points[i - 1].accuracy]
    if len(changes) > n:
        step = (len(changes) - 1) / (n - 1)
        changes = [changes[round(i * step)] for i in range(n)]
    return changes


_ENV = Environment(loader=PackageLoader("physlab.bench", "templates"), autoescape=True, trim_blocks=True,
                   lstrip_blocks=True)


def write_html(report: Report, path: str | Path, *, plots_dir: str | Path | None = None) -> Path:
    """A self-contained HTML report: tables plus the plots embedded as data URIs (no external
    assets). PNG files are also written to ``plots_dir`` (default: beside the HTML)."""
    from physlab.bench import plots

    path = Path(path)
    plots_dir = Path(plots_dir) if plots_dir else path.with_suffix("").parent / (path.stem + "_plots")
    pngs = plots.write_all(report, plots_dir)
    rows = summary_rows(report)
    solver_labels = {group_label(g) for g in report.solvers}
    html = _ENV.get_template("report.html").render(
        report=report, columns=list(rows[0]) if rows else [], left=LEFT_COLUMNS,
        main=group_table(report, report.solvers), reference=group_table(report, report.reference_conditioned, judge=True),
        solver_rows=[r for r, g in zip(rows, report.groups) if group_label(g) in solver_labels],
        reference_rows=[r for r, g in zip(rows, report.groups) if group_label(g) not in solver_labels],
        matrices=matrix_tables(report), difference=difference_cell,
        plots=[(name, plots.data_uri(png)) for name, png in pngs.items()])
    path.write_text(html, encoding="utf-8")
    return path
