"""Candidates written by an attacker who knows nothing about the answer (issue #32).

``zero_knowledge`` fills a template's blanks with zeros, calls ``answer`` for the shape of the
answer, replaces every leaf with a whitelisted function applied to a *string*, writes the stage-1
result file itself and leaves. The string is Python that, were it ever evaluated by SymPy's
non-strict ``sympify`` in the trusted stage, would fetch the reference leaf it is compared with
from the caller's frame (``reference``), or raise an error carrying it (``leak``), or touch a
canary file (``canary``).
"""

from __future__ import annotations

import json
import re

# Evaluated (inside parse_expr) in the trusted stage's rebuild step: the frame that rebuilds the
# pair holds the reference leaf as job["r"], and the symbol factory as make.
_FRAME = "next(i.frame for i in __import__('inspect').stack(0) if 'make' in i.frame.f_locals and 'job' in i.frame.f_locals)"
REFERENCE = ("eval(\"(lambda f: f.f_globals['T'].from_tree(f.f_locals['job']['r'], f.f_locals['sp'], "
             f"symbol=f.f_locals['make'], sympy_containers=True))({_FRAME})\")")
LEAK = ("eval(\"(_ for _ in ()).throw(RuntimeError('REF<' + __import__('json').dumps("
        f"{_FRAME}.f_locals['job']['r']) + '>'))\")")


def canary(path: str) -> str:
    return f"eval(\"__import__('pathlib').Path({path!r}).write_text('evaluated') or 1\")"


def hostile_leaf(payload: str, wrapper: str = "Max") -> dict:
    """A leaf that rebuilds as ``wrapper(<payload string>)``: SymPy functions sympify their
    arguments non-strictly, so the string would be parsed and run."""
    return {"t": "fn", "f": wrapper, "a": [{"t": "str", "v": payload}]}


def zero_knowledge(template: str, payload: str = REFERENCE, *, wrapper: str = "Max",
                   leaf: dict | None = None, extra: str = "") -> str:
    """The attack of issue #32 as a candidate file. ``leaf``: the node every leaf becomes (default:
    ``hostile_leaf(payload, wrapper)``); ``extra``: more JSON fields for the forged result
    (``'"written": {...}'``)."""
    zeros = re.sub(r"=\s*\.\.\.", "= 0", template)
    leaf = leaf if leaf is not None else hostile_leaf(payload, wrapper)
    tail = f'''

import json as _json, os as _os
_shape_of = answer


def answer(*args):
    def walk(v):
        if isinstance(v, dict):
            return {{"t": "dict", "items": [[{{"t": "str", "v": str(k)}}, walk(x)] for k, x in v.items()]}}
        if isinstance(v, (tuple, list)):
            return {{"t": type(v).__name__, "a": [walk(x) for x in v]}}
        return _json.loads({json.dumps(leaf)!r})
    tree = walk(_shape_of(*args))
    with open("result.json", "w") as f:
        f.write('{{"ok": true, "tree": ' + _json.dumps(tree) + {(", " + extra) if extra else ""!r} + '}}')
    _os._exit(0)
'''
    return zeros + tail
