"""The `physlab` command line.

Each command group registers its own commands (``register(app)`` in ``physlab/cli/<group>.py``) so
that the modules stay small; this file only assembles them and turns :class:`UserError` into one line
on stderr with exit code 2. Every command registers at start, so the command modules import their
machinery inside the commands: a help text loads typer and nothing of PhysLab's own weight
(tests/test_cli_start.py, benchmarks/cli_start.py).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import typer

from physlab.cli.help import list_commands_whole
from physlab.errors import UserError

app = typer.Typer(
    name="physlab",
    help="PhysLab: hand a hard physics problem to a simulated research lab, or to any scaffold "
    "from the literature, and grade the answer with one trustworthy grader.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help layout: typer's Rich one imports more than all the rest of a help text
    # (`physlab --help` 15x `python -c pass` with it, 9x without; benchmarks/cli_start.py)
    rich_markup_mode=None,
)

# Modules that contribute commands; each defines register(app: typer.Typer).
_COMMAND_MODULES = (
    "physlab.cli.problems",
    "physlab.cli.grade",
    "physlab.cli.sandbox",
    "physlab.cli.strategies",
    "physlab.cli.solve",
    "physlab.cli.models",
    "physlab.cli.runs",
    "physlab.cli.bench",
    "physlab.cli.ui",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)
    list_commands_whole(app)


_register_all()


@app.callback()
def _root() -> None:
    """PhysLab command line."""
    # The command line owns its terminal: pydantic-ai's first-run banner would land above (and
    # inside) the live progress panel. Its documented switch; the environment variable rather than
    # ``pydantic_ai.BANNER_ENABLED`` so that commands without a model need not import pydantic-ai.
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")


# click's exceptions, from wherever this typer takes click (its own copy since typer 0.2x)
_clicks = importlib.import_module(typer.BadParameter.__module__)
_NoArgsIsHelp: type[Exception] = getattr(_clicks, "NoArgsIsHelpError", type("_NeverRaised", (Exception,), {}))
DEBUG_ENV = "PHYSLAB_DEBUG"  # set: an unexpected error prints its traceback instead of saving it


def main(argv: list[str] | None = None) -> None:
    try:
        code = app(args=argv, standalone_mode=False)  # click's errors come here, to be one line
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except _NoArgsIsHelp as exc:  # `physlab bench`: its help, as typer shows it
        _typer_error(exc)
    except _clicks.ClickException as exc:  # a mistyped option or value: one line, like a UserError
        typer.echo(f"error: {_one_line(exc)}", err=True)
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except OSError as exc:  # the machine's trouble (a full disk, a permission), not bad input
        _debug_traceback(exc)
        typer.echo(f"error: {_os_error(exc)}", err=True)
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - the last resort: a bug, in one line
        typer.echo(f"error: {_unexpected(exc)}", err=True)
        sys.exit(1)
    # Not standalone, typer returns an Exit's code (typer.Exit(1), Ctrl-C's 130) instead of exiting.
    sys.exit(code if isinstance(code, int) else 0)


def _os_error(exc: OSError) -> str:
    """An operating-system error as one line naming the file it was about, when it says."""
    import errno

    what = "no space left on device (the disk is full)" if exc.errno == errno.ENOSPC else (
        exc.strerror or str(exc)).rstrip(".")
    where = exc.filename if exc.filename is not None else None
    return f"{where}: {what}" if where else what


def _debug_traceback(exc: BaseException) -> bool:
    """With PHYSLAB_DEBUG set, the traceback goes to stderr too."""
    import os
    import traceback

    if not os.environ.get(DEBUG_ENV):
        return False
    sys.stderr.write("".join(traceback.format_exception(exc)))
    return True


def _unexpected(exc: BaseException) -> str:
    """A bug: its first line, and where its traceback is (PHYSLAB_DEBUG=1 prints it instead)."""
    import os
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(exc))
    head = (str(exc).strip().splitlines() or [""])[0][:300]
    if _debug_traceback(exc):
        return f"unexpected {type(exc).__name__}: {head}"
    try:
        fd, path = tempfile.mkstemp(prefix="physlab-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        where = f"traceback in {path}"
    except OSError:
        where = f"{DEBUG_ENV}=1 prints the traceback"
    return f"unexpected {type(exc).__name__}: {head} (a PhysLab bug; {where})"


def _one_line(exc: Any) -> str:  # a click exception (typer's own copy of click)
    """click's message on one line; a usage error also names the command's --help."""
    text = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    return f"{text} (see `{ctx.command_path} --help`)" if ctx is not None else text


def _typer_error(exc: Any) -> None:
    typer.echo(exc.format_message())  # the group's help, as its --help shows it
    sys.exit(exc.exit_code)
