"""Sweep reports, computed from the results database only.

Per group (strategy x model x config, the config being the budget the cells ran at and their
parameters): accuracy over every problem the group ran, each problem weighing the same (the share
of its cells that were correct; a run a cap cut short counts as what it answered, a crashed cell
counts as unsolved and is shown), with an exact 95% interval whose unit is the challenge where
sub-problems or repeats exist (:func:`physlab.bench.stats.accuracy_interval`); pass@k; input,
output and cached tokens and the cost in dollars per problem attempt (median, p90); the share of
tokens per role. Beside them: paired comparisons of two groups on the problems both ran, with
Holm-adjusted p-values beside the raw ones; the problem x strategy matrix; accuracy at each budget
from sweeps run at several ``--budget-tokens`` (the real equal-budget comparison); the *anytime
accuracy* curves read from each run's checkpoints (what a run held with at most T spent, not what a
run capped at T would have done); the score CritPt's grading server gave the group's batches; and
the spend of the attempts a Ray node took down with it (:mod:`physlab.bench.lost`).

Oracles (``tpbench-bon`` reads the answer key) and runs where a role saw the reference (SCALAR's
paper setting) are reported in a table of their own and never compared or ranked beside solvers.
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, computed_field

from physlab.bench import stats
from physlab.bench.lost import LostSpend, lost_spend
from physlab.bench.store import ResultsStore, cell_config

CURVE_POINTS = 120  # at most this many caps per curve (every distinct spend up to that)
# Strategies that read the answer key to choose. Cells recorded before the runner marked such runs
# are known by name.
ORACLES = frozenset({"tpbench-bon"})


class Apart(NamedTuple):
    """A kind of group the report keeps apart from the solvers: in a table of its own, never
    compared, ranked or plotted beside them."""

    label: str  # plural, for the table's title
    why: str  # one clause, for the line under it


# Each kind is a bool field of GroupSummary. Those that are also a column of the cells table
# (APART_CELL_FLAGS) split groups: such cells never pool with a solver's. A new kind is one entry
# here (and one there when the cells carry it), then the views show it in the table kept apart.
APART: dict[str, Apart] = {
    "oracle": Apart("oracles", "they read the answer key (tpbench-bon chooses with the grader: an upper bound)"),
    "reference_conditioned": Apart("reference-conditioned runs", "a role saw the reference answer (SCALAR's "
                                                                 "paper setting)"),
    "judge_graded": Apart("judge-graded runs", "a judge model graded their answers (--judge: references in words, "
                                               "which no rule reads)"),
}
APART_CELL_FLAGS: tuple[str, ...] = ("reference_conditioned", "judge_graded")


def apart_title() -> str:
    """'Oracles and reference-conditioned runs': the table of the groups kept apart."""
    labels = [a.label for a in APART.values()]
    text = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    return text[:1].upper() + text[1:]
Axis = Literal["tokens", "input_tokens", "output_tokens", "cost_usd"]
AXES: tuple[Axis, ...] = ("tokens", "input_tokens", "output_tokens", "cost_usd")


class GroupSummary(BaseModel):
    strategy: str
    model: str
    config: str = Field(default="-", description="Budget tag, then strategy parameters when any: cells "
                                                 "run at another budget or with other --param are another group.")
    ran_as: str | None = Field(default=None, description="Kept for readers of the first release: groups are no "
                                                         "longer split by what a cap made of a run (ran_as_runs).")
    reference_conditioned: bool = Field(default=False, description="A role saw the reference: not a solver.")
    protocol: str = Field(default="physlab", description="The --protocol its strategy ran under: physlab "
                                                         "(PhysLab's defaults) or paper (its published setting).")
    oracle: bool = Field(default=False, description="The strategy reads the answer key (tpbench-bon): an upper "
                                                    "bound, never ranked beside solvers.")
    judge_graded: bool = Field(default=False, description="Its verdicts came from a judge model (--judge: answers "
                                                          "to prose references), not the rules: reported apart, "
                                                          "never ranked beside rule-graded groups.")
    ungraded: int = Field(default=0, description="Answers to prose references no judge graded: neither right nor "
                                                 "wrong, left out of accuracy.")
    grading_cost: float = Field(default=0.0, description="What the judge model's calls cost (apart from total_cost).")
    cells: int = Field(description="Finished cells.")
    failed: int = 0
    pending: int = 0
    graded: int = 0
    correct: int = 0
    crashed: int = Field(default=0, description="Cells of gradable problems that crashed: counted as unsolved.")
    cut_short: int = Field(default=0, description="Finished runs a cap stopped before their strategy finished "
                                                  "(counted as what they answered).")
    ran_as_runs: dict[str, int] = Field(default_factory=dict, description="What a cap made of those runs, by count.")
    problems: int = Field(default=0, description="Problems with a graded or crashed cell.")
    clusters: int = Field(default=0, description="Independent units of those problems (challenges).")
    accuracy: float | None = Field(default=None, description="Mean over problems of the share of its cells "
                                                             "(graded and crashed) that were correct.")
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str = Field(default="", description="How the 95% interval was made.")
    answered: int = 0
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    tokens_median: float | None = Field(default=None, description="Input + output tokens (what --budget-tokens "
                                                                  "caps), median per problem attempt.")
    tokens_p90: float | None = None
    input_median: float | None = None
    input_p90: float | None = None
    output_median: float | None = None
    output_p90: float | None = None
    cached_median: float | None = Field(default=None, description="Input tokens read from a prompt cache.")
    cost_median: float | None = None
    cost_p90: float | None = None
    wall_median: float | None = None
    wall_p90: float | None = None
    total_tokens: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_cost: float = 0.0
    role_share: dict[str, float] = Field(default_factory=dict, description="Share of tokens per role.")
    cache_read_tokens: int = Field(default=0, description="Input tokens read from the providers' prompt caches.")
    cache_write_tokens: int = Field(default=0, description="Input tokens written to them.")
    role_cached: dict[str, float] = Field(default_factory=dict, description="Per role, the share of its input "
                                                                            "tokens read from the prompt cache.")
    anytime_correct: int | None = Field(default=None, description="Cells holding a correct answer with at most "
                                                                  "the report's anytime cap spent.")
    anytime_accuracy: float | None = Field(default=None, description="Anytime accuracy at T: what the runs held "
                                                                     "with at most T tokens spent.")
    anytime_low: float | None = None
    anytime_high: float | None = None
    equal_budget_correct: int | None = Field(default=None, description="Old name of anytime_correct.")
    equal_budget_accuracy: float | None = Field(default=None, description="Old name of anytime_accuracy.")
    equal_budget_low: float | None = None
    equal_budget_high: float | None = None
    judge_checks: int = Field(default=0, description="SCALAR turns both the Judge and the grader decided.")
    judge_agreed: int = 0
    critpt_runs: int = Field(default=0, description="Repeats CritPt's server graded.")
    critpt_mean: float | None = Field(default=None, description="CritPt accuracy, mean over those runs.")
    critpt_sd: float | None = None

    @property
    def strategy_label(self) -> str:
        label = f"{self.strategy} (ran as {self.ran_as})" if self.ran_as else self.strategy
        return f"{label} (judge-graded)" if self.judge_graded else label

    @property
    def key(self) -> tuple:
        return (self.strategy, self.model, self.config, *(getattr(self, f) for f in APART_CELL_FLAGS))

    @property
    def setting(self) -> str:
        """The config as a reader is shown it: the budget and the --params, the protocol said apart."""
        return shown_config(self.config)

    @property
    def setting_label(self) -> str:
        """'max_tokens=2000, paper protocol': what besides strategy and model sets the group apart
        ('' for PhysLab's protocol with no budget or parameter)."""
        return ", ".join(x for x in (self.setting if self.setting != "-" else "",
                                     f"{self.protocol} protocol" if self.protocol != "physlab" else "") if x)

    @property
    def apart(self) -> list[str]:
        """Why the group is kept apart from the solvers (the APART kinds it is); empty for a solver."""
        return [kind for kind in APART if getattr(self, kind)]

    @property
    def solver(self) -> bool:
        return not self.apart


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
    for s in store.critpt_submissions(state="scored"):
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
    """One group's anytime accuracy at every cap: a run counts as solved at cap T when the last
    answer it held having spent at most T was correct (its final answer holds from its full spend
    on). Not what a run capped at T would have done: for that, see :class:`BudgetSweep`."""

    group: str = Field(description="group_label of the group.")
    axis: Axis
    points: list[CurvePoint]


class BudgetPoint(BaseModel):
    budget_tokens: int | None = Field(description="The --budget-tokens the cells ran at (None: no token cap).")
    group: str
    accuracy: float | None
    low: float | None = None
    high: float | None = None
    problems: int = 0
    cut_short: int = 0
    tokens_median: float | None = None


class BudgetSweep(BaseModel):
    """One strategy x model x parameters at several token budgets, each a sweep run at that budget:
    the equal-budget comparison, with the runs really capped."""

    strategy: str
    model: str
    params: str = Field(default="", description="The --param tag the cells shared (and any other budget limit), "
                                                "and the protocol when another than PhysLab's.")
    points: list[BudgetPoint]


class PairedComparison(BaseModel):
    """Group a against group b on the problems both were graded on."""

    a: str
    b: str
    problems: int
    clusters: int = 0
    accuracy_a: float
    accuracy_b: float
    difference: float = Field(description="Mean over the shared problems of accuracy_a - accuracy_b.")
    low: float | None = Field(default=None, description="95% interval of the difference (see method).")
    high: float | None = None
    a_better: int = Field(description="Problems where a solved a larger share of its repeats than b.")
    b_better: int
    p_value: float = Field(description="Exact two-sided sign test over the independent units (the exact McNemar "
                                       "test with one cell per problem).")
    p_holm: float = Field(default=1.0, description="p_value adjusted by Holm's method for every comparison of "
                                                   "the report.")
    method: str = ""
    low_adjusted: float | None = Field(default=None, description="The interval of the difference adjusted for "
                                                                 "every comparison of the report (Bonferroni: each "
                                                                 "at 1 - 0.05/adjusted_for, so all of them hold "
                                                                 "together with 95%): what the report shows.")
    high_adjusted: float | None = None
    adjusted_for: int = Field(default=1, description="The comparisons the interval and p_holm are adjusted for.")


class Report(BaseModel):
    db: str
    groups: list[GroupSummary]
    anytime_tokens: float | None = Field(default=None, description="The token cap T of the anytime-accuracy column.")
    equal_budget_tokens: float | None = Field(default=None, description="Old name of anytime_tokens.")
    curves: list[BudgetCurve] = Field(default_factory=list, description="Anytime accuracy against a cap on "
                                                                        "tokens, input, output, and cost when runs "
                                                                        "cost money.")
    budget_sweeps: list[BudgetSweep] = Field(default_factory=list, description="Accuracy at each --budget-tokens "
                                                                                "a group was swept at.")
    comparisons: list[PairedComparison] = Field(default_factory=list)
    matrix: dict[str, dict[str, list[int]]] = Field(
        default_factory=dict, description="problem id -> group label -> [correct, cells] of its repeats.")
    cells_total: int = 0
    critpt: list[CritptScore] = Field(default_factory=list, description="Scores from CritPt's grading server.")
    lost: LostSpend = Field(default_factory=LostSpend, description="What the attempts a Ray node took down with "
                                                                   "it spent (their cells ran again, counted once).")

    @property
    def solvers(self) -> list[GroupSummary]:
        return [g for g in self.groups if g.solver]

    @property
    def reference_conditioned(self) -> list[GroupSummary]:
        """The groups kept apart (oracles, reference-conditioned runs: APART), never ranked."""
        return [g for g in self.groups if not g.solver]

    def token_curves(self) -> dict[str, list[tuple[float, float]]]:
        """group label -> [(token cap, accuracy)]."""
        return {c.group: [(p.cap, p.accuracy) for p in c.points] for c in self.curves if c.axis == "tokens"}

    @computed_field(description="The token curves in the first release's shape, 'group label' -> "  # type: ignore[prop-decorator]
                                "[(token cap, accuracy)]: `bench report --json` readers rely on it.")
    @property
    def budget_curves(self) -> dict[str, list[tuple[float, float]]]:
        return self.token_curves()


def shown_config(config: str) -> str:
    """A config without its ``@protocol`` entry (the cell key keeps it; the report says the
    protocol in a column of its own): '-' when nothing else is left."""
    tag, sep, params = config.partition("|")
    kept = [item for item in params.split(",") if item and not item.startswith("@protocol=")] if sep else []
    text = "|".join([tag, ",".join(kept)]) if kept else tag
    return text or "-"


def group_label(g: GroupSummary, *, sep: str = "|") -> str:
    """'strategy|model', plus '|config' for a group run at a budget or with parameters, and
    '|paper protocol' for one run under another protocol than PhysLab's."""
    parts = [g.strategy_label, g.model] + ([g.setting] if g.setting != "-" else []) + (
        [f"{g.protocol} protocol"] if g.protocol != "physlab" else [])
    return sep.join(parts)


def _spend(row: dict, axis: str) -> float:
    if axis == "tokens":
        return float(row["input_tokens"] + row["output_tokens"])
    return float(row[axis])


def _cut_short(cell: dict) -> bool:
    return bool(cell.get("ran_as")) or str(cell.get("stop_reason") or "").startswith("budget:")


class _Graded:
    """A group's graded and crashed cells as traces per problem: (spend, correct) of each checkpoint,
    then of the final answer, on every axis (a crashed cell holds nothing)."""

    def __init__(self, graded: list[dict], crashed: list[dict], checkpoints: dict[str, list[dict]],
                 cluster_of: dict[str, str]):
        cells = graded + crashed
        self.by_problem = {pid: cs for (pid,), cs in sorted(stats.group_by(cells, "problem_id").items())}
        self.clusters = [cluster_of.get(pid, pid) for pid in self.by_problem]
        self.traces: dict[str, dict[str, list[list[tuple[float, bool]]]]] = {axis: {} for axis in AXES}
        for pid, cs in self.by_problem.items():
            for axis in AXES:
                self.traces[axis][pid] = [[] if c["state"] == "failed"
                                          else self._trace(c, checkpoints.get(c["key"], []), axis) for c in cs]

    @staticmethod
    def _trace(cell: dict, cps: list[dict], axis: str) -> list[tuple[float, bool]]:
        return [(_spend(cp, axis), cp["verdict"] == "correct") for cp in cps] + \
               [(_spend(cell, axis), cell["verdict"] == "correct")]

    def cells(self) -> list[int]:
        return [len(cs) for cs in self.by_problem.values()]

    def per_problem(self, axis: str, caps: list[float]) -> np.ndarray:
        """Accuracy per cap (rows) and problem (columns)."""
        return np.stack([stats.problem_accuracy(t, caps) for t in self.traces[axis].values()], axis=-1)

    def final(self) -> dict[str, float]:
        return {pid: sum(c["verdict"] == "correct" for c in cs) / len(cs) for pid, cs in self.by_problem.items()}

    def interval(self, values: np.ndarray) -> stats.Interval:
        return stats.accuracy_interval(values, self.cells(), self.clusters)

    def spends(self, axis: str) -> list[float]:
        return sorted({x for ts in self.traces[axis].values() for t in ts for x, _ in t})

    def correct_spends(self) -> list[float]:
        return [x for ts in self.traces["tokens"].values() for t in ts for x, ok in t if ok]


def _clusters(store: ResultsStore, problem_ids: set[str]) -> dict[str, str]:
    """problem id -> its challenge: CritPt's sub-problems share their challenge (``dataset_name``);
    every other problem is its own unit."""
    out = {}
    for pid in problem_ids:
        extra = (store.problem_public(pid) or {}).get("extra") or {}
        out[pid] = str(extra.get("dataset_name") or extra.get("challenge") or pid)
    return out


# What a report may be restricted to (the dashboard's filters): cell columns, each one value.
FILTERS = ("strategy", "model", "suite")


def _chosen(filters: dict[str, str] | None) -> dict[str, str]:
    """The filters a report knows (FILTERS), those given a value."""
    return {k: v for k, v in (filters or {}).items() if k in FILTERS and v}


def _group_summary(key: tuple, cells: list[dict], done: list[dict], graded: list[dict],
                   crashed: list[dict]) -> GroupSummary:
    """One group's counts (its accuracy, spending and roles are added by the report)."""
    strategy, model, config, *flags = key
    ran_as: dict[str, int] = {}
    for c in done:
        if c.get("ran_as"):
            ran_as[c["ran_as"]] = ran_as.get(c["ran_as"], 0) + 1
    return GroupSummary(
        strategy=strategy, model=model, config=config, **dict(zip(APART_CELL_FLAGS, flags)),
        protocol=str(cells[0].get("protocol") or "physlab"),  # one per group: the key holds it (@protocol)
        ungraded=sum(c["verdict"] == "ungraded" for c in done),
        grading_cost=sum(c.get("grading_cost_usd") or 0.0 for c in done),
        oracle=strategy in ORACLES, cells=len(done), failed=sum(c["state"] == "failed" for c in cells),
        pending=sum(c["state"] in ("pending", "running") for c in cells),
        graded=len(graded), correct=sum(c["verdict"] == "correct" for c in graded), crashed=len(crashed),
        cut_short=sum(_cut_short(c) for c in done), ran_as_runs=dict(sorted(ran_as.items())),
        answered=sum(bool(c["answer_code"] or c["answer_text"]) for c in done),
        judge_checks=sum(c.get("judge_checks") or 0 for c in done),
        judge_agreed=sum(c.get("judge_agreed") or 0 for c in done),
    )


def build_report(store: ResultsStore, *, equal_tokens: float | None = None,
                 filters: dict[str, str] | None = None) -> Report:
    """The report of the cells ``filters`` keep (every cell without): the one computation every
    view renders -- `bench report` (terminal, HTML, CSV, JSON) and the dashboard's Sweeps page --
    so one database gives one set of numbers wherever it is shown."""
    # Grouped by strategy x model x config: pooling cells run at different budgets or parameters
    # would mix two experiments in one accuracy, and count them as repeats in pass@k. A run a cap
    # cut short stays in its group: the group's accuracy is the strategy's at that budget.
    # A judge model's verdicts (--judge) are another kind of grading: a cell it graded is marked
    # judge_graded (an APART kind), so it never pools with rule-graded cells.
    rows = [{**r, "config": cell_config(r), "judge_graded": r.get("graded_by") is not None}
            for r in store.cells(filters=_chosen(filters))]
    rows = [{**r, **{f: bool(r.get(f)) for f in APART_CELL_FLAGS}} for r in rows]
    keys = ("strategy", "model", "config", *APART_CELL_FLAGS)
    by_group = stats.group_by(rows, *keys)
    group_of = {r["key"]: tuple(r[k] for k in keys) for r in rows}
    role_rows: dict[tuple, list[dict]] = {}
    cached_by_cell: dict[str, int] = {}
    for r in store.roles():
        if r["cell_key"] in group_of:
            role_rows.setdefault(group_of[r["cell_key"]], []).append(r)
            cached_by_cell[r["cell_key"]] = cached_by_cell.get(r["cell_key"], 0) + r["cache_read_tokens"]
    checkpoints: dict[str, list[dict]] = {}
    for cp in store.checkpoints():
        checkpoints.setdefault(cp["cell_key"], []).append(cp)
    cluster_of = _clusters(store, {r["problem_id"] for r in rows})
    groups: list[GroupSummary] = []
    graded_of: dict[tuple, _Graded] = {}
    for key, cells in sorted(by_group.items()):
        done = [c for c in cells if c["state"] == "done"]
        graded = [c for c in done if c["verdict"] not in (None, "ungraded")]
        crashed = [c for c in cells if c["state"] == "failed" and c["gradable"]]
        g = _group_summary(key, cells, done, graded, crashed)
        if graded or crashed:
            graded_of[key] = gr = _Graded(graded, crashed, checkpoints, cluster_of)
            _accuracy(g, gr)
        _spending(g, done, cached_by_cell)
        _roles(g, role_rows.get(key, []))
        groups.append(g)

    report = Report(db=str(store.path), groups=groups, cells_total=len(rows),
                    lost=lost_spend(store.lost_attempts(filters=_chosen(filters))))
    shown = {(g.strategy, g.model, g.config) for g in groups}
    report.critpt = [s for s in critpt_scores(store) if filters is None or (s.strategy, s.model, s.config) in shown]
    for score in report.critpt:
        for g in groups:
            if (g.strategy, g.model, g.config) == (score.strategy, score.model, score.config):
                g.critpt_runs, g.critpt_mean, g.critpt_sd = len(score.runs), score.mean, score.sd
    solvers = {g.key: graded_of[g.key] for g in report.solvers if g.key in graded_of}
    if graded_of:
        cap = equal_tokens if equal_tokens is not None else _default_cap(
            [g for g in report.solvers if g.key in solvers], solvers) or _default_cap(
            [g for g in groups if g.key in graded_of], graded_of)
        report.anytime_tokens = report.equal_budget_tokens = cap
        any_cost = any(c["cost_usd"] > 0 for c in rows if c["state"] == "done")
        for g in groups:
            held = graded_of.get(g.key)
            if held is None:
                continue
            report.curves += [_curve(g, held, axis) for axis in AXES if axis != "cost_usd" or any_cost]
            _anytime(g, held, cap)
    report.budget_sweeps = _budget_sweeps([g for g in report.solvers if g.key in solvers])
    report.comparisons = _comparisons([g for g in report.solvers if g.key in solvers], solvers, cluster_of)
    for g in groups:
        held = graded_of.get(g.key)
        for pid, cs in (held.by_problem.items() if held else ()):
            report.matrix.setdefault(pid, {})[group_label(g)] = [sum(c["verdict"] == "correct" for c in cs), len(cs)]
    report.matrix = dict(sorted(report.matrix.items()))
    return report


def _accuracy(g: GroupSummary, gr: _Graded) -> None:
    per_problem = gr.final()
    values = np.array(list(per_problem.values()))
    g.problems, g.clusters = len(per_problem), len(set(gr.clusters))
    g.accuracy = float(values.mean())
    ci = gr.interval(values)
    g.ci_low, g.ci_high, g.ci_method = ci.low, ci.high, ci.method
    counts = [(len(cs), sum(c["verdict"] == "correct" for c in cs)) for cs in gr.by_problem.values()]
    for k in range(1, min(n for n, _ in counts) + 1):
        v = stats.mean_pass_at_k(counts, k)
        if v is not None:
            g.pass_at_k[k] = v


def _spending(g: GroupSummary, done: list[dict], cached_by_cell: dict[str, int]) -> None:
    tokens = [c["input_tokens"] + c["output_tokens"] for c in done]
    inputs, outputs = [c["input_tokens"] for c in done], [c["output_tokens"] for c in done]
    costs, walls = [c["cost_usd"] for c in done], [c["wall_s"] for c in done]
    g.tokens_median, g.tokens_p90 = stats.quantile(tokens, 0.5), stats.quantile(tokens, 0.9)
    g.input_median, g.input_p90 = stats.quantile(inputs, 0.5), stats.quantile(inputs, 0.9)
    g.output_median, g.output_p90 = stats.quantile(outputs, 0.5), stats.quantile(outputs, 0.9)
    g.cached_median = stats.quantile([cached_by_cell.get(c["key"], 0) for c in done], 0.5)
    g.cost_median, g.cost_p90 = stats.quantile(costs, 0.5), stats.quantile(costs, 0.9)
    g.wall_median, g.wall_p90 = stats.quantile(walls, 0.5), stats.quantile(walls, 0.9)
    g.total_tokens, g.total_cost = sum(tokens), sum(costs)
    g.total_input_tokens, g.total_output_tokens = sum(inputs), sum(outputs)


def _roles(g: GroupSummary, roles: list[dict]) -> None:
    role_tokens: dict[str, int] = {}
    role_input: dict[str, int] = {}
    role_read: dict[str, int] = {}
    for r in roles:
        role_tokens[r["role"]] = role_tokens.get(r["role"], 0) + r["input_tokens"] + r["output_tokens"]
        role_input[r["role"]] = role_input.get(r["role"], 0) + r["input_tokens"]
        role_read[r["role"]] = role_read.get(r["role"], 0) + r["cache_read_tokens"]
        g.cache_read_tokens += r["cache_read_tokens"]
        g.cache_write_tokens += r["cache_write_tokens"]
    total_role = sum(role_tokens.values())
    if total_role:
        g.role_share = {k: v / total_role for k, v in sorted(role_tokens.items())}
    if g.cache_read_tokens:
        g.role_cached = {k: role_read[k] / v for k, v in sorted(role_input.items()) if v}


def _default_cap(groups: list[GroupSummary], graded: dict[tuple, _Graded]) -> float | None:
    """The anytime column's default cap: the 90th percentile of tokens per problem of the cheapest
    group that solved anything, raised if need be to the cheapest correct answer any of these
    groups reached, so the cap never sits below every correct cell."""
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


def _curve(g: GroupSummary, gr: _Graded, axis: Axis) -> BudgetCurve:
    caps = _thin(gr.spends(axis), CURVE_POINTS)
    acc = gr.per_problem(axis, caps) if caps else np.zeros((0, len(gr.by_problem)))
    points = []
    for i, cap in enumerate(caps):
        ci = gr.interval(acc[i])
        points.append(CurvePoint(cap=cap, accuracy=float(acc[i].mean()), low=ci.low, high=ci.high))
    return BudgetCurve(group=group_label(g), axis=axis, points=points)


def _anytime(g: GroupSummary, gr: _Graded, cap: float | None) -> None:
    if cap is None:
        return
    acc = gr.per_problem("tokens", [cap])[0]
    g.anytime_correct = sum(stats.solved_within(t, cap) for ts in gr.traces["tokens"].values() for t in ts)
    g.anytime_accuracy = float(acc.mean())
    ci = gr.interval(acc)
    g.anytime_low, g.anytime_high = ci.low, ci.high
    g.equal_budget_correct, g.equal_budget_accuracy = g.anytime_correct, g.anytime_accuracy
    g.equal_budget_low, g.equal_budget_high = g.anytime_low, g.anytime_high


def budget_parts(config: str) -> tuple[int | None, str]:
    """(the max_tokens of a config's budget tag, the rest of the config) for grouping sweeps run at
    several --budget-tokens."""
    tag, _, params = config.partition("|")
    items = [] if tag == "-" else tag.split(",")
    tokens = next((int(float(i.split("=", 1)[1])) for i in items if i.startswith("max_tokens=")), None)
    rest = ",".join(i for i in items if not i.startswith("max_tokens="))
    return tokens, "|".join(x for x in (rest, params) if x)


def _budget_sweeps(groups: list[GroupSummary]) -> list[BudgetSweep]:
    by: dict[tuple[str, str, str, str], list[tuple[int | None, GroupSummary]]] = {}
    for g in groups:
        tokens, rest = budget_parts(g.setting)
        by.setdefault((g.strategy, g.model, rest, g.protocol), []).append((tokens, g))
    out = []
    for (strategy, model, rest, protocol), gs in sorted(by.items()):
        if len({t for t, _ in gs}) < 2:
            continue
        gs.sort(key=lambda tg: math.inf if tg[0] is None else tg[0])
        shown = ", ".join(x for x in (rest, f"{protocol} protocol" if protocol != "physlab" else "") if x)
        out.append(BudgetSweep(strategy=strategy, model=model, params=shown, points=[
            BudgetPoint(budget_tokens=t, group=group_label(g), accuracy=g.accuracy, low=g.ci_low, high=g.ci_high,
                        problems=g.problems, cut_short=g.cut_short, tokens_median=g.tokens_median)
            for t, g in gs]))
    return out


def _comparisons(groups: list[GroupSummary], graded: dict[tuple, _Graded],
                 cluster_of: dict[str, str]) -> list[PairedComparison]:
    """Every two solver groups that differ in one thing, strategy or model (same config), with
    Holm's adjustment of the p-values over all of them and Bonferroni's of the intervals (each at
    1 - 0.05/m for m comparisons; Holm has no interval of its own), so the interval shown and the
    p beside it answer the same question: does this difference stand among all the report tests?"""
    def pair(a: GroupSummary, b: GroupSummary, confidence: float = stats.CONFIDENCE) -> stats.Paired | None:
        ga, gb = graded[a.key], graded[b.key]
        return stats.paired_comparison(ga.final(), gb.final(), cells_a={p: len(cs) for p, cs in ga.by_problem.items()},
                                       cells_b={p: len(cs) for p, cs in gb.by_problem.items()}, clusters=cluster_of,
                                       confidence=confidence)

    out: list[PairedComparison] = []
    pairs: list[tuple[GroupSummary, GroupSummary]] = []
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            same_model = (a.model, a.config) == (b.model, b.config)
            same_strategy = (a.strategy_label, a.config) == (b.strategy_label, b.config)
            # one strategy under two protocols: what PhysLab's defaults change against the paper's
            other_protocol = (a.strategy_label, a.model, a.setting) == (b.strategy_label, b.model, b.setting) \
                and a.protocol != b.protocol
            if not (same_model or same_strategy or other_protocol):
                continue
            res = pair(a, b)
            if res is None:
                continue
            pairs.append((a, b))
            out.append(PairedComparison(a=group_label(a), b=group_label(b), problems=res.problems,
                                        clusters=res.clusters, accuracy_a=res.mean_a, accuracy_b=res.mean_b,
                                        difference=res.difference, low=res.low, high=res.high,
                                        a_better=res.a_better, b_better=res.b_better, p_value=res.p_value,
                                        method=res.method))
    family = 1 - (1 - stats.CONFIDENCE) / max(len(out), 1)
    for c, adjusted, (a, b) in zip(out, stats.holm([c.p_value for c in out]), pairs):
        c.p_holm, c.adjusted_for = adjusted, len(out)
        wide = pair(a, b, family) if len(out) > 1 else None
        c.low_adjusted, c.high_adjusted = (wide.low, wide.high) if wide is not None else (c.low, c.high)
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
            "equal_budget_accuracy": fmt(g.anytime_accuracy, ".3f"),  # the first release's name: anytime accuracy
            "role_token_share": "; ".join(f"{r}={s:.0%}" for r, s in g.role_share.items()),
            "config": g.config,  # before the columns added later, so the ones before it keep their places
        })
        if report.critpt:
            row.update({"critpt_runs": str(g.critpt_runs), "critpt_accuracy_mean": fmt(g.critpt_mean, ".4f"),
                        "critpt_accuracy_sd": fmt(g.critpt_sd, ".4f")})
        row.update({
            "problems": str(g.problems), "ci_method": g.ci_method,
            "equal_budget_ci95_low": fmt(g.anytime_low, ".3f"),
            "equal_budget_ci95_high": fmt(g.anytime_high, ".3f"),
            "ran_as": "; ".join(f"{k} ({n})" for k, n in g.ran_as_runs.items()),
            "reference_conditioned": "yes" if g.reference_conditioned else "",
            "judge_grader_agreement": f"{g.judge_agreed}/{g.judge_checks}" if g.judge_checks else "",
            "cache_read_tokens": str(g.cache_read_tokens), "cache_write_tokens": str(g.cache_write_tokens),
            "role_cached_input": "; ".join(f"{r}={s:.0%}" for r, s in g.role_cached.items()),
            "crashed": str(g.crashed), "cut_short": str(g.cut_short), "clusters": str(g.clusters),
            "oracle": "yes" if g.oracle else "",
            "judge_graded": "yes" if g.judge_graded else "", "ungraded": str(g.ungraded),
            "grading_cost_usd": fmt(g.grading_cost, ".4g") if g.judge_graded else "",
            "input_tokens_median": fmt(g.input_median, ".0f"), "output_tokens_median": fmt(g.output_median, ".0f"),
            "cached_tokens_median": fmt(g.cached_median, ".0f"),
            f"anytime_accuracy_at_{fmt(report.anytime_tokens, '.0f') or 'T'}_tokens": fmt(g.anytime_accuracy, ".3f"),
            "protocol": g.protocol,
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
        if g.graded or g.crashed:  # oracles and reference-conditioned groups in tables of their own
            by_mc.setdefault((not g.solver, g.model, g.config), []).append(g)
    for (apart, model, _), gs in sorted(by_mc.items()):
        labels = [group_label(g) for g in gs]
        config = gs[0].setting_label
        rows = []
        for pid, results in report.matrix.items():
            cells = [results.get(lb) for lb in labels]
            if any(cells):
                rows.append([pid] + ["" if c is None else f"{c[0]}/{c[1]}" for c in cells])
        title = model + (f" ({config})" if config else "") + (
            f", {apart_title().lower()}" if apart else "")
        out.append((title, [g.strategy_label for g in gs], rows))
    return out
