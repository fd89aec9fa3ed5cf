"""Suites (built-in, imported, or any directory) and resolving a problem spec to a Problem.

* Built-in suites: ``src/physlab/problems/data/<suite>/``.
* Imported suites: ``<user data dir>/suites/<name>/`` where the user data dir is ``$PHYSLAB_HOME``
  if set, else ``$XDG_DATA_HOME/physlab`` or ``~/.local/share/physlab``. ``physlab problems
  import`` copies the validated source files there (with a ``.physlab-suite.json`` manifest).
* Problem specs: ``path/to/file.yaml``, ``file.json#problem_id``, ``SUITE/ID``, ``DIR/ID``.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from physlab.errors import ProblemFileError, UserError
from physlab.problems.files import load_directory, load_file
from physlab.problems.model import Problem

BUILTIN_DIR = Path(__file__).resolve().parent / "data"
MANIFEST = ".physlab-suite.json"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def user_data_dir() -> Path:
    """Where PhysLab keeps user data (imported suites...)."""
    if os.environ.get("PHYSLAB_HOME"):
        return Path(os.environ["PHYSLAB_HOME"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "physlab"


def user_suites_dir() -> Path:
    return user_data_dir() / "suites"


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    kind: str  # "builtin" | "imported"
    path: Path
    description: str = ""


def builtin_suites() -> dict[str, Path]:
    if not BUILTIN_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(BUILTIN_DIR.iterdir()) if p.is_dir() and not p.name.startswith(("_", "."))}


def imported_suites() -> dict[str, Path]:
    root = user_suites_dir()
    if not root.is_dir():
        return {}
    return {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith((".", "_"))}


def list_suites() -> list[SuiteInfo]:
    out = [SuiteInfo(n, "builtin", p) for n, p in builtin_suites().items()]
    for name, p in imported_suites().items():
        if name in builtin_suites():
            continue
        desc = ""
        try:
            desc = json.loads((p / MANIFEST).read_text()).get("description", "")
        except (OSError, ValueError):
            pass
        out.append(SuiteInfo(name, "imported", p, desc))
    return out


def _suite_dir(name: str) -> Path | None:
    return builtin_suites().get(name) or imported_suites().get(name)


def suite_directory(name: str) -> Path | None:
    """The directory of the built-in or imported suite called ``name`` (None if there is none)."""
    return _suite_dir(name) if _NAME_RE.match(name) else None


def suite_meant(spec: str | Path) -> tuple[str, str | None]:
    """The suite a command line means by ``spec``, and a note when that is not ``spec`` as written.
    A shell completes a folder's name with a slash (``examples/``): with no such folder here, or
    one holding no problem files (a checkout's own examples/ folder), that is the built-in or
    imported suite of the name; a folder of problem files is that folder."""
    from physlab.problems.files import suite_files

    text = str(spec)
    name = text.rstrip("/")
    if name == text or not name or suite_directory(name) is None:
        return text, None
    here = Path(text).expanduser()
    if not here.is_dir():
        return name, None
    if suite_files(here):
        return text, None
    kind = "built-in" if name in builtin_suites() else "imported"
    return name, f"note: {text} here holds no problem files: running the {kind} suite '{name}' instead"


def _known_suite_names() -> list[str]:
    return [s.name for s in list_suites()]


def load_suite(spec: str | Path) -> list[Problem]:
    """A built-in suite name, an imported suite name, a directory, or a multi-problem file."""
    text = str(spec)
    directory = suite_directory(text)
    if directory is not None:
        return load_directory(directory, suite=text)
    path = Path(text).expanduser()
    if path.is_dir():
        return load_directory(path, suite=path.resolve().name)
    if path.is_file():
        return load_file(path)
    names = _known_suite_names()
    close = difflib.get_close_matches(text, names, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known suites: {', '.join(names) or '(none)'}"
    raise UserError(f"unknown suite '{text}': not a built-in or imported suite, nor a directory; {hint}")


def _pick(problems: list[Problem], pid: str, where: str) -> Problem:
    for p in problems:
        if p.id == pid:
            return p
    ids = [p.id for p in problems]
    close = difflib.get_close_matches(pid, ids, n=5, cutoff=0.4)
    if close:
        hint = f"close matches: {', '.join(close)}"
    elif ids:
        hint = f"{len(ids)} problems there, e.g. {', '.join(ids[:5])}"
    else:  # e.g. the built-in suite's name used as a path: say what would have worked
        hint = f"no problem files there; built-in and imported suites: {', '.join(_known_suite_names()) or 'none'}"
    raise UserError(f"unknown problem id '{pid}' in {where}; {hint}")


_PROBLEM_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".md")


def _directory_error(path: Path) -> ProblemFileError:
    return ProblemFileError("expected a problem file, got a directory; pick one of its problems with "
                            f"{path}/ID or {path}#ID (ids: physlab problems list {path})", path=path)


def resolve_problem(spec: str | Path) -> Problem:
    """A file path (``path#id`` for multi-problem files), ``SUITE/ID`` or ``DIR/ID``."""
    text = str(spec).strip()
    if not text:
        raise UserError("empty problem spec; expected a file, FILE#ID or SUITE/ID")
    path = Path(text).expanduser()
    if path.is_file():
        problems = load_file(path)
        if len(problems) == 1:
            return problems[0]
        ids = ", ".join(p.id for p in problems[:6]) + (", ..." if len(problems) > 6 else "")
        raise UserError(f"{path} holds {len(problems)} problems; pick one with {path}#ID (ids: {ids})")
    if "#" not in text and path.suffix.lower() in _PROBLEM_SUFFIXES:
        # A path to a problem file that is not there: say so (never read the parent directory as
        # a suite: `/tmp/missing.yaml` must not load all of /tmp).
        raise ProblemFileError("file not found", path=path)
    if "#" in text:
        file_part, pid = text.rsplit("#", 1)
        if not file_part.strip():
            raise UserError(f"'{text}': expected FILE#ID (a file before the '#')")
        fpath = Path(file_part).expanduser()
        if fpath.is_dir():
            return _pick(load_directory(fpath, suite=fpath.resolve().name), pid, str(fpath))
        if not fpath.is_file():
            raise ProblemFileError("file not found", path=fpath)
        return _pick(load_file(fpath), pid, str(fpath))
    if "/" in text:
        head, pid = text.split("/", 1)
        if "/" not in pid and _NAME_RE.match(head) and _suite_dir(head) is not None:
            problems = load_suite(head)
            if not any(p.id == pid for p in problems) and Path(head).is_dir():
                # A local directory with the same name as the suite: use it only if it has that id.
                try:
                    local = load_directory(Path(head), suite=head)
                except UserError:
                    local = []
                if any(p.id == pid for p in local):
                    return _pick(local, pid, f"directory {head}")
            return _pick(problems, pid, f"suite '{head}'")
        if path.is_dir():
            raise _directory_error(path)
        parent, pid = text.rsplit("/", 1)
        if not parent:  # '/name': never read the working directory (or '/') as a suite
            raise ProblemFileError("not found; expected a problem file, FILE#ID or SUITE/ID", path=path)
        if Path(parent).expanduser().is_dir():
            d = Path(parent).expanduser()
            return _pick(load_directory(d, suite=d.resolve().name), pid, f"directory {parent}")
        raise UserError(f"cannot resolve '{text}': not a file, and '{head}' is not a known suite "
                        f"({', '.join(_known_suite_names()) or 'none'}) or directory")
    if path.is_dir():
        raise _directory_error(path)
    # A bare id: search the built-in suites (convenient for `physlab problems show ID`).
    found = [p for name in builtin_suites() for p in load_suite(name) if p.id == text]
    if len(found) == 1:
        return found[0]
    all_ids = [f"{p.suite}/{p.id}" for name in builtin_suites() for p in load_suite(name)]
    close = difflib.get_close_matches(text, all_ids, n=5, cutoff=0.4) or difflib.get_close_matches(
        text, [i.split("/", 1)[1] for i in all_ids], n=5, cutoff=0.4)
    hint = f"close matches: {', '.join(close)}" if close else "expected a file, FILE#ID or SUITE/ID"
    raise UserError(f"unknown problem '{text}'; {hint}")


def import_suite(kind: str, source: str | Path, *, name: str | None = None, force: bool = False,
                 split: str | None = None, revision: str | None = None) -> tuple[str, Path, list[Problem]]:
    """Load and validate everything in ``source``, then store it as an imported suite.

    ``source`` is a file or directory in PhysLab's formats, a Hugging Face dataset directory
    (``physlab.problems.hf``; ``split`` picks one of its splits) or ``hf:OWNER/NAME`` (downloaded
    at ``revision``). Returns (name, stored directory, problems). Nothing is written if
    validation fails.
    """
    from physlab.problems import hf

    if kind not in ("critpt", "hipho", "tpbench", "yaml"):
        raise UserError(f"unknown import kind '{kind}'; expected critpt, hipho, tpbench or yaml")
    text = str(source)
    local = None if hf.is_hub_name(text) else Path(text).expanduser()
    if local is not None and not local.exists():
        raise ProblemFileError("not found", path=local)
    if kind != "yaml" and (local is None or hf.is_dataset_dir(local)):
        directory = hf.download(text, revision=revision) if local is None else local
        if local is not None and revision is not None:
            raise UserError("--revision is for hf:OWNER/NAME (a local directory is the revision it holds)",
                            field="--revision")
        default = text.rsplit("/", 1)[-1] if local is None else local.resolve().name
        with tempfile.TemporaryDirectory(prefix="physlab-hf-") as tmp:
            hf.convert(kind, directory, Path(tmp), split=split)
            return _store_suite(kind, Path(tmp), name=name or default, force=force,
                                imported_from=text if local is None else str(local.resolve()))
    if split is not None or revision is not None:
        raise UserError("--split and --revision are for Hugging Face datasets (a dataset directory or "
                        "hf:OWNER/NAME)", field="--split" if split is not None else "--revision")
    return _store_suite(kind, local, name=name, force=force, imported_from=str(local.resolve()))


def _store_suite(kind: str, src: Path, *, name: str | None, force: bool,
                 imported_from: str) -> tuple[str, Path, list[Problem]]:
    problems = load_directory(src) if src.is_dir() else load_file(src)
    if not problems:
        raise ProblemFileError(f"no {kind} problems found", path=src)
    expected = {"critpt": "critpt", "hipho": "hipho", "tpbench": "tpbench", "yaml": "yaml"}[kind]
    wrong = [p for p in problems if p.extra.get("format") != expected]
    if wrong:
        raise ProblemFileError(f"expected {kind} problems only, but {wrong[0].id} is {wrong[0].extra.get('format')}",
                               path=wrong[0].path)
    name = name or (src.name if src.is_dir() else src.stem)
    if not _NAME_RE.match(name):
        raise UserError(f"--name: expected letters, digits, '_', '.', '-', got {name!r}")
    if name in builtin_suites():
        raise UserError(f"--name: '{name}' is a built-in suite; choose another name")
    root = user_suites_dir()
    dest = root / name
    if dest.exists() and not force:
        raise UserError(f"suite '{name}' already exists at {dest}; pass --force to replace it or --name to pick another")
    base = src if src.is_dir() else src.parent
    files: set[Path] = set()
    for p in problems:
        assert p.path is not None
        files.add(p.path)
        files.update(p.images)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        for f in sorted(files):
            try:
                rel = f.resolve().relative_to(base.resolve())
            except ValueError:
                raise ProblemFileError(f"file outside the imported location: {f}", path=src) from None
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, tmp / rel)
        for lic in base.glob("LICENSE*"):
            if not lic.resolve().is_relative_to(base.resolve()):  # a link out: never copied into the suite
                raise ProblemFileError(f"{lic.name} is a link to a file outside the imported location "
                                       f"({lic.resolve()})", path=src)
            shutil.copy2(lic, tmp / lic.name)
        manifest = {"name": name, "kind": kind, "imported_from": imported_from, "problems": len(problems),
                    "imported_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                    "description": f"{kind} import of {imported_from.rstrip('/').rsplit('/', 1)[-1]} ({len(problems)} problems)"}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        stored = load_directory(tmp, suite=name)  # what later runs will see must load too
        if len(stored) != len(problems):
            raise ProblemFileError(f"stored copy loads {len(stored)} problems, expected {len(problems)}", path=src)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return name, dest, load_directory(dest, suite=name)
