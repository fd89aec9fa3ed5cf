"""`physlab sandbox run SCRIPT`: run a script exactly as the Computer agent's code is run, in Python
or, chosen by its extension or `--lang`, in one of the algebra systems (physlab.tools.cas)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer

from physlab.errors import UserError
from physlab.sandbox.bounds import MAX_TIMEOUT_S

sandbox_app = typer.Typer(help="Run untrusted code (Python, FORM, Cadabra2, Maxima, Wolfram Language) in the sandbox.",
                          no_args_is_help=True)


@sandbox_app.command("run")
def run_cmd(
    script: Path = typer.Argument(..., help="File to run: Python, or .frm .cdb .mac .wl/.m for an algebra system."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    timeout: float = typer.Option(60.0, "--timeout", help="Wall-clock limit in seconds."),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="Memory the code may use, in MB."),
    backend: str = typer.Option("auto", "--backend", help="auto | bwrap | rlimit"),
    lang: str = typer.Option("", "--lang", help="python | form | cadabra2 | maxima | wolfram (default: from the "
                                                "extension; Python for any other)"),
) -> None:
    """Run SCRIPT in the sandbox; exit with its exit code (124 on timeout)."""
    from physlab.sandbox import preload
    from physlab.sandbox.core import Sandbox
    from physlab.sandbox.types import SandboxLimits
    from physlab.tools import cas  # the CLI sits above both layers

    if lang:
        try:
            language = cas.check_language(lang)
        except UserError:
            raise UserError(f"expected one of {', '.join(cas.LANGUAGES)}, got {lang!r}", field="--lang") from None
    else:
        language = cas.language_for_path(script)
    if not script.is_file():
        raise UserError("script not found (expected a file to run)", path=script)
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT_S):
        raise UserError(f"expected a number of seconds in (0, {MAX_TIMEOUT_S}], got {timeout}", field="--timeout")
    if memory_mb <= 0:
        raise UserError(f"expected a positive number of MB, got {memory_mb}", field="--memory-mb")
    try:
        code = script.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the script as UTF-8 text ({exc.__class__.__name__})", path=script) from None
    if language != "python" and not cas.system_status(language).available:
        raise cas.SystemUnavailable(cas.system_status(language).reason)  # before starting any worker
    # One run: its worker imports the stack's modules the script names (as the lab's warm workers
    # have them), not the whole stack (physlab.sandbox.preload).
    sb = Sandbox(backend, workers=1, preload=preload.for_script(code) if language == "python" else preload.NONE)
    try:
        res = cas.execute_sync(code, language, sb, SandboxLimits(timeout_s=timeout, memory_mb=memory_mb))
    finally:
        sb.close()
    if as_json:
        typer.echo(json.dumps(res.contract_json()))
    else:
        if res.notice:
            sys.stderr.write(f"[physlab sandbox: {res.notice}]\n")
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
