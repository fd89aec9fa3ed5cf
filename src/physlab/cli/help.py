"""How a group's help lists its commands: each with the first paragraph of its help, wrapped.

The command line's help texts are click's plain layout (typer's Rich layout costs more to load than
everything else a help text does, issue 44), and click cuts each command's summary at ~45
characters ("…writes a run workspace..."); this group shows the whole first paragraph instead,
as typer's Rich layout did.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup


class CommandList(TyperGroup):
    """A typer group whose help lists every command with its whole summary."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            text = cmd.short_help or cmd.help or ""
            rows.append((name, " ".join(text.split("\n\n")[0].split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def list_commands_whole(app: typer.Typer) -> None:
    """Make ``app`` and every group under it a :class:`CommandList`."""
    app.info.cls = CommandList
    for group in app.registered_groups:
        if group.typer_instance is not None:
            list_commands_whole(group.typer_instance)
