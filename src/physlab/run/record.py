"""A run's record: what metrics.json holds (:class:`RunRecord`), what run.json holds (:class:`RunStart`:
the options and problem a session started with), and the one reader of both.

metrics.json is written once a session ends (whatever ended it); run.json when a session starts,
before any model is asked. Both are versioned (``record_version``) and only ever gain fields: an
older record reads with the defaults, a newer one's fields are kept as they are.

One error policy for every reader (`runs list/show`, the dashboard, the sweep, the exports, a
resume): a file that is missing is None; a file that is there but cannot be read -- not JSON, or a
field of the wrong kind -- is :class:`DamagedRun`, a UserError naming the file and the fields (one
line, exit 2). A listing of many runs shows such a run as ``damaged`` with that line and goes on
(:mod:`physlab.run.summary`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator, model_validator

from physlab.errors import UserError
from physlab.grading.verdict import Verdict
from physlab.llm.usage import Budget, Usage
from physlab.run.attempt import AttemptStatus
from physlab.run.checkpoints import Checkpoint
from physlab.run.files import METRICS, OPTIONS, read_bytes, read_text, write_atomic
from physlab.run.options import RunOptions
from physlab.run.seal import is_sealed, sealed_json

RECORD_VERSION = 1


class DamagedRun(UserError):
    """A run file that is there but cannot be read: one line naming the file and its fields."""


class UsageTotals(BaseModel):
    """Calls, tokens, cost and request time: a run's, or one role's (metrics.json's ``totals`` and
    ``per_role``)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def usage(self) -> Usage:
        return Usage(calls=self.calls, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                     cost_usd=self.cost_usd, wall_s=self.latency_s, cache_read_tokens=self.cache_read_tokens,
                     cache_write_tokens=self.cache_write_tokens)


class Server(BaseModel):
    """Where one model's requests went, and with which key variable (its name; None: no key)."""

    api_base: str | None = Field(default=None, description="None: the provider's own endpoint.")
    key_env: str | None = None


class FailedResume(BaseModel):
    """A resume of a run that had its answer, which ended without one: said beside the answer it
    did not overwrite."""

    status: str
    stop_reason: str = ""
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


class RunStart(BaseModel):
    """run.json: the session that started last -- its options, problem and servers. A resume reads
    the options from it; the run's status compares it with metrics.json (did that session end?)."""

    model_config = ConfigDict(extra="allow")

    record_version: int = RECORD_VERSION
    started_at: str
    problem_id: str
    problem_spec: str | None = Field(default=None, description="Where the problem was loaded from, as "
                                                               "`physlab solve` takes it (None: built in code).")
    options: RunOptions
    servers: dict[str, Server] = Field(default_factory=dict)
    seal: str | None = Field(default=None, exclude=True, description="This machine's HMAC of the file "
                                                                     "(physlab.run.seal); added when written.")


class RunRecord(BaseModel):
    """metrics.json: how the run ended, its verdict, its usage, and the options it was made with.
    The answer itself is in ANSWER.md and answer.py; a record read back carries it (not written)."""

    model_config = ConfigDict(extra="allow")

    record_version: int = RECORD_VERSION
    problem_id: str = ""
    strategy: str = ""
    model: str = ""
    status: AttemptStatus
    stop_reason: str = ""
    has_answer: bool = False
    verdict: Verdict | None = None
    ran_as: str | None = None
    reference_conditioned: bool = False
    wall_s: float = 0.0
    totals: UsageTotals = Field(default_factory=UsageTotals)
    per_role: dict[str, UsageTotals] = Field(default_factory=dict)
    failed_requests: int = 0
    retried_requests: int = 0
    truncated_replies: int = 0
    graced_calls: int = 0
    price_sources: dict[str, int] = Field(default_factory=dict)
    budget: dict[str, Any] = Field(default_factory=dict)
    max_in_flight_seen: int = 0
    seed: int = 0
    api_base: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    checkpoints: list[Checkpoint] = Field(default_factory=list)
    models_by_role: dict[str, str] = Field(default_factory=dict)
    output_modes: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    options: RunOptions | None = None
    problem_spec: str | None = None
    servers: dict[str, Server] = Field(default_factory=dict)
    resume_failed: FailedResume | None = None
    answer_latex: str | None = Field(default=None, description="The answer's value as LaTeX, as the grader read "
                                     "it from the code's answer tree (graded or not); None for a written answer.")
    state_digest: str | None = Field(default=None, description="sha256 of state.json as the run ended (a state "
                                     "changed since -- a rewind, a later session -- is newer than this record).")
    protocol: str = Field(default="physlab", description="The protocol the strategy was set by (--protocol): "
                                                         "physlab, or paper (its published setting).")
    strategy_params: dict[str, Any] = Field(default_factory=dict, description="Every parameter of the strategy "
                                            "as the run used it: its defaults under the protocol, then the "
                                            "--params given.")
    seal: str | None = Field(default=None, exclude=True, description="This machine's HMAC of the file "
                                                                     "(physlab.run.seal); added when written.")
    # Not in metrics.json: the answer as the run wrote it (ANSWER.md, answer.py), and where.
    answer_text: str | None = Field(default=None, exclude=True)
    answer_code: str | None = Field(default=None, exclude=True)
    workspace: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _flat_totals(cls, data: Any) -> Any:
        """A record written before ``totals`` existed kept its tokens and cost at the top."""
        if isinstance(data, dict) and "totals" not in data and "input_tokens" in data:
            tin, tout = data.get("input_tokens") or 0, data.get("output_tokens") or 0
            total = tin + tout if isinstance(tin, int) and isinstance(tout, int) else 0
            data = {**data, "totals": {"input_tokens": tin, "output_tokens": tout, "total_tokens": total,
                                       "cost_usd": data.get("cost_usd", 0.0)}}
        return data

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict_from_contract(cls, value: Any) -> Any:
        """metrics.json writes the verdict as `physlab grade --json` does: its details at the top."""
        if isinstance(value, dict) and "details" not in value:
            value = {"verdict": value.get("verdict"), "reason": value.get("reason", ""),
                     "details": {k: v for k, v in value.items() if k not in ("verdict", "reason")}}
        return value

    @field_serializer("verdict")
    def _verdict_as_contract(self, verdict: Verdict | None) -> dict[str, Any] | None:
        return verdict.contract_json() if verdict is not None else None

    @field_serializer("checkpoints")
    def _checkpoints_without_none(self, checkpoints: list[Checkpoint]) -> list[dict[str, Any]]:
        return [cp.model_dump(mode="json", exclude_none=True) for cp in checkpoints]

    @property
    def answered(self) -> bool:
        """A final answer was produced (`physlab solve` exits 0)."""
        return self.has_answer

    @property
    def usage_by_role(self) -> dict[str, Usage]:
        return {role: u.usage() for role, u in self.per_role.items()}

    @property
    def usage(self) -> Usage:
        return self.totals.usage()

    @property
    def error(self) -> str | None:
        """Why the run failed, as the strategy or the model seam said it."""
        err = self.details.get("error")
        return str(err) if err else None


# ---------------------------------------------------------------------------------------- reading

def _damaged(path: Path, exc: ValidationError | ValueError) -> DamagedRun:
    if isinstance(exc, ValidationError):
        errs = exc.errors()
        parts = []
        for e in errs[:3]:
            where = ".".join(str(x) for x in e["loc"])
            got = f", got {e['input']!r:.60}" if e["type"] != "missing" else ""
            parts.append(f"{where}: {e['msg'].lower()}{got}")
        more = f" (and {len(errs) - 3} more)" if len(errs) > 3 else ""
        field = ".".join(str(x) for x in errs[0]["loc"]) if errs else None
        return DamagedRun("; ".join(parts) + more + "; the file is damaged", path=path, field=field)
    return DamagedRun(f"not a JSON object ({str(exc).splitlines()[0][:120]}); the file is damaged", path=path)


def _load(path: Path, model: type[BaseModel]) -> Any:
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        if exc.errors() and exc.errors()[0]["type"] in ("json_invalid", "model_type"):
            raise _damaged(path, ValueError(exc.errors()[0]["msg"])) from None
        raise _damaged(path, exc) from None


def digest(data: bytes | None) -> str | None:
    """The fingerprint a record keeps of a file it describes (state.json)."""
    import hashlib

    return hashlib.sha256(data).hexdigest() if data is not None else None


def read_record(ws: Path, *, answer: bool = False) -> RunRecord | None:
    """metrics.json as a RunRecord; None when the run has none (it never ended, or is going).
    ``answer``: with the answer as written (ANSWER.md, answer.py)."""
    record = _load(Path(ws) / METRICS, RunRecord)
    if record is not None:
        record.workspace = Path(ws)
        if answer:
            record.answer_text = read_text(Path(ws) / "ANSWER.md")
            record.answer_code = read_text(Path(ws) / "answer.py")
    return record


def read_start(ws: Path) -> RunStart | None:
    """run.json; None for a run made before PhysLab wrote it (or one that never started)."""
    return _load(Path(ws) / OPTIONS, RunStart)


def write_record(ws: Path, record: RunRecord) -> None:
    """metrics.json, replaced whole: whoever reads it meanwhile sees the old record or the new one.
    Sealed as written on this machine (:mod:`physlab.run.seal`)."""
    write_atomic(Path(ws) / METRICS, sealed_json(json.loads(record.model_dump_json())))


def record_json(record: RunRecord) -> dict[str, Any]:
    """A record as `physlab solve --json` prints it: every field metrics.json holds (its seal too,
    when it was read from one), then the answer as the run wrote it and where (``answer_text``,
    ``answer_code``, ``workspace``): what the Python API's ``solve`` returns."""
    data: dict[str, Any] = json.loads(record.model_dump_json())
    if record.seal is not None:
        data["seal"] = record.seal
    data.update(answer_text=record.answer_text, answer_code=record.answer_code,
                workspace=str(record.workspace) if record.workspace is not None else None)
    return data


def write_start(ws: Path, start: RunStart) -> None:
    """run.json, sealed as written on this machine."""
    write_atomic(Path(ws) / OPTIONS, sealed_json(json.loads(start.model_dump_json())))


def options_file(ws: Path) -> Path:
    """The file a resume takes the run's options from: run.json, else (a run made before PhysLab
    wrote it) metrics.json."""
    return Path(ws) / OPTIONS if (Path(ws) / OPTIONS).is_file() else Path(ws) / METRICS


def written_here(ws: Path) -> bool:
    """Whether the file the run's options come from was written on this machine and not edited since."""
    return is_sealed(read_bytes(options_file(ws)))


def recorded_options(ws: Path) -> tuple[RunOptions | None, str | None]:
    """(the options the run was last started with, where its problem was loaded from), from
    run.json, else metrics.json; a run from before PhysLab recorded its options gives what its
    metrics.json says (strategy, model, server, seed, budget) or None."""
    start = read_start(ws)
    if start is not None:
        return start.options, start.problem_spec
    record = read_record(ws)
    if record is None:
        return None, None
    if record.options is not None:
        return record.options, record.problem_spec
    if not record.model or not record.strategy:
        return None, None
    limits = {k: v for k, v in record.budget.items() if k in ("max_calls", "max_tokens", "max_input_tokens",
                                                              "max_output_tokens", "max_cost_usd", "max_wall_s")}
    return RunOptions(strategy=record.strategy, model=record.model, api_base=record.api_base,
                      seed=record.seed, budget=Budget.model_validate(limits)), None
