"""`physlab ui [--port P] [--runs DIR] [--db results.sqlite] [--host H] [--token T]` (docs/dashboard.md)."""

from __future__ import annotations

import socket
from pathlib import Path

import typer

from physlab.errors import UserError

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def register(app: typer.Typer) -> None:
    @app.command("ui")
    def ui(port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port to listen on."),
           runs: Path = typer.Option(Path("runs"), "--runs", help="The runs directory to watch (it may not exist "
                                     "yet: runs appear as they are made)."),
           db: Path | None = typer.Option(None, "--db", help="A sweep results database (for the Sweeps page; "
                                             "default: results.sqlite beside the runs directory, when there)."),
           host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (off loopback needs a token)."),
           token: str | None = typer.Option(None, "--token", help="Access token (generated when binding off loopback).")
           ) -> None:
        """Open the dashboard: runs (live), one run's research graph and calls, human actions, sweeps."""
        import uvicorn

        from physlab.web.app import create_app

        if runs.exists() and not runs.is_dir():
            raise UserError("not a directory", path=runs, field="--runs")
        if not runs.exists() and not runs.resolve().parent.is_dir():  # a typo, not a runs folder still to come
            raise UserError("no such runs directory, nor the folder it would be made in", path=runs, field="--runs")
        if db is not None and not db.is_file():
            raise UserError("no such results database", path=db, field="--db")
        if db is not None:  # a file that is no results database: one line now, not an error page later
            from physlab.bench.store import ResultsStore

            ResultsStore(db, create=False).close()
        else:
            db = _results_beside(runs)
        if token is not None and len(token) < 8:
            raise UserError("the token must be at least 8 characters", field="--token")
        sock = _listen(host, port)  # before printing a token or a URL: a taken port is one line
        if host not in LOOPBACK and token is None:
            import secrets

            token = secrets.token_urlsafe(24)
            typer.echo(f"access token (the page asks for it): {token}")
        shown = f"[{host}]" if ":" in host else host
        typer.echo(f"PhysLab dashboard on http://{shown}:{port}/  (runs: {runs.resolve()}"
                   + ("" if runs.is_dir() else " -- no runs yet: they appear as they are made")
                   + (f", db: {db}" if db else "") + ")")
        config = uvicorn.Config(create_app(runs, db=db, token=token), log_level="warning", timeout_graceful_shutdown=2)
        uvicorn.Server(config).run(sockets=[sock])


def _results_beside(runs: Path) -> Path | None:
    """``results.sqlite`` beside the runs directory (where `physlab bench run` writes it by default,
    run from the same folder), when it is a results database."""
    from physlab.bench.store import ResultsStore

    found = runs.resolve().parent / "results.sqlite"
    if not found.is_file():
        return None
    try:
        ResultsStore(found, create=False).close()
    except UserError:  # some other file of that name: the Sweeps page says how to give one
        return None
    return found


def _listen(host: str, port: int) -> socket.socket:
    """The dashboard's listening socket, bound here so that uvicorn serves exactly the socket whose
    bind was checked (its own bind failure is a log line and exit code 3, after the URL was printed)."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise UserError(f"cannot resolve {host!r} ({exc.strerror})", field="--host") from None
    sock = socket.socket(info[0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(info[4])
        sock.listen(128)  # the URL is printed before uvicorn serves: a browser opened at once waits, not refused
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another port with --port",
                        field="--port") from None
    return sock
