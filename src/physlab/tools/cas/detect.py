"""Which algebra systems this machine has, as the sandbox will see them: the executables on the
runs' own PATH, Debian's Cadabra2 module where our interpreter can load it, a Wolfram Engine with
wolframclient, else Mathics3. Each missing one gets one line saying why and how to install it.
Looked up once per process (``refresh()`` looks again); only fixed version queries are run."""

from __future__ import annotations

import functools
import glob
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig

from pydantic import BaseModel, ConfigDict

from physlab.sandbox import launch
from physlab.tools.cas.systems import SYSTEMS

# The PATH every sandboxed run has (launch.run_env), so a system found here is one a run can start.
RUN_PATH = launch.run_env()["PATH"]
# Where Debian installs its Python modules (cadabra2's among them).
DEBIAN_MODULE_DIRS = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages")


class SystemStatus(BaseModel):
    model_config = ConfigDict(frozen=True)
    language: str
    name: str
    available: bool
    reason: str = ""  # one line: why it is missing and how to install it
    interpreter: str = ""  # what runs the code, with its version where known
    notice: str = ""  # told with every result (which interpreter ran the Wolfram Language)
    driver: str = ""  # the module of physlab.tools.cas.drivers that runs it in the sandbox
    settings: dict[str, str] = {}  # what that driver needs to know (paths found here)


def _which(name: str) -> str | None:
    found = shutil.which(name, path=RUN_PATH)
    return os.path.realpath(found) if found else None


def _seen_by_the_sandbox(path: str) -> bool:
    """bubblewrap shows a run /usr, /bin, /lib* and the Python installation, nothing else."""
    roots = ["/usr", "/bin", "/sbin", "/lib", "/lib64", *launch.python_roots()]
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _first_line(argv: list[str]) -> str:
    """The first line a trusted executable prints for a fixed version query ('' if it fails)."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                             env={"PATH": RUN_PATH, "HOME": "/nonexistent", "LANG": "C.UTF-8"}, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = (out.stdout or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _missing(language: str, why: str) -> SystemStatus:
    system = SYSTEMS[language]
    return SystemStatus(language=language, name=system.name, available=False,
                        reason=f"{system.name}: {why}; install: {system.install}")


def _executable(language: str, command: str, version_flag: str) -> SystemStatus:
    system = SYSTEMS[language]
    path = _which(command)
    if path is None:
        return _missing(language, f"no `{command}` on the sandbox's PATH")
    if not _seen_by_the_sandbox(path):
        return _missing(language, f"`{command}` is {path}, outside what the sandbox shows (/usr and Python)")
    version = _first_line([path, version_flag])
    interpreter = " ".join(version.split()[:2]) if version.lower().startswith(system.name.lower()) else system.name
    return SystemStatus(language=language, name=system.name, available=True, interpreter=interpreter,
                        driver=language)


def _cadabra2() -> SystemStatus:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    built_for = []
    for d in DEBIAN_MODULE_DIRS:
        if os.path.isfile(os.path.join(d, "cadabra2" + suffix)) and os.path.isfile(
                os.path.join(d, "cadabra2_defaults.py")):
            debian = _first_line(["dpkg-query", "-W", "-f=${Version}\n", "cadabra2"]) if d.startswith("/usr/lib") else ""
            version = debian.split("-")[0]  # upstream's version, without Debian's revision
            return SystemStatus(language="cadabra2", name="Cadabra2", available=True,
                                interpreter=f"Cadabra2 {version}".strip(), driver="cadabra2",
                                settings={"module_dir": d})
        built_for += [os.path.basename(p) for p in glob.glob(os.path.join(d, "cadabra2.cpython-*.so"))]
    if built_for:
        ours = f"{sys.version_info.major}.{sys.version_info.minor}"
        return _missing("cadabra2", f"its Python module ({built_for[0]}) is built for another Python than "
                                    f"the {ours} PhysLab runs on; run PhysLab with the Python it was built for")
    return _missing("cadabra2", f"no Debian cadabra2 module in {' or '.join(DEBIAN_MODULE_DIRS)}")


def _wolfram() -> SystemStatus:
    name = SYSTEMS["wolfram"].name
    engine = next((p for p in map(_which, ("wolframscript", "WolframKernel", "wolfram")) if p), None)
    why_not_engine = "no Wolfram Engine here (no wolframscript or WolframKernel on the sandbox's PATH)"
    if engine is not None:
        if not _seen_by_the_sandbox(engine):
            why_not_engine = f"the Wolfram Engine at {engine} is outside what the sandbox shows"
        elif importlib.util.find_spec("wolframclient") is None:
            why_not_engine = "a Wolfram Engine is installed but wolframclient is not (pip install wolframclient)"
        else:
            kernel = _which("WolframKernel") or ""
            return SystemStatus(language="wolfram", name=name, available=True,
                                interpreter="Wolfram Engine (wolframclient)",
                                notice=f"{name}: run by the Wolfram Engine through wolframclient.",
                                driver="wolfram_engine", settings={"kernel": kernel})
    if importlib.util.find_spec("mathics") is not None:
        try:
            version = importlib.metadata.version("Mathics3")
        except importlib.metadata.PackageNotFoundError:
            version = ""
        interpreter = f"Mathics3 {version}".strip()
        return SystemStatus(language="wolfram", name=name, available=True, interpreter=interpreter,
                            notice=f"{name}: {why_not_engine}, so {interpreter}, an open interpreter of the "
                                   "language, ran this; most functions behave as in Mathematica, some are "
                                   "missing or differ.",
                            driver="mathics")
    return _missing("wolfram", f"{why_not_engine} and no Mathics3")


_DETECT = {
    "form": lambda: _executable("form", "form", "-v"),
    "cadabra2": _cadabra2,
    "maxima": lambda: _executable("maxima", "maxima", "--version"),
    "wolfram": _wolfram,
}


@functools.cache
def system_status(language: str) -> SystemStatus:
    """Whether ``language`` (a key of SYSTEMS) can run here, looked up once."""
    return _DETECT[language]()


def available_systems() -> list[SystemStatus]:
    """Every algebra system, installed or not (``reason`` says why not, in one line)."""
    return [system_status(language) for language in _DETECT]


def refresh() -> None:
    """Look again (after installing a system, or in a test that changes what is found)."""
    system_status.cache_clear()
