"""The layers of src/physlab, as docs/DEVELOPING.md draws them: every import between top-level
packages runs down, and no two packages import each other (directly or round a circle).

Every import counts, the ones inside functions too (a lazy import is still a dependency). Every
module stands on its own folder's floor: the commands live in ``physlab.cli`` (one module per command
group), on the top floor with the Python API, and nothing below imports them.

    python -m pytest -q tests/test_layers.py      # lists every import that runs back up
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "physlab"

# Bottom to top. A package may import its own modules and those of any floor below its own.
FLOORS: list[set[str]] = [
    {"errors", "lazy", "version"},
    {"problems", "sandbox"},
    {"grading"},
    {"llm", "tools"},
    {"run"},
    {"lab"},
    {"strategies"},
    {"bench"},
    {"web"},
    {"api", "__init__", "__main__", "cli"},   # the Python API, and the commands (see COMMANDS)
]
COMMANDS = len(FLOORS) - 1


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package(module: str) -> str:
    """The top-level package a module belongs to: its folder's."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor(module: str) -> int:
    pkg = package(module)
    for n, names in enumerate(FLOORS):
        if pkg in names:
            return n
    raise AssertionError(f"{module}: package '{pkg}' is on no floor of tests/test_layers.py (add it where it "
                         "belongs, and to docs/DEVELOPING.md's drawing)")


KNOWN = {module_name(p) for p in SRC.rglob("*.py")}


def imports(path: Path, module: str) -> set[str]:
    """The physlab modules ``path`` imports (``from physlab import x`` counts as physlab.x)."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    known = KNOWN
    # ``physlab`` itself (its __version__, its folder) is no floor: every import loads it first.
    return {m for m in found if m.startswith("physlab.") and m in known}


@functools.cache
def edges() -> dict[tuple[str, str], list[str]]:
    """(importer module, imported module) for every import between two top-level packages."""
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        src = module_name(path)
        for dst in imports(path, src):
            if package(dst) != package(src):
                out.setdefault((src, dst), []).append(str(path.relative_to(SRC.parent)))
    return out


def test_every_import_between_packages_runs_down():
    # two packages on one floor do not import each other either, but on the top one (the faces)
    upward = sorted(f"{a} (floor {floor(a)}) imports {b} (floor {floor(b)})" for a, b in edges()
                    if floor(a) < floor(b) or (floor(a) == floor(b) < COMMANDS and package(a) != package(b)))
    assert not upward, "imports that run back up the layers:\n" + "\n".join(upward)


def test_no_command_is_imported_by_anything_but_a_command():
    wrong = sorted(f"{a} imports the command module {b}" for a, b in edges() if floor(b) == COMMANDS
                   and floor(a) < COMMANDS)
    assert not wrong, "\n".join(wrong)


def test_no_circle_between_packages():
    graph: dict[str, set[str]] = {}
    for a, b in edges():
        graph.setdefault(package(a), set()).add(package(b))
    circles = []
    for start in sorted(graph):
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    circles.append(" -> ".join(trail + [start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, trail + [nxt]))
    assert not circles, "packages that import each other:\n" + "\n".join(sorted(set(circles)))
