"""A sweep report for people: the terminal tables (rich) and the self-contained HTML page (a
Jinja2 template with autoescaping; the plots embedded as data URIs). The figures come from
:mod:`physlab.bench.report`; nothing is computed here."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader

from physlab.bench.report import (
    APART,
    CRITPT_PROTOCOL_RUNS,
    GroupSummary,
    PairedComparison,
    Report,
    apart_title,
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


def anytime_cell(g: GroupSummary) -> str:
    if g.anytime_accuracy is None:
        return ""
    ci = (f" [{g.anytime_low:.3f}, {g.anytime_high:.3f}]"
          if g.anytime_low is not None and g.anytime_high is not None else "")
    return f"{g.anytime_accuracy:.3f}{ci}"


equal_budget_cell = anytime_cell  # the first release's name


def agreement_cell(g: GroupSummary) -> str:
    if not g.judge_checks:
        return ""
    return f"{g.judge_agreed}/{g.judge_checks} ({g.judge_agreed / g.judge_checks:.0%})"


def _done_failed(g: GroupSummary) -> str:
    """'done/crashed', and the cells not run yet when there are any (a group whose sweep stopped
    early is not a group of zero results)."""
    return f"{g.cells}/{g.failed}" + (f" ({g.pending} pending)" if g.pending else "")


def _solved(g: GroupSummary) -> str:
    """'correct/cells', the crashed cells (in the denominator) said."""
    return (f"{g.correct}/{g.graded + g.crashed}" + (f" ({g.crashed} crashed)" if g.crashed else "")
            + (f" ({g.ungraded} ungraded)" if g.ungraded else ""))


def _cut(g: GroupSummary) -> str:
    return f"{g.cut_short}/{g.cells}" if g.cut_short else ""


def difference_cell(c: PairedComparison) -> str:
    """A paired comparison's difference with its interval adjusted for the report's comparisons
    (the one beside p (Holm)): '+0.133 [-0.133, +0.467]'."""
    low, high = (c.low_adjusted, c.high_adjusted) if c.low_adjusted is not None else (c.low, c.high)
    ci = f" [{low:+.3f}, {high:+.3f}]" if low is not None and high is not None else ""
    return f"{c.difference:+.3f}{ci}"


COMPARISON_HEADS = ("a", "b", "problems", "acc a", "acc b", "a − b [95% CI, adjusted]", "a better / b better",
                    "p (exact)", "p (Holm)", "method")


def comparison_table(report: Report) -> tuple[tuple[str, ...], list[list[str]]]:
    """The paired comparisons as every view shows them: (column heads, rows)."""
    return COMPARISON_HEADS, [
        [c.a.replace("|", " × "), c.b.replace("|", " × "), str(c.problems), f"{c.accuracy_a:.3f}",
         f"{c.accuracy_b:.3f}", difference_cell(c), f"{c.a_better} / {c.b_better}", f"{c.p_value:.3g}",
         f"{c.p_holm:.3g}", c.method] for c in report.comparisons]


def comparisons_note(report: Report) -> str:
    """Which of the comparisons' figures to read, said under the table in every view."""
    m = len(report.comparisons)
    if m <= 1:
        return ("One comparison: its interval and p need no adjustment. Read the interval first: if it holds 0 "
                "the sweep cannot tell the two apart.")
    family = 1 - 0.05 / m
    return (f"The interval and p (Holm) are adjusted for the {m} comparisons of this report (each interval at "
            f"{family:.2%}, Bonferroni: all {m} hold together with 95%): read those. If the interval holds 0 the "
            "sweep cannot tell the two apart. p (exact), and the unadjusted interval in --json (low, high), are "
            "for one comparison chosen before the sweep.")


def _budget_label(tokens: int | None) -> str:
    return "no cap" if tokens is None else f"{tokens:,} tokens"


LEFT_COLUMNS = ("strategy", "model", "protocol", "budget|params")


def anytime_head(report: Report) -> str:
    """The anytime column's head, its cap T said: 'anytime acc ≤800 tok [95% CI]'."""
    return f"anytime acc ≤{fmt(report.anytime_tokens, ',.0f')} tok [95% CI]"


def group_table(report: Report, groups: list[GroupSummary], *, judge: bool = False
                ) -> tuple[list[str], list[list[str]]]:
    """The report's main table, as the terminal and the HTML page show it: (column heads, rows).
    The figures a reader compares, a dozen columns at most; a column only when it says something
    (budget|params when groups differ by it, cut short when a cap stopped a run, anytime accuracy
    when there is a cap T, cost when a model has a price, CritPt when its server graded). Every
    figure is in the CSV."""
    configs = any(g.setting != "-" for g in report.groups)  # the column only when it tells groups apart
    protocols = any(g.protocol != "physlab" for g in report.groups)
    costs = any((g.cost_median or 0) > 0 for g in report.groups)
    cut = any(g.cut_short for g in groups)
    anytime = report.anytime_tokens is not None or any(g.anytime_accuracy is not None for g in groups)
    critpt = bool(report.critpt)
    columns: list[tuple[str, bool, object]] = [
        ("strategy", True, lambda g: g.strategy_label), ("model", True, lambda g: g.model),
        ("protocol", protocols, lambda g: g.protocol),
        ("budget|params", configs, lambda g: g.setting), ("done/crashed", True, _done_failed),
        ("correct/cells", True, _solved), ("accuracy [95% CI]", True, accuracy_cell), ("cut short", cut, _cut),
        ("pass@k", True, lambda g: " ".join(f"@{k} {v:.2f}" for k, v in g.pass_at_k.items())),
        ("input/output/cached med", True,
         lambda g: "/".join(fmt(x, ",.0f") for x in (g.input_median, g.output_median, g.cached_median))),
        ("cost med $", costs, lambda g: fmt(g.cost_median, ".3g")), ("wall med s", True, lambda g: fmt(g.wall_median, ".3g")),
        (anytime_head(report), anytime, anytime_cell), ("judge = grader", judge, agreement_cell),
        ("CritPt", critpt, lambda g: critpt_cell(g.critpt_mean, g.critpt_sd, g.critpt_runs)),
    ]
    shown = [(head, cell) for head, on, cell in columns if on]
    return [h for h, _ in shown], [[str(cell(g)) for _, cell in shown] for g in groups]  # type: ignore[operator]


def apart_note() -> str:
    """Why the groups of the table kept apart are there: each kind's reason."""
    return "; or ".join(a.why for a in APART.values())


def interval_note(report: Report) -> str:
    """What the accuracy column is and how its intervals were made, and which protocol the groups
    ran when the table has no column for it, said under the table."""
    methods = sorted({re.sub(r"\b\d+ ", "N ", g.ci_method) for g in report.solvers if g.ci_method})
    protocol = ("" if any(g.protocol != "physlab" for g in report.groups) else
                "protocol: physlab, PhysLab's defaults, for every group (--protocol paper: each strategy at its "
                "published setting). ")
    return (protocol + "accuracy: mean over problems of the share of each problem's cells solved (a run a cap cut "
            "short counts as what it answered, a crashed cell as unsolved); 95% intervals: "
            + "; ".join(methods or ["-"]) + " (the CSV's ci_method says which, per group)")


def print_report(report: Report, console=None) -> None:
    """The report on the terminal, section by section (each prints nothing when it has nothing)."""
    from rich.console import Console

    console = console or Console(width=None if Console().is_terminal else 200)
    if not report.groups:
        console.print(f"no cells in {report.db}")
        return
    for section in (_groups, _critpt, _budget_sweeps, _comparisons, _matrices, _curves, _group_notes, _lost):
        section(report, console)


def _table(heads: list[str] | tuple[str, ...], rows: list[list[str]], left: Callable[[str], bool],
           title: str | None = None) -> Any:
    """A rich table: its columns (left-justified when ``left(col)``), its rows."""
    from rich.table import Table

    table = Table(title=title)
    for col in heads:
        table.add_column(col, justify="left" if left(col) else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _groups(report: Report, console: Any) -> None:
    def groups_table(title: str, groups: list[GroupSummary], *, judge: bool) -> Any:
        heads, rows = group_table(report, groups, judge=judge)
        return _table(heads, rows, lambda col: col in LEFT_COLUMNS, title)

    if report.solvers:
        console.print(groups_table(f"PhysLab sweep report ({report.db})", report.solvers, judge=False))
        console.print(interval_note(report))
    if report.reference_conditioned:
        console.print(groups_table(f"{apart_title()} ({apart_note()}: not solvers, not ranked)",
                                   report.reference_conditioned,
                                   judge=any(g.judge_checks for g in report.reference_conditioned)))


def _critpt(report: Report, console: Any) -> None:
    for score in report.critpt:
        label = " × ".join([score.strategy, score.model] + ([score.config] if score.config != "-" else []))
        runs = ", ".join(f"r{r} {a:.1%}" for r, a in score.runs.items())
        console.print(f"CritPt grading server, {label}: {critpt_cell(score.mean, score.sd, len(score.runs))}"
                      f" — runs: {runs}")


def _budget_sweeps(report: Report, console: Any) -> None:
    if report.budget_sweeps:
        heads = ("strategy", "model", "params", "budget", "accuracy [95% CI]", "problems", "cut short", "tokens med")
        rows = []
        for sweep in report.budget_sweeps:
            for p in sweep.points:
                ci = f" [{p.low:.3f}, {p.high:.3f}]" if p.low is not None and p.high is not None else ""
                rows.append([sweep.strategy, sweep.model, sweep.params or "-", _budget_label(p.budget_tokens),
                             f"{fmt(p.accuracy, '.3f')}{ci}", str(p.problems), str(p.cut_short),
                             fmt(p.tokens_median, ",.0f")])
        console.print(_table(heads, rows, lambda col: col in ("strategy", "model", "params"),
                             "Accuracy at each budget (each a sweep run with --budget-tokens: runs really capped)"))
    if report.anytime_tokens is not None:
        console.print(f"anytime accuracy at {report.anytime_tokens:.0f} tokens: the answer each run held with at most "
                      "that many tokens spent, read off its checkpoints. It is not what a run capped there would "
                      "have done; for that, sweep with --budget-tokens.")


def _comparisons(report: Report, console: Any) -> None:
    if report.comparisons:
        pair_heads, pair_rows = comparison_table(report)
        console.print(_table(pair_heads, pair_rows, lambda col: col in ("a", "b", "method"),
                             "Paired comparisons (same problems)"))
        console.print(comparisons_note(report))


def _matrices(report: Report, console: Any) -> None:
    for title, heads, rows in matrix_tables(report):
        console.print(f"Problems × strategies: {title} (correct/cells)")  # a title would wrap
        console.print(_table(["problem", *heads], rows, lambda col: col == "problem"))


def _curves(report: Report, console: Any) -> None:
    for curve in report.curves:
        if curve.axis != "tokens" or not curve.points:
            continue
        shown = _milestones(curve.points)
        console.print(f"anytime accuracy vs tokens spent, {curve.group.replace('|', ' × ')}: "
                      + ", ".join(f"≤{p.cap:,.0f} {p.accuracy:.2f}" for p in shown))


def _group_notes(report: Report, console: Any) -> None:
    for g in report.groups:
        if g.ran_as_runs:
            console.print(f"{group_label(g, sep=' × ')}: {g.cut_short} of {g.cells} runs cut short by the cap — "
                          + ", ".join(f"{n} ran as {k}" for k, n in g.ran_as_runs.items()))
        if g.role_share:
            console.print(f"{group_label(g, sep=' × ')} token share: "
                          + ", ".join(f"{r} {s:.0%}" for r, s in g.role_share.items()))
        if g.role_cached:
            console.print(f"{group_label(g, sep=' × ')} input read from the prompt cache: "
                          + ", ".join(f"{r} {s:.0%}" for r, s in g.role_cached.items())
                          + f" ({g.cache_read_tokens:,} tokens read, {g.cache_write_tokens:,} written)")


def _lost(report: Report, console: Any) -> None:
    if report.lost.attempts:
        console.print(report.lost.line(), soft_wrap=True)  # one line, whatever the terminal's width
        console.print(_table(LOST_COLUMNS, lost_rows(report), lambda col: LOST_COLUMNS.index(col) < 3))


LOST_COLUMNS = ("strategy", "model", "node", "attempts", "calls", "tokens", "cost USD")


def lost_rows(report: Report) -> list[list[str]]:
    """The lost attempts' table, a row per strategy x model x node (the node's id cut to 12)."""
    return [[g.strategy, g.model, g.node[:12], str(g.attempts), str(g.calls), f"{g.tokens:,}", f"{g.cost_usd:.4f}"]
            for g in report.lost.groups]


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
    html = _ENV.get_template("report.html").render(
        report=report, columns=list(rows[0]) if rows else [], left=LEFT_COLUMNS,
        main=group_table(report, report.solvers),
        reference=group_table(report, report.reference_conditioned,
                              judge=any(g.judge_checks for g in report.reference_conditioned)),
        solver_rows=[r for r, g in zip(rows, report.groups) if g.solver],
        reference_rows=[r for r, g in zip(rows, report.groups) if not g.solver],
        matrices=matrix_tables(report), comparisons=comparison_table(report), apart_title=apart_title(),
        apart_note=apart_note(),
        comparisons_note=comparisons_note(report), pair_left=("a", "b", "method"),
        lost_columns=LOST_COLUMNS, lost_rows=lost_rows(report),
        plots=[(name, plots.CAPTIONS.get(name, name.replace("_", " ")), plots.data_uri(png))
               for name, png in pngs.items()])
    path.write_text(html, encoding="utf-8")
    return path
