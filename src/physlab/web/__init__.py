"""The dashboard (`physlab ui`): FastAPI + server-sent events, plain HTML/JS/CSS served by PhysLab.

Modules: ``paths`` (which files the server may read: only run directories under the runs root),
``runs`` (run summaries and details, read through the lab's own models and helpers), ``mathml``
(LaTeX -> sanitised MathML), ``render`` (pages and fragments from the autoescaping Jinja2
templates in ``templates/``), ``svg`` (the inline charts' geometry), ``sweeps`` (the bench report,
filtered), ``app`` (routes, auth, CSP, SSE), ``server`` (run uvicorn in a thread), ``cli`` (`physlab ui`).
"""

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the app pulls in FastAPI and the bench report (scipy), ~1 s of imports
    # that every `physlab` command would otherwise pay when the command line registers `ui`.
    if name == "create_app":
        from physlab.web.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
