"""TPBench stage 1 (seed 002, §3.3-3.5): generate N candidates concurrently, evaluate each filled
template at M test points with the grader's reference-free evaluator (in the sandbox), and group
functionally identical candidates; plus the Attempt built from a chosen group."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from physlab.strategies.base import Attempt, AttemptStatus
from physlab.strategies.tpbench_common import (
    answer_requirements, ask, budget_reason, concurrency, error_text, extract_code,
    final_answer_line, finish, gather_bounded, model_settings, param_int, render,
)

@dataclass
class Candidate:
    index: int
    text: str | None = None
    code: str | None = None
    error: str | None = None
    outputs: list[Any] | None = None  # the output vector at the M test points
    eval_error: str | None = None
    group: int | None = None

    def summary(self) -> dict[str, Any]:
        return {"index": self.index, "group": self.group, "code": self.code,
                "error": self.error, "eval_error": self.eval_error,
                "outputs": [repr(o) for o in self.outputs] if self.outputs is not None else None}


@dataclass
class Pool:
    candidates: list[Candidate]
    groups: list[list[int]] = field(default_factory=list)  # indices into candidates, by size
    budget_hit: BaseException | None = None

    def representative(self, group: int) -> Candidate:
        return self.candidates[self.groups[group][0]]


async def generate_candidates(ctx: Any, strategy: str, n: int, *, role: str = "generator"
                              ) -> tuple[list[Candidate], BaseException | None]:
    """N independent solutions with the default generation prompt (run concurrently)."""
    prompt = render("tpbench_generate", problem=ctx.problem.statement.strip(),
                    requirements=answer_requirements(ctx.problem))
    settings = model_settings(ctx, strategy)

    def job() -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            text, _ = await ask(ctx, role, prompt, settings=settings)
            return text
        return run

    outcomes = await gather_bounded([job() for _ in range(n)], concurrency(ctx, strategy))
    candidates: list[Candidate] = []
    budget_hit = None
    for i, out in enumerate(outcomes):
        if out.ok:
            candidates.append(Candidate(index=i, text=out.value, code=extract_code(out.value)))
        else:
            if out.budget:
                budget_hit = budget_hit or out.error
            candidates.append(Candidate(index=i, error=error_text(out.error)))
    ctx.events("candidates", strategy=strategy, generated=sum(c.text is not None for c in candidates))
    return candidates, budget_hit


def _as_number(value: Any) -> complex | None:
    try:
        return complex(value)
    except (TypeError, ValueError):
        pass
    try:  # SymPy numbers and numpy scalars
        return complex(getattr(value, "evalf", lambda: value)())
    except (TypeError, ValueError):
        return None


def same_outputs(a: Sequence[Any], b: Sequence[Any], rtol: float = 1e-8, atol: float = 1e-12
                 ) -> bool:
    """Output vectors are the same function's values: equal up to floating-point noise.

    The paper calls candidates equivalent when their output tuples are identical; we compare with
    a tight tolerance instead because an expanded and a factored form of one expression can differ
    in the last bits when evaluated in floating point.
    """
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        nx, ny = _as_number(x), _as_number(y)
        if nx is None or ny is None:
            if repr(x) != repr(y):
                return False
            continue
        if any(math.isnan(v) for v in (nx.real, nx.imag, ny.real, ny.imag)):
            if not (math.isnan(abs(nx)) and math.isnan(abs(ny))):
                return False
            continue
        if abs(nx - ny) > atol + rtol * max(abs(nx), abs(ny)):
            return False
    return True


def _outputs_of(result: Any) -> tuple[list[Any] | None, str | None]:
    """Normalise what the grader's evaluate_at_points returns to (values, error)."""
    if result is None:
        return None, "no result"
    if isinstance(result, (list, tuple)):
        return list(result), None
    error = getattr(result, "error", None)
    for attr in ("outputs", "values", "vector"):
        if hasattr(result, attr):
            values = getattr(result, attr)
            return (list(values) if values is not None else None), error
    if isinstance(result, dict):
        values = result.get("outputs", result.get("values"))
        return (list(values) if values is not None else None), result.get("error")
    return None, f"unexpected evaluation result {type(result).__name__}"


async def evaluate_candidate(ctx: Any, code: str, m: int, seed: int) -> tuple[list[Any] | None, str | None]:
    """The candidate's output vector at M test points (run in the sandbox by the grader)."""
    evaluator = getattr(ctx.equivalence, "evaluate_at_points", None)
    if evaluator is None:
        raise RuntimeError("the run context's equivalence checker cannot evaluate at points")
    try:
        result = await evaluator(code, n_points=m, seed=seed)
    except Exception as exc:  # noqa: BLE001 - a candidate whose code fails is just invalid
        return None, error_text(exc)
    return _outputs_of(result)


async def distinct_pool(ctx: Any, strategy: str, candidates: list[Candidate], m: int,
                        budget_hit: BaseException | None = None) -> Pool:
    """Stage 1: group candidates whose filled templates give the same outputs at M points.

    Candidates that failed to generate, have no code, or whose code does not evaluate are left
    out of every group. Groups are ordered by size (largest first), ties by first index.
    """
    if not ctx.problem.has_template:
        return _text_pool(ctx, strategy, candidates, budget_hit)
    usable = [c for c in candidates if c.code]
    limit = concurrency(ctx, strategy)
    sem = asyncio.Semaphore(limit)

    results: dict[str, tuple[list[Any] | None, str | None]] = {}

    async def evaluate(code: str) -> None:
        async with sem:
            results[code] = await evaluate_candidate(ctx, code, m, ctx.seed)

    # identical code is evaluated once
    await asyncio.gather(*(evaluate(code) for code in dict.fromkeys(c.code or "" for c in usable)))
    for c in usable:
        c.outputs, c.eval_error = results[c.code or ""]
    groups: list[list[int]] = []
    reps: list[list[Any]] = []
    for pos, c in enumerate(candidates):
        if c.outputs is None:
            continue
        for g, rep in enumerate(reps):
            if same_outputs(c.outputs, rep):
                groups[g].append(pos)
                break
        else:
            reps.append(c.outputs)
            groups.append([pos])
    groups.sort(key=lambda g: (-len(g), g[0]))
    for g, members in enumerate(groups):
        for pos in members:
            candidates[pos].group = g
    ctx.events("distinct", strategy=strategy, groups=[len(g) for g in groups])
    return Pool(candidates=candidates, groups=groups, budget_hit=budget_hit)


def _text_pool(ctx: Any, strategy: str, candidates: list[Candidate],
               budget_hit: BaseException | None) -> Pool:
    """Open question (no template, nothing to evaluate): candidates whose "Final Answer:" lines
    agree after normalising case and whitespace form one class. Much weaker than evaluating a
    function, but it is all an open question offers."""
    keyed: dict[str, list[int]] = {}
    for pos, c in enumerate(candidates):
        if c.text is None:
            continue
        key = " ".join((final_answer_line(c.text) or c.text).split()).lower()
        keyed.setdefault(key, []).append(pos)
    groups = sorted(keyed.values(), key=lambda g: (-len(g), g[0]))
    for g, members in enumerate(groups):
        for pos in members:
            candidates[pos].group = g
    ctx.events("distinct", strategy=strategy, groups=[len(g) for g in groups])
    return Pool(candidates=candidates, groups=groups, budget_hit=budget_hit)


def pool_details(pool: Pool, m: int) -> dict[str, Any]:
    return {
        "n_generated": sum(c.text is not None for c in pool.candidates),
        "n_requested": len(pool.candidates),
        "n_points": m,
        "group_sizes": [len(g) for g in pool.groups],
        "candidates": [c.summary() for c in pool.candidates],
    }


# ----------------------------------------------------------------- TPBench shared run shape

TPBENCH_PARAMS = ("n_samples", "n_points")


def tpbench_sizes(ctx: Any, strategy: str) -> tuple[int, int]:
    """N candidates (default 50) and M test points (default 5), as in the paper."""
    n = param_int(ctx, strategy, "n_samples", 50, minimum=1)
    m = param_int(ctx, strategy, "n_points", 5, minimum=1, maximum=100)
    return n, m


async def build_pool(ctx: Any, strategy: str, n: int, m: int) -> Pool:
    candidates, budget_hit = await generate_candidates(ctx, strategy, n)
    return await distinct_pool(ctx, strategy, candidates, m, budget_hit)


def attempt_from_group(ctx: Any, strategy: str, pool: Pool, group: int | None, *,
                       started: float, reason: str, details: dict[str, Any],
                       partial: bool = False) -> Attempt:
    if group is None:
        status: AttemptStatus = "no_answer"
        reason = budget_reason(pool.budget_hit) if pool.budget_hit is not None else reason
        return finish(ctx, strategy, status, reason, started=started, details=details)
    rep = pool.representative(group)
    details = {**details, "chosen_group": group, "chosen_candidate": rep.index}
    partial = partial or pool.budget_hit is not None
    status = "partially_complete" if partial else "complete"
    if partial and pool.budget_hit is not None:
        reason = budget_reason(pool.budget_hit)
    return finish(ctx, strategy, status, reason, started=started, answer_text=rep.text,
                  answer_code=rep.code, details=details)


