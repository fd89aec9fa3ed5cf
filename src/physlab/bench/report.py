"""Sweep reports, computed from the results database only.

Per group (strategy x model x config; a run a cap turned into another strategy is its own group,
under what it ran as): accuracy, the mean over problems of the share of each problem's repeats
solved, with a 95% interval by bootstrap over problems (the repeats of a problem stay together);
mean pass@k for every k the repeats allow; tokens / cost / wall per problem (median, p90); the
share of tokens per role; and accuracy as a function of budget: each run's checkpoints (its best
answer so far, with what it had spent then, graded once when the run ended) give the accuracy at
any token or cost cap, with intervals, from one sweep. The equal-budget column reads that curve
at one common cap. Beside them: paired comparisons of two groups on the problems both were graded
on, the problem x strategy matrix, and the score CritPt's grading server gave the group's batches.

Runs where a role saw the reference (SCALAR's paper setting) are reference-conditioned: they are
reported on their own, with how often the Judge agreed with the grader, and never compared or
ranked beside solvers.
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, computed_field

from physlab.bench import stats
from physlab.bench.store import ResultsStore, cell_config

CURVE_POINTS = 120  # at most this many caps per curve (every distinct spend up to that)
CURVE_RESAMPLES = 2000  # bootstrap resamples per curve (one set for all its caps)


class GroupSummary(BaseModel):
    strategy: str
    model: str
    config: str = Field(default="-", description="Budget tag, then strategy parameters when any: cells "
                                                 "run at another budget or with other --param are another group.")
    ran_as: str | None = Field(default=None, description="What a cap turned the strategy into (its runs are "
                                                         "never reported under the strategy's full name).")
    reference_conditioned: bool = Field(default=False, description="A role saw the reference: not a solver.")
    cells: int = Field(description="Finished cells.")
    failed: int = 0
    pending: int = 0
    graded: int = 0
    correct: int = 0
    problems: int = Field(default=0, description="Problems with a graded cell.")
    accuracy: float | None = Field(default=None, description="Mean over problems of the share of its graded "
                                                             "repeats that were correct.")
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str = Field(default="", description="'bootstrap over N problems', or with one problem "
                                                   "'Wilson over N repeats'.")
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
    cache_read_tokens: int = Field(default=0, description="Input tokens read from the providers' prompt caches.")
    cache_write_tokens: int = Field(default=0, description="Input tokens written to them.")
    role_cached: dict[str, float] = Field(default_factory=dict, description="Per role, the share of its input "
                                                                            "tokens read from the prompt cache.")
    equal_budget_correct: int | None = Field(default=None, description="Cells solved within the common cap.")
    equal_budget_accuracy: float | None = None
    equal_budget_low: float | None = None
    equal_budget_high: float | None = None
    judge_checks: int = Field(default=0, description="SCALAR turns both the Judge and the grader decided.")
    judge_agreed: int = 0
    critpt_runs: int = Field(default=0, description="Repeats CritPt's server graded.")
    critpt_mean: float | None = Field(default=None, description="CritPt accuracy, mean over those runs.")
    critpt_sd: float | None = None

    @property
    def strategy_label(self) -> str:
        return f"{self.strategy} (ran as {self.ran_as})" if self.ran_as else self.strategy

    @property
    def key(self) -> tuple:
        return (self.strategy, self.ran_as or "", self.model, self.config, self.reference_conditioned)


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


class CurvePoint(BaseModel):
    cap: float = Field(description="Tokens (or USD) per problem attempt.")
    accuracy: float
    low: float | None = None
    high: float | None = None


class BudgetCurve(BaseModel):
    """One group's accuracy at every cap: a run counts as solved at cap T when the last answer it
    held having spent at most T was correct (its final answer holds from its full spend on)."""

    group: str = Field(description="group_label of the group.")
    axis: Literal["tokens", "cost_usd"]
    points: list[CurvePoint]


class PairedComparison(BaseModel):
    """Group a against group b on the problems both were graded on."""

    a: str
    b: str
    problems: int
    accuracy_a: float
    accuracy_b: float
    difference: float = Field(description="Mean over the shared problems of accuracy_a - accuracy_b.")
    low: float | None = Field(default=None, description="Paired bootstrap 95% interval of the difference.")
    high: float | None = None
    a_better: int = Field(description="Problems where a solved a larger share of its repeats than b.")
    b_better: int
    p_value: float = Field(description="Exact two-sided sign test over those problems (exact McNemar with "
                                       "one repeat per problem).")


class Report(BaseModel):
    db: str
    groups: list[GroupSummary]
    equal_budget_tokens: float | None = Field(
        default=None, description="The common per-problem token cap of the equal-budget view.")
    curves: list[BudgetCurve] = Field(default_factory=list, description="Accuracy against a token cap, and "
                                                                        "against a cost cap when runs cost money.")
    comparisons: list[PairedComparison] = Field(default_factory=list)
    matrix: dict[str, dict[str, list[int]]] = Field(
        default_factory=dict, description="problem id -> group label -> [correct, graded] of its repeats.")
    cells_total: int = 0
    critpt: list[CritptScore] = Field(default_factory=list, description="Scores from CritPt's grading server.")

    @property
    def solvers(self) -> list[GroupSummary]:
        return [g for g in self.groups if not g.reference_conditioned]

    @property
    def reference_conditioned(self) -> list[GroupSummary]:
        return [g for g in self.groups if g.reference_conditioned]

    def token_curves(self) -> dict[str, list[tuple[float, float]]]:
        """group label -> [(token cap, accuracy)]."""
        return {c.group: [(p.cap, p.accuracy) for p in c.points] for c in self.curves if c.axis == "tokens"}

    @computed_field(description="The token curves in the first release's shape, 'group label' -> "  # type: ignore[prop-decorator]
                                "[(token cap, accuracy)]: `bench report --json` readers rely on it.")
    @property
    def budget_curves(self) -> dict[str, list[tuple[float, float]]]:
        return self.token_curves()


def group_label(g: GroupSummary, *, sep: str = "|") -> str:
    """'strategy|model' ('strategy (ran as X)|model' for runs a cap changed), plus '|config' for a
    group run at a budget or with parameters."""
    parts = [g.strategy_label, g.model] + ([g.config] if g.config != "-" else [])
    return sep.join(parts)


def _with_config(rows: list[dict]) -> list[dict]:
    return [{**r, "config": cell_config(r), "ran_as": r.get("ran_as") or "",
             "reference_conditioned": bool(r.get("reference_conditioned"))} for r in rows]


def _tokens(row: dict) -> int:
    return row["input_tokens"] + row["output_tokens"]


class _Graded:
    """A group's graded cells as traces per problem: (spend, correct) of each checkpoint, then
    of the final answer, on both axes."""

    def __init__(self, cells: list[dict], checkpoints: dict[str, list[dict]]):
        self.by_problem = {pid: cs for (pid,), cs in sorted(stats.group_by(cells, "problem_id").items())}
        self.traces: dict[str, dict[str, list[list[tuple[float, bool]]]]] = {"tokens": {}, "cost_usd": {}}
        for pid, cs in self.by_problem.items():
            for axis in self.traces:
                self.traces[axis][pid] = [self._trace(c, checkpoints.get(c["key"], []), axis) for c in cs]

    @staticmethod
    def _trace(cell: dict, cps: list[dict], axis: str) -> list[tuple[float, bool]]:
        spend = _tokens if axis == "tokens" else (lambda r: r["cost_usd"])
        return [(float(spend(cp)), cp["verdict"] == "correct") for cp in cps] + \
               [(float(spend(cell)), cell["verdict"] == "correct")]

    def per_problem(self, axis: str, caps: list[float]) -> np.ndarray:
        """Accuracy per cap (rows) and problem (columns)."""
        return np.stack([stats.problem_accuracy(t, caps) for t in self.traces[axis].values()], axis=-1)

    def final(self) -> dict[str, float]:
        return {pid: sum(c["verdict"] == "correct" for c in cs) / len(cs) for pid, cs in self.by_problem.items()}

    def spends(self, axis: str) -> list[float]:
        return sorted({x for ts in self.traces[axis].values() for t in ts for x, _ in t})

    def correct_spends(self) -> list[float]:
        return [x for ts in self.traces["tokens"].values() for t in ts for x, ok in t if ok]


def build_report(store: ResultsStore, *, equal_tokens: float | None = None) -> Report:
    # Grouped by strategy x model x config: pooling cells run at different budgets or parameters
    # would mix two experiments in one accuracy, and count them as repeats in pass@k.
    rows = _with_config(store.cells())
    keys = ("strategy", "ran_as", "model", "config", "reference_conditioned")
    by_group = stats.group_by(rows, *keys)
    role_rows = stats.group_by(_with_config(store.roles()), *keys)
    checkpoints: dict[str, list[dict]] = {}
    for cp in store.checkpoints():
        checkpoints.setdefault(cp["cell_key"], []).append(cp)
    groups: list[GroupSummary] = []
    graded_of: dict[tuple, _Graded] = {}
    for key, cells in sorted(by_group.items()):
        strategy, ran_as, model, config, ref = key
        done = [c for c in cells if c["state"] == "done"]
        graded = [c for c in done if c["verdict"] is not None]
        g = GroupSummary(
            strategy=strategy, model=model, config=config, ran_as=ran_as or None, reference_conditioned=ref,
            cells=len(done), failed=sum(c["state"] == "failed" for c in cells),
            pending=sum(c["state"] in ("pending", "running") for c in cells),
            graded=len(graded), correct=sum(c["verdict"] == "correct" for c in graded),
            answered=sum(bool(c["answer_code"] or c["answer_text"]) for c in done),
            judge_checks=sum(c.get("judge_checks") or 0 for c in done),
            judge_agreed=sum(c.get("judge_agreed") or 0 for c in done),
        )
        if graded:
            graded_of[key] = _Graded(graded, checkpoints)
            _accuracy(g, graded_of[key])
        tokens = [_tokens(c) for c in done]
        costs = [c["cost_usd"] for c in done]
        walls = [c["wall_s"] for c in done]
        g.tokens_median, g.tokens_p90 = stats.quantile(tokens, 0.5), stats.quantile(tokens, 0.9)
        g.cost_median, g.cost_p90 = stats.quantile(costs, 0.5), stats.quantile(costs, 0.9)
        g.wall_median, g.wall_p90 = stats.quantile(walls, 0.5), stats.quantile(walls, 0.9)
        g.total_tokens, g.total_cost = sum(tokens), sum(costs)
        role_tokens: dict[str, int] = {}
        role_input: dict[str, int] = {}
        role_read: dict[str, int] = {}
        for r in role_rows.get(key, []):
            role_tokens[r["role"]] = role_tokens.get(r["role"], 0) + _tokens(r)
            role_input[r["role"]] = role_input.get(r["role"], 0) + r["input_tokens"]
            role_read[r["role"]] = role_read.get(r["role"], 0) + r["cache_read_tokens"]
            g.cache_read_tokens += r["cache_read_tokens"]
            g.cache_write_tokens += r["cache_write_tokens"]
        total_role = sum(role_tokens.values())
        if total_role:
            g.role_share = {k: v / total_role for k, v in sorted(role_tokens.items())}
        if g.cache_read_tokens:
            g.role_cached = {k: role_read[k] / v for k, v in sorted(role_input.items()) if v}
        groups.append(g)

    report = Report(db=str(store.path), groups=groups, cells_total=len(rows))
    if isinstance(store, ResultsStore):  # a view of the cells only (the dashboard's filter) has no CritPt record
        report.critpt = critpt_scores(store)
        for score in report.critpt:
            for g in groups:
                if (g.strategy, g.model, g.config, g.ran_as) == (score.strategy, score.model, score.config, None):
                    g.critpt_runs, g.critpt_mean, g.critpt_sd = len(score.runs), score.mean, score.sd
    solvers = {g.key: graded_of[g.key] for g in report.solvers if g.key in graded_of}
    if graded_of:
        report.equal_budget_tokens = equal_tokens if equal_tokens is not None else _default_cap(
            [g for g in report.solvers if g.key in solvers], solvers) or _default_cap(
            [g for g in groups if g.key in graded_of], graded_of)
        any_cost = any(c["cost_usd"] > 0 for c in rows if c["state"] == "done")
        for g in groups:
            gr = graded_of.get(g.key)
            if gr is None:
                continue
            report.curves += [_curve(g, gr, axis) for axis in (("tokens", "cost_usd") if any_cost else ("tokens",))]
            _equal_budget(g, gr, report.equal_budget_tokens)
    report.comparisons = _comparisons([g for g in report.solvers if g.key in solvers], solvers)
    for g in groups:
        gr = graded_of.get(g.key)
        for pid, cs in (gr.by_problem.items() if gr else ()):
            report.matrix.setdefault(pid, {})[group_label(g)] = [sum(c["verdict"] == "correct" for c in cs), len(cs)]
    report.matrix = dict(sorted(report.matrix.items()))
    return report


def _accuracy(g: GroupSummary, gr: _Graded) -> None:
    per_problem = gr.final()
    g.problems = len(per_problem)
    g.accuracy = float(np.mean(list(per_problem.values())))
    ci = stats.problem_bootstrap(np.array(list(per_problem.values())))
    if ci is not None:
        g.ci_low, g.ci_high = float(ci[0]), float(ci[1])
        g.ci_method = f"bootstrap over {g.problems} problems"
    else:  # one problem: its repeats are the only independent draws there are
        g.ci_low, g.ci_high = stats.wilson_interval(g.correct, g.graded)
        g.ci_method = f"Wilson over {g.graded} repeats of one problem"
    counts = [(len(cs), sum(c["verdict"] == "correct" for c in cs)) for cs in gr.by_problem.values()]
    for k in range(1, min(n for n, _ in counts) + 1):
        v = stats.mean_pass_at_k(counts, k)
        if v is not None:
            g.pass_at_k[k] = v


def _default_cap(groups: list[GroupSummary], graded: dict[tuple, _Graded]) -> float | None:
    """The equal-budget view's default cap: the 90th percentile of tokens per problem of the
    cheapest group that solved anything (so that scaffold runs nearly uncapped and every other one
    is held to its spend), raised if need be to the cheapest correct answer any of these groups
    reached, so the cap never sits below every correct cell."""
    solving = [g for g in groups if g.correct and g.tokens_p90 is not None]
    if not solving:
        return max((g.tokens_p90 or 0.0 for g in groups), default=None)
    cap = min(g.tokens_p90 for g in solving if g.tokens_p90 is not None)  # all of them (solving's filter)
    cheapest_correct = min(x for g in solving for x in graded[g.key].correct_spends())
    return float(max(cap, cheapest_correct))


def _thin(xs: list[float], n: int) -> list[float]:
    if len(xs) <= n:
        return xs
    idx = np.unique(np.linspace(0, len(xs) - 1, n).round().astype(int))
    return [xs[i] for i in idx]


def _curve(g: GroupSummary, gr: _Graded, axis: Literal["tokens", "cost_usd"]) -> BudgetCurve:
    caps = _thin(gr.spends(axis), CURVE_POINTS)
    acc = gr.per_problem(axis, caps)
    ci = stats.problem_bootstrap(acc, n_resamples=CURVE_RESAMPLES)
    means = acc.mean(axis=-1)
    points = [CurvePoint(cap=cap, accuracy=float(means[i]),
                         low=None if ci is None else float(ci[0][i]), high=None if ci is None else float(ci[1][i]))
              for i, cap in enumerate(caps)]
    return BudgetCurve(group=group_label(g), axis=axis, points=points)


def _equal_budget(g: GroupSummary, gr: _Graded, cap: float | None) -> None:
    if cap is None:
        return
    acc = gr.per_problem("tokens", [cap])
    g.equal_budget_correct = sum(stats.solved_within(t, cap) for ts in gr.traces["tokens"].values() for t in ts)
    g.equal_budget_accuracy = float(acc.mean())
    ci = stats.problem_bootstrap(acc[0])
    if ci is not None:
        g.equal_budget_low, g.equal_budget_high = float(ci[0]), float(ci[1])


def _comparisons(groups: list[GroupSummary], graded: dict[tuple, _Graded]) -> list[PairedComparison]:
    """Every two solver groups that differ in one thing, strategy or model (same config)."""
    out = []
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            same_model = (a.model, a.config) == (b.model, b.config)
            same_strategy = (a.strategy_label, a.config) == (b.strategy_label, b.config)
            if not (same_model or same_strategy):
                continue
            res = stats.paired_comparison(graded[a.key].final(), graded[b.key].final())
            if res is None:
                continue
            out.append(PairedComparison(a=group_label(a), b=group_label(b), problems=res.problems,
                                        accuracy_a=res.mean_a, accuracy_b=res.mean_b, difference=res.difference,
                                        low=res.low, high=res.high, a_better=res.a_better, b_better=res.b_better,
                                        p_value=res.p_value))
    return out


def fmt(x: float | None, spec: str = ".3g") -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def summary_rows(report: Report) -> list[dict[str, str]]:
    kmax = max((max(g.pass_at_k) for g in report.groups if g.pass_at_k), default=0)
    out = []
    for g in report.groups:
        row = {
            "strategy": g.strategy_label, "model": g.model, "cells": str(g.cells),
            "failed": str(g.failed), "pending": str(g.pending),
            "graded": str(g.graded), "correct": str(g.correct),
            "accuracy": fmt(g.accuracy, ".3f"), "ci95_low": fmt(g.ci_low, ".3f"),
            "ci95_high": fmt(g.ci_high, ".3f"),
        }
        for k in range(1, kmax + 1):
            row[f"pass@{k}"] = fmt(g.pass_at_k.get(k), ".3f")
        row.update({
            "tokens_median": fmt(g.tokens_median, ".0f"), "tokens_p90": fmt(g.tokens_p90, ".0f"),
            "cost_median_usd": fmt(g.cost_median, ".4g"), "cost_p90_usd": fmt(g.cost_p90, ".4g"),
            "wall_median_s": fmt(g.wall_median, ".3g"), "wall_p90_s": fmt(g.wall_p90, ".3g"),
            "equal_budget_accuracy": fmt(g.equal_budget_accuracy, ".3f"),
            "role_token_share": "; ".join(f"{r}={s:.0%}" for r, s in g.role_share.items()),
            "config": g.config,  # before the columns added later, so the ones before it keep their places
        })
        if report.critpt:
            row.update({"critpt_runs": str(g.critpt_runs), "critpt_accuracy_mean": fmt(g.critpt_mean, ".4f"),
                        "critpt_accuracy_sd": fmt(g.critpt_sd, ".4f")})
        row.update({
            "problems": str(g.problems), "ci_method": g.ci_method,
            "equal_budget_ci95_low": fmt(g.equal_budget_low, ".3f"),
            "equal_budget_ci95_high": fmt(g.equal_budget_high, ".3f"),
            "ran_as": g.ran_as or "", "reference_conditioned": "yes" if g.reference_conditioned else "",
            "judge_grader_agreement": f"{g.judge_agreed}/{g.judge_checks}" if g.judge_checks else "",
            "cache_read_tokens": str(g.cache_read_tokens), "cache_write_tokens": str(g.cache_write_tokens),
            "role_cached_input": "; ".join(f"{r}={s:.0%}" for r, s in g.role_cached.items()),
        })
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


def matrix_tables(report: Report) -> list[tuple[str, list[str], list[list[Any]]]]:
    """The problem x strategy matrix, one table per model and config: (title, column labels,
    rows of [problem id, 'k/n' or '' per strategy])."""
    out = []
    by_mc: dict[tuple[bool, str, str], list[GroupSummary]] = {}
    for g in report.groups:
        if g.graded:  # reference-conditioned groups in tables of their own, never beside solvers
            by_mc.setdefault((g.reference_conditioned, g.model, g.config), []).append(g)
    for (ref, model, config), gs in sorted(by_mc.items()):
        labels = [group_label(g) for g in gs]
        rows = []
        for pid, results in report.matrix.items():
            cells = [results.get(lb) for lb in labels]
            if any(cells):
                rows.append([pid] + ["" if c is None else f"{c[0]}/{c[1]}" for c in cells])
        title = model + (f" ({config})" if config != "-" else "") + (", reference-conditioned" if ref else "")
        out.append((title, [g.strategy_label for g in gs], rows))
    return out
