"""Runs ``main.cdb`` with Cadabra2 in this (sandboxed) Python: Debian's cadabra2 module, built for
Debian's Python 3.11, loads into ours when the versions match (the host checked). The notebook text
is turned into Python by the module's own converter, then run after Cadabra's own start-up file,
as the ``cadabra2`` command does; an error shows the traceback from ``main.cdb`` on."""

import json
import os
import sys
import traceback

PROGRAM = "main.cdb"


def main() -> None:
    with open("physlab-cas.json", encoding="utf-8") as fh:
        module_dir = json.load(fh)["module_dir"]
    if module_dir not in sys.path:
        sys.path.append(module_dir)  # after our own packages: our SymPy, not Debian's
    import cadabra2

    with open(PROGRAM, encoding="utf-8") as fh:
        python = cadabra2.cdb2python_string(fh.read(), True)
    scope = {"__name__": "__main__", "__file__": PROGRAM, "__builtins__": __builtins__}
    defaults = os.path.join(module_dir, "cadabra2_defaults.py")
    with open(defaults, encoding="utf-8") as fh:
        exec(compile(fh.read(), defaults, "exec"), scope)  # inside the sandbox
    try:
        exec(compile(python, PROGRAM, "exec"), scope)  # this is the sandboxed run
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - shown like Python shows it, from main.cdb on
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != PROGRAM:
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        sys.exit(1)


if __name__ == "__main__":
    main()
