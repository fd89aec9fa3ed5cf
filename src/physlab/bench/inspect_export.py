"""Sweep results and single runs as Inspect AI eval logs (``physlab bench export-inspect``).

Inspect's Task / Solver / Scorer are PhysLab's problem set / strategy / grader, so the mapping is
one to one: one eval log per (strategy, model, budget and parameters) group, one sample per cell
(its repeat is the sample's epoch), the sample's messages and model events from the cell's
calls.jsonl, its score from PhysLab's verdict (``C`` correct, ``I`` incorrect or invalid, none when ungraded, the
verdict and its reason kept beside), its token and cost usage per model and per role. Logs are
written with inspect_ai's own types and ``write_eval_log`` (optional: ``pip install
'physlab[inspect]'``), so ``inspect view`` and ``inspect_ai.log.read_eval_log`` read them.

The reference answer is not in the results database; a sample's target is empty unless
``with_reference`` looks the problem up in its suite (a log then holds the answer key: do not
share it where the key must stay private).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from physlab.errors import UserError
from physlab.llm.usage import CallRecord
from physlab.version import __version__

INSTALL_HINT = "pip install 'physlab[inspect]'"
SCORER = "physlab_grader"


@dataclass
class CellRecord:
    """One cell (or one run) in the terms the export needs, from the database or a run directory."""

    problem_id: str
    suite: str
    strategy: str
    model: str
    repeat: int
    config: str
    problem: dict[str, Any]
    status: str | None
    stop_reason: str | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    answer_code: str | None = None
    answer_text: str | None = None
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    wall_s: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    workspace: str | None = None
    error: str | None = None
    calls: list[CallRecord] = field(default_factory=list)
    calls_note: str | None = None

    @property
    def sample_id(self) -> str:
        return f"{self.suite}/{self.problem_id}" if self.suite else self.problem_id


def _calls(workspace: str | None, fallback: Iterable[dict[str, Any]] = ()) -> tuple[list[CallRecord], str | None]:
    """The cell's calls with their messages from its calls.jsonl; without the file, the database's
    per-call rows (tokens and timings, no messages) and a note saying why."""
    from physlab.run.summary import read_calls

    path = Path(workspace) / "calls.jsonl" if workspace else None
    if path is not None and path.is_file():
        try:
            return read_calls(path.parent, bodies=True), None
        except (OSError, ValueError, UserError) as exc:
            note = f"messages unavailable: {path} does not read ({exc})"
    else:
        note = f"messages unavailable: {path or 'the cell has no workspace'} not found"
    recs = [CallRecord(**{k: v for k, v in row.items() if k in CallRecord.model_fields})
            for row in fallback]
    for i, rec in enumerate(recs):
        rec.seq = i
    return recs, note


def records_from_db(db: Path, *, strategy: str | None = None, model: str | None = None) -> list[CellRecord]:
    """Finished (done or failed) cells of a results database."""
    from physlab.bench.store import ResultsStore, cell_config

    store = ResultsStore(db, create=False)
    try:
        chosen = {column: value for column, value in (("strategy", strategy), ("model", model)) if value is not None}
        out = []
        roles: dict[str, dict[str, dict[str, Any]]] = {}
        of_cell = ("cell_key", "role", "key", "suite", "problem_id", "repeat", "strategy", "model")  # the join's
        for r in store.roles(done=False):
            roles.setdefault(r["cell_key"], {})[r["role"]] = {k: v for k, v in r.items() if k not in of_cell}
        for row in store.cells(state=("done", "failed"), filters=chosen):
            calls, note = _calls(row["workspace"], store.iter_calls(row["key"]))
            out.append(CellRecord(
                problem_id=row["problem_id"], suite=row["suite"], strategy=row["strategy"], model=row["model"],
                repeat=row["repeat"], config=cell_config(row), problem=store.problem_public(row["problem_id"]) or {},
                status=row["status"] if row["state"] == "done" else "error", stop_reason=row["stop_reason"],
                verdict=row["verdict"], verdict_reason=row["verdict_reason"], answer_code=row["answer_code"],
                answer_text=row["answer_text"], roles=roles.get(row["key"], {}), wall_s=row["wall_s"] or 0.0,
                started_at=row["started_at"], finished_at=row["finished_at"], workspace=row["workspace"],
                error=row["error"], calls=calls, calls_note=note))
        return out
    finally:
        store.close()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _timestamp(text: Any) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None


def record_from_run(run: Path) -> CellRecord:
    """One run directory (``physlab solve``'s workspace, or a sweep cell's), read the way every
    reader reads a run (:func:`physlab.run.record.read_record`: a damaged record is one line)."""
    from physlab.run.record import read_record

    m = read_record(run, answer=True)
    if m is None:
        raise UserError("not a finished run: no metrics.json (export a run after it ends)", path=run, field="--run")
    statement = _read(run / "PROBLEM.md") or ""
    calls, note = _calls(str(run))
    return CellRecord(
        problem_id=m.problem_id or run.name, suite="", strategy=m.strategy or "?", model=m.model or "?", repeat=0,
        config=json.dumps(m.budget, sort_keys=True), problem={"id": m.problem_id or None, "statement": statement},
        status=m.status, stop_reason=m.stop_reason, verdict=m.verdict.verdict if m.verdict else None,
        verdict_reason=m.verdict.reason if m.verdict else None, answer_code=m.answer_code,
        answer_text=m.answer_text, roles={r: u.model_dump() for r, u in m.per_role.items()}, wall_s=m.wall_s,
        started_at=_timestamp(m.started_at), finished_at=_timestamp(m.finished_at), workspace=str(run),
        error=m.error, calls=calls, calls_note=note)


def _iso(ts: float | None) -> str | None:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat() if ts else None


def _input(problem: dict[str, Any]) -> str:
    text = str(problem.get("statement") or "")
    template = problem.get("answer_template")
    return f"{text}\n\n```python\n{template.rstrip()}\n```" if template else text


def _reference(rec: CellRecord) -> str:
    from physlab.problems import resolve_problem

    try:
        problem = resolve_problem(rec.sample_id)
    except UserError:
        return ""
    return problem.reference or ""


def _sample(rec: CellRecord, epoch: int, *, with_reference: bool):
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatMessageAssistant, ModelOutput
    from inspect_ai.scorer import Score

    from physlab.bench.inspect_messages import transcript

    messages, events = transcript(rec.calls)
    answer = rec.answer_code or rec.answer_text or ""
    output = (ModelOutput.from_message(ChatMessageAssistant(content=answer, model=rec.model, source="generate"))
              if answer else ModelOutput(model=rec.model))
    scores = None
    if rec.verdict and rec.verdict != "ungraded":  # an ungraded answer (prose reference) has no score, only metadata
        scores = {SCORER: Score(value="C" if rec.verdict == "correct" else "I", answer=answer or None,
                                explanation=rec.verdict_reason, metadata={"verdict": rec.verdict})}
    usage = _usage(rec.roles)
    metadata = {k: v for k, v in (
        ("strategy", rec.strategy), ("status", rec.status), ("stop_reason", rec.stop_reason),
        ("verdict", rec.verdict), ("verdict_reason", rec.verdict_reason), ("workspace", rec.workspace),
        ("config", rec.config), ("cost_usd", round(sum(float(r.get("cost_usd") or 0) for r in rec.roles.values()), 6)),
        ("answer_template", rec.problem.get("answer_template")), ("calls", len(rec.calls)),
        ("messages_note", rec.calls_note)) if v is not None}
    error = EvalError(message=rec.error, traceback="", traceback_ansi="") if rec.status == "error" and rec.error else None
    return EvalSample(
        id=rec.sample_id, epoch=epoch, input=_input(rec.problem),
        target=_reference(rec) if with_reference else "", messages=messages, output=output, scores=scores,
        metadata=metadata, events=events, model_usage={rec.model: _total(usage.values())} if usage else {},
        role_usage=usage, total_time=rec.wall_s or None, working_time=rec.wall_s or None,
        started_at=_iso(rec.started_at), completed_at=_iso(rec.finished_at), error=error)


def _usage(roles: dict[str, dict[str, Any]]):
    from inspect_ai.model import ModelUsage

    return {role: ModelUsage(input_tokens=int(u.get("input_tokens") or 0), output_tokens=int(u.get("output_tokens") or 0),
                             total_tokens=int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0),
                             total_cost=float(u.get("cost_usd") or 0.0) or None)
            for role, u in roles.items()}


def _total(usages: Iterable[Any]):
    from inspect_ai.model import ModelUsage

    total = ModelUsage()
    for u in usages:
        total = total + u
    return total


def _metric(metric: Any, scored: list[Any]) -> float:
    """An Inspect metric's value over the scored samples (its Metric type is a union of the old and
    the new call signature, which a type checker cannot call)."""
    return float(metric(scored))


def _log(group: list[CellRecord], *, source: str, with_reference: bool):
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalMetric,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.scorer import SampleScore, accuracy, stderr

    first = group[0]
    epochs: dict[str, int] = {}
    samples = []
    for rec in sorted(group, key=lambda r: (r.sample_id, r.repeat)):
        epochs[rec.sample_id] = epochs.get(rec.sample_id, 0) + 1
        samples.append(_sample(rec, epochs[rec.sample_id], with_reference=with_reference))
    scored = [SampleScore(score=s.scores[SCORER], sample_id=s.id) for s in samples if s.scores]
    scores = []
    if scored:
        metrics = {"accuracy": EvalMetric(name="accuracy", value=_metric(accuracy(), scored)),
                   "stderr": EvalMetric(name="stderr", value=_metric(stderr(), scored))}
        scores = [EvalScore(name=SCORER, scorer=SCORER, scored_samples=len(scored),
                            unscored_samples=len(samples) - len(scored), metrics=metrics)]
    suites = sorted({r.suite for r in group if r.suite})
    task = f"physlab/{'+'.join(suites) or 'runs'}"
    ident = hashlib.sha256(json.dumps([source, first.strategy, first.model, first.config]).encode()).hexdigest()[:22]
    started = min((r.started_at for r in group if r.started_at), default=None)
    finished = max((r.finished_at for r in group if r.finished_at), default=None)
    usage = _usage({})
    for rec in group:
        for role, u in _usage(rec.roles).items():
            usage[role] = usage[role] + u if role in usage else u
    failed = [r for r in group if r.status == "error"]
    sample_ids = list(dict.fromkeys(s.id for s in samples))
    return EvalLog(
        status="error" if failed else "success",
        eval=EvalSpec(
            created=_iso(started) or dt.datetime.now(dt.UTC).isoformat(), task=task, task_id=ident,
            run_id=ident, eval_id=ident, solver=first.strategy, model=first.model,
            dataset=EvalDataset(name="+".join(suites) or None, location=source, samples=len(sample_ids),
                                sample_ids=sample_ids),
            config=EvalConfig(epochs=max(epochs.values())), packages={"physlab": __version__},
            metadata={"physlab_source": source, "physlab_config": first.config}),
        plan=EvalPlan(name=first.strategy, steps=[EvalPlanStep(solver=first.strategy, params={"config": first.config})]),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples) - len(failed), scores=scores),
        stats=EvalStats(started_at=_iso(started) or "", completed_at=_iso(finished) or "",
                        model_usage={first.model: _total(usage.values())} if usage else {}, role_usage=usage),
        error=EvalError(message=f"{len(failed)} of {len(samples)} cells failed", traceback="", traceback_ansi="")
        if failed else None,
        samples=samples)


def _filename(log) -> str:
    """Inspect's own pattern, ``<created>_<task>_<id>.eval`` (its viewer reads the task and the id
    back from the name, so neither may hold an underscore); the task part also names the
    strategy and model, one file per group."""
    created = re.sub(r"[^0-9T]", "-", log.eval.created[:19])
    name = re.sub(r"[^A-Za-z0-9]+", "-", f"{log.eval.task}-{log.eval.solver}-{log.eval.model}").strip("-")
    return f"{created}_{name}_{log.eval.task_id}.eval"


def export(records: list[CellRecord], out: Path, *, source: str, with_reference: bool = False) -> list[Path]:
    """Write one Inspect eval log per (strategy, model, config) group into ``out``; returns the files."""
    try:
        from inspect_ai.log import write_eval_log
    except ImportError:
        raise UserError(f"the Inspect export needs inspect_ai: {INSTALL_HINT}") from None
    groups: dict[tuple[str, str, str], list[CellRecord]] = {}
    for rec in records:
        groups.setdefault((rec.strategy, rec.model, rec.config), []).append(rec)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for key in sorted(groups):
        log = _log(groups[key], source=source, with_reference=with_reference)
        path = out / _filename(log)
        write_eval_log(log, str(path))
        written.append(path)
    return written


def export_command(out: Path, *, db: Path, runs: list[Path] | None, strategy: str | None, model: str | None,
                   with_reference: bool) -> tuple[list[Path], int]:
    """``physlab bench export-inspect``: the runs given, else the database's finished cells.
    Returns (files written, samples)."""
    if out.exists() and not out.is_dir():
        raise UserError("is a file; expected a directory for the logs", path=out, field="--out")
    if runs:
        for run in runs:
            if not run.is_dir():
                raise UserError("expected a run directory", path=run, field="--run")
        records, source = [record_from_run(run) for run in runs], "runs"
    else:
        records, source = records_from_db(db, strategy=strategy, model=model), str(db.resolve())
    if not records:
        raise UserError("no finished cells to export" + (f" for {strategy or ''} {model or ''}".rstrip()
                        if strategy or model else ""), path=db)
    try:
        return export(records, out, source=source, with_reference=with_reference), len(records)
    except OSError as exc:
        raise UserError(f"cannot write ({exc.strerror or exc})", path=exc.filename or out, field="--out") from None
