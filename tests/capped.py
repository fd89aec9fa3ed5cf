"""A victim under an address-space cap: Python code run in a child process whose RLIMIT_AS is set
before it starts, so a memory bomb ends there (MemoryError, or the child killed) instead of taking
the machine, and the test reads what the child printed."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_capped(code: str, *args: str, memory_mb: int = 1024, stdin: bytes = b"", timeout: float = 300.0,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -c code ARGS`` with at most ``memory_mb`` of address space (this checkout's PhysLab)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, timeout=timeout,
                          preexec_fn=cap, env=env, cwd=cwd)
