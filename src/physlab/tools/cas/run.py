"""Run a program in any of the sandbox's languages: Python as it is, an algebra system through its
driver (see ``drivers``), on the same sandbox, limits and hard timeout. The result is the sandbox's
own, with the language recorded and, for the Wolfram Language, a notice of which interpreter ran."""

from __future__ import annotations

import json

from physlab.errors import UserError
from physlab.sandbox import Sandbox, SandboxLimits, SandboxResult, default_sandbox
from physlab.tools.cas import detect, drivers
from physlab.tools.cas.systems import PYTHON, SYSTEMS, check_language


class SystemUnavailable(UserError):
    """The algebra system asked for is not installed here (the message says how to install it)."""


def _request(code: str, language: str, files: dict[str, bytes] | None) -> tuple[str, dict[str, bytes], str]:
    """The driver to run, the files it needs beside the caller's, and the notice for the result."""
    status = detect.system_status(language)
    if not status.available:
        raise SystemUnavailable(status.reason)
    program = "main" + SYSTEMS[language].extensions[0]
    own = {program: code.encode(), drivers.SETTINGS_FILE: json.dumps(status.settings).encode()}
    clash = sorted(set(files or {}) & (set(own) | {"main.py"}))
    if clash:
        raise UserError(f"input file {clash[0]!r}: that name is the program's own in a {status.name} run")
    return drivers.source(status.driver), {**(files or {}), **own}, status.notice


async def execute(
    code: str,
    language: str,
    sandbox: Sandbox | None = None,
    limits: SandboxLimits | None = None,
    *,
    files: dict[str, bytes] | None = None,
    collect: list[str] | None = None,
    stdin: bytes | None = None,
) -> SandboxResult:
    """Run ``code`` written in ``language`` (one of systems.LANGUAGES) in the sandbox."""
    language = check_language(language)
    sandbox = sandbox or default_sandbox()
    if language == PYTHON:
        return await sandbox.run(code, limits=limits, files=files, collect=collect, stdin=stdin)
    driver, inputs, notice = _request(code, language, files)
    res = await sandbox.run(driver, limits=limits, files=inputs, collect=collect, stdin=stdin)
    return res.model_copy(update={"language": language, "notice": notice})


def execute_sync(
    code: str,
    language: str,
    sandbox: Sandbox | None = None,
    limits: SandboxLimits | None = None,
    *,
    files: dict[str, bytes] | None = None,
    collect: list[str] | None = None,
    stdin: bytes | None = None,
) -> SandboxResult:
    """Blocking ``execute``; safe from any thread (it uses the sandbox's own blocking run)."""
    language = check_language(language)
    sandbox = sandbox or default_sandbox()
    if language == PYTHON:
        return sandbox.run_sync(code, limits=limits, files=files, collect=collect, stdin=stdin)
    driver, inputs, notice = _request(code, language, files)
    res = sandbox.run_sync(driver, limits=limits, files=inputs, collect=collect, stdin=stdin)
    return res.model_copy(update={"language": language, "notice": notice})


__all__ = ["SystemUnavailable", "execute", "execute_sync"]
