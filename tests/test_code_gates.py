"""The code gates: ruff finds nothing, and mypy finds nothing new.

ruff runs with the rules in pyproject.toml ([tool.ruff]) over the whole checkout. mypy checks
src/physlab ([tool.mypy]): the run package, the lab's state, the strategies and the bench have no
errors at all; the rest may keep the errors recorded in tests/mypy_known_errors.txt (one line each:
file, message and code, without the line number, so that an edit above an error does not move it)
and no more. Each test names exactly what is new. When errors are fixed, the record must shrink
with them (the count may only fall):

    python tests/test_code_gates.py --record      # rewrite tests/mypy_known_errors.txt from mypy's findings
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KNOWN = Path(__file__).with_name("mypy_known_errors.txt")
# Held at zero: these areas were brought to no errors (issue 38) and stay so.
CLEAN = ("src/physlab/run/", "src/physlab/lab/state/", "src/physlab/strategies/", "src/physlab/bench/")
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: (?P<message>.*)$")


class GateError(Exception):
    """A gate's tool could not run (not installed, or it crashed)."""


def _tool(*argv: str) -> subprocess.CompletedProcess[str]:
    module = argv[0]
    try:
        __import__(module)
    except ImportError:
        raise GateError(f"{module} is not installed: pip install -e '.[test]' (it pins the version the gate "
                        "expects)") from None
    return subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True, timeout=900)


def mypy_errors() -> list[tuple[str, str]]:
    """(``path: message [code]``, ``path:line``) for every error mypy reports, in its order."""
    p = _tool("mypy", "--no-pretty", "--no-color-output", "--no-error-summary")
    errors = [(f"{m['path']}: {m['message'].strip()}", f"{m['path']}:{m['line']}")
              for m in map(_ERROR.match, p.stdout.splitlines()) if m]
    if p.returncode not in (0, 1) or (p.returncode == 1 and not errors):  # 2: mypy itself failed
        raise GateError(f"mypy did not run (exit {p.returncode}):\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return errors


def read_known() -> Counter[str]:
    lines = KNOWN.read_text(encoding="utf-8").splitlines() if KNOWN.exists() else []
    return Counter(line for line in lines if line.strip() and not line.startswith("#"))


def test_ruff_finds_nothing():
    p = _tool("ruff", "check", "--output-format", "concise", "--no-fix")
    assert p.returncode == 0, (
        f"ruff found these (`ruff check --fix` fixes the ones marked [*]: import order, unused imports):\n"
        f"{p.stdout}{p.stderr}")


@pytest.mark.slow
def test_mypy_finds_nothing_new_and_the_record_only_shrinks():
    errors = mypy_errors()
    where: dict[str, list[str]] = {}
    for signature, place in errors:
        where.setdefault(signature, []).append(place)
    found, known = Counter(sig for sig, _ in errors), read_known()
    new = found - known
    fixed = known - found
    lines = []
    if new:
        lines.append(f"{sum(new.values())} mypy error(s) not in {KNOWN.name} (fix them; the areas "
                     f"{', '.join(CLEAN)} must have none):")
        for signature, count in sorted(new.items()):
            message = signature.split(": ", 1)[1]
            places = where[signature]
            more = f"  ({count} of these {len(places)} are new)" if count < len(places) else ""
            lines += [f"  {place}: {message}{more if i == 0 else ''}" for i, place in enumerate(places)]
    if fixed:
        lines.append(f"{sum(fixed.values())} recorded mypy error(s) are gone: lower the record with "
                     f"`python tests/test_code_gates.py --record` (the count may only fall):")
        lines += [f"  {signature}" for signature in sorted(fixed.elements())]
    assert not lines, "\n".join(lines)


def test_the_record_holds_nothing_in_the_clean_areas():
    held = [line for line in read_known() if line.startswith(CLEAN)]
    assert not held, f"{KNOWN.name} may not excuse errors in {', '.join(CLEAN)}: {held}"


def record() -> int:
    """Rewrite the record from mypy's findings; it may only shrink, and never holds a clean area."""
    found = Counter(sig for sig, _ in mypy_errors())
    known = read_known()
    grown = found - known
    if KNOWN.exists() and grown:
        print("not recorded: these are new; fix them instead:", *sorted(grown), sep="\n  ", file=sys.stderr)
        return 1
    clean = sorted(sig for sig in found if sig.startswith(CLEAN))
    if clean:
        print("not recorded: errors in the clean areas:", *clean, sep="\n  ", file=sys.stderr)
        return 1
    header = ["# mypy errors allowed outside the clean areas, one per line (file: message  [code]).",
              "# Written by `python tests/test_code_gates.py --record`; may only shrink (tests/test_code_gates.py)."]
    KNOWN.write_text("\n".join(header + sorted(found.elements())) + "\n", encoding="utf-8")
    print(f"{sum(found.values())} error(s) recorded in {KNOWN.relative_to(REPO)} (was {sum(known.values())})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_code_gates.py --record")
    try:
        sys.exit(record())
    except GateError as exc:
        sys.exit(str(exc))
