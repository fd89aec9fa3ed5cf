"""Runs ``main.frm`` with FORM, in place of this process (same limits, namespaces and timeout).

FORM's 64-bit defaults reserve over 2 GB of sort buffers, more than a run may map; the setup file
written here sizes them to the run's address-space limit, and ``#:`` lines at the top of the
program still override it (FORM reads them after the setup file)."""

import os
import resource
import sys

GIB = 1 << 30


def setup(address_space: int) -> str:
    budget = 4 * GIB if address_space in (resource.RLIM_INFINITY, -1) else address_space
    large = min(max(budget // 8, 32 << 20), 1500 << 20)  # the largest buffer, an eighth of the limit
    small = large // 10
    return (f"LargeSize {large}\nSmallSize {small}\nSmallExtension {2 * small}\n"
            "ScratchSize 10M\nHideSize 10M\nWorkSpace 10M\n")


def main() -> None:
    with open("physlab-form.set", "w") as fh:
        fh.write(setup(resource.getrlimit(resource.RLIMIT_AS)[0]))
    try:
        os.execvp("form", ["form", "-q", "-S", "physlab-form.set", "main.frm"])
    except OSError as exc:
        print(f"physlab: FORM could not start in the sandbox ({exc.strerror})", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
