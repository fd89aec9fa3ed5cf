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
    "physlab.lab.cli",
    "physlab.bench.cli",
    "physlab.web.cli",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # capability not built yet
            if exc.name == name:
                continue
            raise
        module.register(app)


_register_all()


@app.callback()
def _root() -> None:
    """PhysLab command line."""


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, standalone_mode=True)
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
