"""`physlab ui [--port P] [--runs DIR] [--db results.sqlite] [--host H] [--token T]`."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Optional

import typer

from physlab.errors import UserError

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def register(app: typer.Typer) -> None:
    @app.command("ui")
    def ui(port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port to listen on."),
           runs: Path = typer.Option(Path("runs"), "--runs", help="The runs directory to watch."),
           db: Optional[Path] = typer.Option(None, "--db", help="A sweep results database (for the Sweeps page)."),
           host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (off loopback needs a token)."),
           token: Optional[str] = typer.Option(None, "--token", help="Access token (generated when binding off loopback).")
           ) -> None:
        """Open the dashboard: runs (live), one run's research graph and calls, human actions, sweeps."""
        import uvicorn

        from physlab.web.app import create_app

        if not runs.is_dir():
            raise UserError("no such runs directory", path=runs, field="--runs")
        if db is not None and not db.is_file():
            raise UserError("no such results database", path=db, field="--db")
        if token is not None and len(token) < 8:
            raise UserError("the token must be at least 8 characters", field="--token")
        if host not in LOOPBACK and token is None:
            token = secrets.token_urlsafe(24)
            typer.echo(f"access token (the page asks for it): {token}")
        shown = f"[{host}]" if ":" in host else host
        typer.echo(f"PhysLab dashboard on http://{shown}:{port}/  (runs: {runs.resolve()}"
                   + (f", db: {db}" if db else "") + ")")
        uvicorn.run(create_app(runs, db=db, token=token), host=host, port=port, log_level="warning",
                    timeout_graceful_shutdown=2)
