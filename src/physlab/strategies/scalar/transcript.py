"""The stored SCALAR dialogue (``scalar_transcript.json`` in the run's workspace): everything a
later Judge needs to re-score it without re-running the Actor or the Critic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from physlab.errors import UserError
from physlab.strategies.scalar.rubric import JudgeVerdict

TRANSCRIPT_FILE = "scalar_transcript.json"


class TurnRecord(BaseModel):
    turn: int
    actor: str
    answer_code: str | None = None
    feedback_before: str | None = Field(default=None, description="The critique this attempt answers.")
    critique: str | None = Field(default=None, description="The Critic's feedback on this attempt.")
    grader_verdict: dict[str, Any] | None = Field(
        default=None, description="PhysLab's grader on this turn's answer (judge-independent).")
    judge: JudgeVerdict
    progress: bool | None = Field(default=None, description="|S_t - S_(t-1)| > stagnation_delta "
                                  "(None on the first turn or next to an unscored turn).")


class ScalarTranscript(BaseModel):
    version: int = 1
    problem_id: str
    problem_statement: str = Field(description="The public statement the roles saw.")
    has_template: bool = False
    gradable: bool = False
    model: str = ""
    judge_model: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    turns: list[TurnRecord] = Field(default_factory=list)
    stop_reason: str = ""

    @property
    def scores(self) -> list[float | None]:
        return [t.judge.total if t.judge.parsed else None for t in self.turns]

    @property
    def passes(self) -> list[bool]:
        return [t.judge.passed for t in self.turns]

    @property
    def converged(self) -> bool:
        return any(self.passes)

    def save(self, workspace: Path) -> Path:
        path = Path(workspace) / TRANSCRIPT_FILE
        path.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        return path


def load_transcript(run_dir: Path | str) -> ScalarTranscript:
    """The transcript of a SCALAR run directory (UserError when it is missing or malformed)."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / TRANSCRIPT_FILE
    if not path.is_file():
        raise UserError(f"no {TRANSCRIPT_FILE} here (is it a scalar run directory?)", path=path.parent)
    try:
        return ScalarTranscript.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, ValueError) as exc:
        raise UserError(f"not a valid SCALAR transcript ({str(exc).splitlines()[0]})", path=path) from None
