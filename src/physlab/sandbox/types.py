"""Sandbox request/result models (the seam every caller of the sandbox uses)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SandboxLimits(BaseModel):
    timeout_s: float = Field(default=60.0, gt=0, allow_inf_nan=False, description="Wall-clock limit.")
    cpu_s: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                description="CPU-time limit (default: timeout + 1).")
    memory_mb: int = Field(default=2048, gt=0, description="Address-space limit.")
    max_processes: int = Field(default=64, gt=0)
    max_file_mb: int = Field(default=64, gt=0, description="Largest file the code may write.")
    max_output_bytes: int = Field(default=1_000_000, gt=0, description="Captured stdout/stderr cap, each.")
    max_return_file_bytes: int = Field(default=20_000_000, gt=0, description="Total size of returned files.")
    max_disk_mb: int = Field(default=256, gt=0, description="Size of the run's private work dir (bwrap backend).")


class SandboxResult(BaseModel):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    truncated: bool
    files: dict[str, bytes] = Field(default_factory=dict, description="Files returned from the run.")
    backend: str = ""
    files_truncated: bool = Field(default=False, description="Some collected files were left out (size cap).")
    limit_hit: str | None = Field(
        default=None, description="timeout | memory | cpu | processes | output | file_size, when one was hit.")
    signal: int | None = Field(default=None, description="Signal that ended the code, if any.")
    error: str = Field(default="", description="Sandbox-side problem (not the code's own error).")
    isolated_run: bool = Field(default=False, description="The run had its own PID/mount namespace.")
    language: str = Field(default="python", description="What the code was written in (physlab.tools.cas.LANGUAGES).")
    notice: str = Field(default="", description="Which interpreter ran it, where that is worth saying (Mathics3 "
                                                "for the Wolfram Language).")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def contract_json(self) -> dict:
        """The fields fixed by the `physlab sandbox run --json` contract."""
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "duration_s": self.duration_s,
            "truncated": self.truncated,
            "backend": self.backend,
            "limit_hit": self.limit_hit,
            "language": self.language,
            "notice": self.notice,
        }
