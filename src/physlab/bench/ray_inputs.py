"""The files a Ray sweep's cells read by their path instead of receiving them: problem figures
(``images:``) and ``replay:`` models' calls.jsonl. They are not shipped: a figure's path is part of
what the run records (PROBLEM.md lists it) and a replay file's path is part of the model's name,
so each node reads them where the driver does. Before any cell runs, the driver lists them with
their digests and every node says which it cannot read there, or reads differently
(``physlab.bench.ray_sweep``): a sweep whose cells would see other inputs on another node, or
none, stops in one line instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from physlab.errors import UserError

if TYPE_CHECKING:
    from physlab.bench.sweep_config import SweepConfig

Kind = Literal["image", "replay"]


@dataclass(frozen=True)
class InputFile:
    """One file the cells read: its path as they name it (a relative one is read from the working
    directory of whoever reads it), what it is for, and the digest of what the driver read there."""

    path: str
    kind: Kind
    what: str
    sha256: str


def sweep_inputs(cfg: SweepConfig, problems: Iterable[Any], registry: Any) -> list[InputFile]:
    """Every figure of ``problems`` and every replay file of the sweep's models (roles' too), as
    the driver reads them (a replay file it cannot read: UserError, as `bench run` says it)."""
    from physlab.llm.models import parse_spec

    named: dict[tuple[Kind, str], str] = {}
    for p in problems:
        for image in p.images:
            named.setdefault(("image", str(image)), f"a figure of problem {p.id}")
    for spec in dict.fromkeys([*cfg.models, *registry.roles.values(), *cfg.role_models.values()]):
        provider, rest = parse_spec(spec)
        if provider == "replay":
            named.setdefault(("replay", rest), f"the model {spec}")
    out = []
    for (kind, path), what in named.items():
        data = _read(kind, path)
        if data is None:
            raise UserError(f"cannot read {path} ({what})", field="--ray")
        out.append(InputFile(path=path, kind=kind, what=what, sha256=hashlib.sha256(data).hexdigest()))
    return out


def unseen(files: Iterable[InputFile]) -> list[str]:
    """What this machine does not read as the driver did: one line per file."""
    out = []
    for f in files:
        data = _read(f.kind, f.path)
        if data is None:
            out.append(f"{f.path} ({f.what}) is not there")
        elif hashlib.sha256(data).hexdigest() != f.sha256:
            out.append(f"{f.path} ({f.what}) holds other bytes than on the driver")
    return out


def _read(kind: Kind, path: str) -> bytes | None:
    try:
        if kind == "replay":
            from physlab.llm.replay import resolve_calls_path

            return resolve_calls_path(path).read_bytes()  # (a run directory: its calls.jsonl)
        return Path(path).read_bytes()
    except (OSError, UserError):
        return None
