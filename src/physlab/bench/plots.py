"""Report plots (matplotlib, Agg backend, PNG files)."""

from __future__ import annotations

import base64
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from physlab.bench.report import Report, group_label  # noqa: E402


def _label(g) -> str:
    return group_label(g, sep=" × ")


def accuracy_vs_cost(report: Report, path: Path) -> Path | None:
    groups = [g for g in report.groups if g.accuracy is not None]
    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(6, 4.5))
    use_cost = any(g.cost_median for g in groups)
    for g in groups:
        x = (g.cost_median or 0.0) if use_cost else (g.tokens_median or 0.0)
        err = [[g.accuracy - g.ci_low], [g.ci_high - g.accuracy]]
        ax.errorbar([x], [g.accuracy], yerr=err, fmt="o", capsize=4, label=_label(g))
    ax.set_xlabel("median cost per problem (USD)" if use_cost else "median tokens per problem")
    ax.set_ylabel("accuracy (Wilson 95%)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Accuracy vs cost")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path


def equal_budget(report: Report, path: Path) -> Path | None:
    if not report.budget_curves:
        return None
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, pts in sorted(report.budget_curves.items()):
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        ax.step(xs, ys, where="post", label=name.replace("|", " × "))
    if report.equal_budget_tokens is not None:
        ax.axvline(report.equal_budget_tokens, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("token cap per problem")
    ax.set_ylabel("accuracy within cap")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Equal budget")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path


def role_share(report: Report, path: Path) -> Path | None:
    groups = [g for g in report.groups if g.role_share]
    if not groups:
        return None
    roles = sorted({r for g in groups for r in g.role_share})
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(groups) + 1.5))
    left = [0.0] * len(groups)
    for role in roles:
        vals = [g.role_share.get(role, 0.0) for g in groups]
        ax.barh(range(len(groups)), vals, left=left, label=role)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(groups)), [_label(g) for g in groups], fontsize=7)
    ax.set_xlabel("share of tokens")
    ax.set_xlim(0, 1)
    ax.set_title("Tokens per role")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path


def write_all(report: Report, out_dir: str | Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, fn in (("accuracy_vs_cost", accuracy_vs_cost), ("equal_budget", equal_budget),
                     ("role_share", role_share)):
        p = fn(report, out_dir / f"{name}.png")
        if p is not None:
            made[name] = p
    return made


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")
