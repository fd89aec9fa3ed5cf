"""The code gates: ruff finds nothing, and mypy finds nothing new; three counts may only fall.

ruff runs with the rules in pyproject.toml ([tool.ruff]) over the whole checkout. mypy checks
src/physlab ([tool.mypy]): the run package, the lab's state, the strategies and the bench have no
errors at all; the rest may keep the errors recorded in tests/mypy_known_errors.txt (one line each:
file, message and code, without the line number, so that an edit above an error does not move it)
and no more. Each test names exactly what is new. When errors are fixed, the record must shrink
with them. The same holds for the ``# type: ignore`` comments (tests/type_ignores_known.txt: file and
code) and for the functions over McCabe complexity 15 (tests/complexity_known.txt: file and name;
ruff's own limit, in pyproject.toml, is where the code is, and none may pass it):

    python tests/test_code_gates.py               # the gates' figures: rules, mode, the three counts
    python tests/test_code_gates.py --record      # rewrite the three records from what the tools find
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KNOWN = Path(__file__).with_name("mypy_known_errors.txt")
IGNORES = Path(__file__).with_name("type_ignores_known.txt")
COMPLEX = Path(__file__).with_name("complexity_known.txt")
AIM = 15  # the McCabe complexity every function should come down to
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


def read_known(path: Path = KNOWN) -> Counter[str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return Counter(line for line in lines if line.strip() and not line.startswith("#"))


_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?")


def type_ignores() -> list[tuple[str, str]]:
    """(``path: [code]``, ``path:line``) for every ``# type: ignore`` in src/physlab."""
    found = []
    for path in sorted((REPO / "src" / "physlab").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in _IGNORE.finditer(line):
                found.append((f"{rel}: {m.group(1) or '[]'}", f"{rel}:{n}"))
    return found


def complex_functions() -> list[tuple[str, str]]:
    """(``path: function``, ``path:line (complexity)``) for every function of src/physlab over AIM."""
    p = _tool("ruff", "check", "src/physlab", "--select", "C901", "--config", f"lint.mccabe.max-complexity={AIM}",
              "--output-format", "json", "--no-fix", "--exit-zero")
    out = []
    for f in json.loads(p.stdout or "[]"):
        m = re.match(r"`(?P<name>[^`]+)` is too complex \((?P<n>\d+) >", f["message"])
        rel = Path(f["filename"]).resolve().relative_to(REPO).as_posix()
        if m:
            out.append((f"{rel}: {m['name']}", f"{rel}:{f['location']['row']} ({m['n']})"))
    return out


def _compare(found: list[tuple[str, str]], path: Path, what: str) -> list[str]:
    """What ``found`` has beyond the record at ``path`` (each with where), and what the record has
    that is gone (lower it)."""
    where: dict[str, list[str]] = {}
    for signature, place in found:
        where.setdefault(signature, []).append(place)
    counted, known = Counter(sig for sig, _ in found), read_known(path)
    new, fixed = counted - known, known - counted
    lines = []
    if new:
        lines.append(f"{sum(new.values())} {what} not in {path.name} (remove them instead):")
        lines += [f"  {place}" for sig in sorted(new) for place in where[sig]]
    if fixed:
        lines.append(f"{sum(fixed.values())} recorded {what} are gone: lower the record with "
                     f"`python tests/test_code_gates.py --record` (the count may only fall):")
        lines += [f"  {sig}" for sig in sorted(fixed.elements())]
    return lines


def test_ruff_finds_nothing():
    p = _tool("ruff", "check", "--output-format", "concise", "--no-fix")
    assert p.returncode == 0, (
        f"ruff found these (`ruff check --fix` fixes the ones marked [*]: import order, unused imports):\n"
        f"{p.stdout}{p.stderr}")


@pytest.mark.slow
def test_mypy_finds_nothing_new_and_the_record_only_shrinks():
    errors = mypy_errors()
    print(f"mypy errors excused: {len(errors)} (recorded {sum(read_known().values())})")
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


def test_type_ignores_only_fall():
    found = type_ignores()
    print(f"type: ignore comments: {len(found)} (recorded {sum(read_known(IGNORES).values())})")
    lines = _compare(found, IGNORES, "`# type: ignore` comment(s)")
    assert not lines, "\n".join(lines)


def test_functions_over_the_complexity_aim_only_fall():
    found = complex_functions()
    print(f"functions over McCabe {AIM}: {len(found)} (recorded {sum(read_known(COMPLEX).values())})")
    lines = _compare(found, COMPLEX, f"function(s) over McCabe {AIM}")
    assert not lines, "\n".join(lines)


def test_the_record_holds_nothing_in_the_clean_areas():
    held = [line for line in read_known() if line.startswith(CLEAN)]
    assert not held, f"{KNOWN.name} may not excuse errors in {', '.join(CLEAN)}: {held}"


def record() -> int:
    """Rewrite the records from what the tools find; each may only shrink, and the mypy record never
    holds a clean area."""
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
    others = [(IGNORES, Counter(sig for sig, _ in type_ignores()), "`# type: ignore` comments (file: [code])"),
              (COMPLEX, Counter(sig for sig, _ in complex_functions()), f"functions over McCabe {AIM} (file: name)")]
    for path, counted, what in others:
        if path.exists() and counted - read_known(path):
            print(f"not recorded: new {what}; remove them instead:", *sorted(counted - read_known(path)),
                  sep="\n  ", file=sys.stderr)
            return 1
    KNOWN.write_text("\n".join(header + sorted(found.elements())) + "\n", encoding="utf-8")
    for path, counted, what in others:
        path.write_text("\n".join([f"# {what}, one per line: may only shrink (tests/test_code_gates.py).",
                                   "# Written by `python tests/test_code_gates.py --record`."]
                                  + sorted(counted.elements())) + "\n", encoding="utf-8")
    print(f"{sum(found.values())} error(s) recorded in {KNOWN.relative_to(REPO)} (was {sum(known.values())})")
    return 0


def figures() -> str:
    """The gates' figures, as a report quotes them."""
    import tomllib

    conf = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    lint, mypy = conf["tool"]["ruff"]["lint"], conf["tool"]["mypy"]
    strict = [m for o in mypy.get("overrides", []) if o.get("disallow_untyped_defs")
              for m in ([o["module"]] if isinstance(o["module"], str) else o["module"])]
    mode = "check_untyped_defs" if mypy.get("check_untyped_defs") else "default"
    return "\n".join([
        f"ruff rules: {', '.join(lint['select'])} (ignored: {', '.join(lint.get('ignore', [])) or 'none'}); "
        f"max McCabe complexity {lint.get('mccabe', {}).get('max-complexity', '-')}",
        f"mypy mode: {mode}" + (f"; disallow_untyped_defs for {', '.join(strict)}" if strict else ""),
        f"mypy errors excused: {sum(read_known().values())}",
        f"type: ignore comments: {len(type_ignores())}",
        f"functions over McCabe {AIM}: {len(complex_functions())}",
    ])


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--record"]):
        sys.exit("usage: python tests/test_code_gates.py [--record]")
    try:
        sys.exit(record() if sys.argv[1:] else print(figures()))
    except GateError as exc:
        sys.exit(str(exc))
