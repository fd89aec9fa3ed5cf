"""`physlab sandbox run SCRIPT`: run a script exactly as the Computer agent's code is run."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer

from physlab.errors import UserError
from physlab.sandbox.types import MAX_TIMEOUT_S

sandbox_app = typer.Typer(help="Run untrusted Python in the sandbox.", no_args_is_help=True)


@sandbox_app.command("run")
def run_cmd(
    script: Path = typer.Argument(..., help="Python file to run."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    timeout: float = typer.Option(60.0, "--timeout", help="Wall-clock limit in seconds."),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="Memory the code may use, in MB."),
    backend: str = typer.Option("auto", "--backend", help="auto | bwrap | rlimit"),
) -> None:
    """Run SCRIPT in the sandbox; exit with its exit code (124 on timeout)."""
    from physlab.sandbox.core import Sandbox
    from physlab.sandbox.types import SandboxLimits

    if not script.is_file():
        raise UserError("script not found (expected a Python file)", path=script)
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT_S):
        raise UserError(f"expected a number of seconds in (0, {MAX_TIMEOUT_S}], got {timeout}", field="--timeout")
    if memory_mb <= 0:
        raise UserError(f"expected a positive number of MB, got {memory_mb}", field="--memory-mb")
    try:
        code = script.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the script as UTF-8 text ({exc.__class__.__name__})", path=script)
    sb = Sandbox(backend, workers=1)
    try:
        res = sb.run_sync(code, limits=SandboxLimits(timeout_s=timeout, memory_mb=memory_mb))
    finally:
        sb.close()
    if as_json:
        typer.echo(json.dumps(res.contract_json()))
    else:
        sys.stdout.write(res.stdout)
        sys.stdout.flush()
        sys.stderr.write(res.stderr)
        if res.truncated:
            sys.stderr.write("\n[physlab sandbox: output truncated]\n")
        if res.timed_out:
            sys.stderr.write(f"[physlab sandbox: timed out after {timeout:g} s]\n")
    if res.timed_out:
        raise typer.Exit(124)
    code_ = res.exit_code
    raise typer.Exit(code_ if code_ is not None and code_ >= 0 else (128 - code_ if code_ else 1))


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")
