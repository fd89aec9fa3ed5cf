"""The results store owns its SQL: no module but physlab.bench.store (and the schema's migrations,
which it runs) touches the database's connection; every other reader asks the store's typed queries
(cells by state and filters, the page's cell listing, a cell's workspace, the problems' public
views, the roles' usage)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "physlab"
OWNERS = {SRC / "bench" / "store.py", SRC / "bench" / "schema.py"}


def test_no_module_but_the_store_uses_its_connection():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path in OWNERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "conn":
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: .conn")
    assert not found, "SQL outside the results store (add a typed query to physlab.bench.store):\n" + "\n".join(found)
