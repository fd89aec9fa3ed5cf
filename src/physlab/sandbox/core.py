"""Sandbox front door.

PLACEHOLDER IMPLEMENTATION (to be replaced by the sandbox work in issue 2): a plain subprocess in
a temporary directory with a scrubbed environment and rlimits. The public API below is the seam and
must be kept: ``Sandbox.run`` (async), ``Sandbox.run_sync``, ``default_sandbox()``.
"""

from __future__ import annotations

import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from physlab.sandbox.types import SandboxLimits, SandboxResult


class Sandbox:
    def __init__(self, backend: str = "auto") -> None:
        self.backend = "rlimit" if backend == "auto" else backend

    async def run(
        self,
        code: str,
        *,
        limits: SandboxLimits | None = None,
        files: dict[str, bytes] | None = None,
        collect: list[str] | None = None,
        stdin: bytes | None = None,
    ) -> SandboxResult:
        limits = limits or SandboxLimits()
        with tempfile.TemporaryDirectory(prefix="physlab-sb-") as tmp:
            work = Path(tmp)
            for name, data in (files or {}).items():
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                (work / name).write_bytes(data)
            (work / "main.py").write_text(code)

            def _limit() -> None:
                mem = limits.memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
                cpu = int(limits.cpu_s or limits.timeout_s + 1)
                resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
                os.setsid()

            start = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "main.py", cwd=work, env={"PATH": "/usr/bin:/bin"},
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, preexec_fn=_limit,
            )
            timed_out = False
            try:
                out, err = await asyncio.wait_for(proc.communicate(stdin), limits.timeout_s)
            except asyncio.TimeoutError:
                timed_out = True
                proc.kill()
                out, err = await proc.communicate()
            cap = limits.max_output_bytes
            truncated = len(out) > cap or len(err) > cap
            returned: dict[str, bytes] = {}
            for pattern in collect or []:
                for p in work.glob(pattern):
                    if p.is_file():
                        returned[str(p.relative_to(work))] = p.read_bytes()
            return SandboxResult(
                exit_code=None if timed_out else proc.returncode,
                stdout=out[:cap].decode(errors="replace"), stderr=err[:cap].decode(errors="replace"),
                timed_out=timed_out, duration_s=time.monotonic() - start, truncated=truncated,
                files=returned, backend=self.backend,
            )

    def run_sync(self, code: str, **kwargs) -> SandboxResult:
        return asyncio.run(self.run(code, **kwargs))

    async def aclose(self) -> None:
        return None


_default: Sandbox | None = None


def default_sandbox() -> Sandbox:
    global _default
    if _default is None:
        _default = Sandbox()
    return _default
