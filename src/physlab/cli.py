"""The `physlab` command line.

Each capability registers its own commands (``register(app)`` in ``<capability>/cli.py``) so that
the modules stay small; this file only assembles them and turns :class:`UserError` into one line
on stderr with exit code 2.
"""

from __future__ import annotations

import importlib
import sys

import typer

from physlab.errors import UserError

app = typer.Typer(
    name="physlab",
    help="PhysLab: hand a hard physics problem to a simulated research lab, or to any scaffold "
    "from the literature, and grade the answer with one trustworthy grader.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Modules that contribute commands; each defines register(app: typer.Typer).
_COMMAND_MODULES = (
    "physlab.problems.cli",
    "physlab.grading.cli",
    "physlab.sandbox.cli",
    "physlab.strategies.cli",
    "physlab.runs.cli",
    "physlab.bench.cli",
    "physlab.web.cli",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_all()


@app.callback()
def _root() -> None:
    """PhysLab command line."""


# click's exceptions, from wherever this typer takes click (its own copy since typer 0.2x)
_clicks = importlib.import_module(typer.BadParameter.__module__)
_NoArgsIsHelp = getattr(_clicks, "NoArgsIsHelpError", type("_NeverRaised", (Exception,), {}))


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
    except _clicks.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    # Not standalone, typer returns an Exit's code (typer.Exit(1), Ctrl-C's 130) instead of exiting.
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(exc: Exception) -> str:
    """click's message on one line; a usage error also names the command's --help."""
    text = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    return f"{text} (see `{ctx.command_path} --help`)" if ctx is not None else text


def _typer_error(exc: Exception) -> None:
    from typer import rich_utils

    rich_utils.rich_format_error(exc)
    sys.exit(exc.exit_code)
