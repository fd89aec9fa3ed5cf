"""The programs that run each algebra system inside the sandbox. Each module here is sent as a run's
``main.py`` with the user's program beside it (``main.frm``, ``main.cdb``, ...) and
``physlab-cas.json`` (what the host found, such as a module directory): so FORM, Maxima, Cadabra2
and the Wolfram Language run in the same confinement, limits and timeout as Python. They use the
standard library and the system itself only, and run only as ``__main__``."""

from __future__ import annotations

from importlib import resources

SETTINGS_FILE = "physlab-cas.json"


def source(driver: str) -> str:
    """The text of the driver module ``driver`` (e.g. ``"form"``)."""
    return resources.files(__name__).joinpath(f"{driver}.py").read_text(encoding="utf-8")
