"""Benchmarks as Hugging Face publishes them, turned into PhysLab's own files for an import.

A dataset directory is what ``huggingface_hub.snapshot_download`` (or ``git clone`` of the dataset
repository) leaves: a dataset card ``README.md`` and data files -- parquet as ``datasets``'
``push_to_hub`` writes them (``data/<split>-00000-of-00001.parquet``), or JSON / JSON Lines. Rows
are read with pyarrow (parquet) or the standard library, and written in the layout PhysLab's
loaders already read, so an imported suite never needs pyarrow or the Hub again. ``hf:OWNER/NAME``
downloads the dataset with huggingface_hub first (optional: ``pip install 'physlab[hf]'``).

What each benchmark looks like on the Hub (looked up for this module; the tests write small copies
of the same layout):

* CritPt -- ``CritPt-Benchmark/CritPt`` (Apache-2.0): ``train`` split, one parquet file, one row per
  challenge with the challenge JSON's problem fields (``problem_id``, ``problem_type``,
  ``problem_index``, ``problem_description``, ``code_template``, ``answer_code``,
  ``answer_only_code`` -- empty for the test set --, ``testcases``) and its ``metadata`` flattened to
  ``metadata_*`` columns (``metadata_notebook_path``, ``metadata_problem_setup``, ``metadata_tag``)
  and no ``dataset_name``. Columns as read by NVIDIA NeMo-Skills' ``dataset/critpt/prepare.py`` and
  the dataset card; rows become CritPt challenge JSON, one file per challenge.
* HiPhO -- ``SciYu/HiPhO`` (MIT): ``data/<exam>.json`` files in the GitHub repository's format (a
  data sheet ``{"information": ...}`` then items) with figures under ``data/image_question/``; read
  as they are (each file is one exam; its data sheet belongs to its items).
* TPBench -- ``ZhiqiGao/TPBench`` (MIT): ``data/train-00000-of-00001.parquet`` (the viewer's parquet
  conversion names the split ``public``) with ``problem_id``, ``domain``, ``difficulty_level``,
  ``problem``, ``solution``, ``answer``, ``code_answer_requirements``, ``reference_implementation``
  (the dataset card's ``dataset_info``); rows are TPBench records as PhysLab's loader reads them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from physlab.errors import ProblemFileError, UserError
from physlab.problems.fields import read_json, read_jsonl, slug, type_name

PREFIX = "hf:"
DATA_SUFFIXES = (".parquet", ".jsonl", ".json")
INSTALL_HINT = "pip install 'physlab[hf]'"
_REPO_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
# What a row of each benchmark must have (to say so when a directory holds something else).
_ROW_KEYS = {"critpt": ("problem_id", "code_template", "problem_description"),
             "tpbench": ("problem",), "hipho": ("question", "answer")}


def is_hub_name(source: str) -> bool:
    return str(source).startswith(PREFIX)


def is_dataset_dir(path: Path) -> bool:
    """A Hub dataset directory (a card with a YAML header, or parquet data files), as opposed to a
    directory of PhysLab's own problem files."""
    if not path.is_dir():
        return False
    card = path / "README.md"
    if card.is_file():
        with card.open("rb") as fh:  # its first bytes only (a card can be anything, a link to /dev/zero too)
            if fh.read(3) == b"---":
                return True
    return any(_visible(p, path) for p in path.rglob("*.parquet"))


def _visible(p: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in p.relative_to(root).parts)


def download(name: str, *, revision: str | None = None) -> Path:
    """``hf:OWNER/NAME`` -> the dataset's local directory (downloaded, or from the Hub's cache)."""
    repo = name[len(PREFIX):] if is_hub_name(name) else name
    if not _REPO_RE.match(repo):
        raise UserError(f"expected hf:OWNER/NAME (e.g. hf:CritPt-Benchmark/CritPt), got {name!r}")
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError:
        raise UserError(f"importing {name} by name needs huggingface_hub: {INSTALL_HINT} "
                        "(or download the dataset elsewhere and pass its directory)") from None
    try:
        return Path(huggingface_hub.snapshot_download(repo, repo_type="dataset", revision=revision))
    except errors.GatedRepoError:
        raise UserError(f"{repo} is gated on the Hugging Face Hub: accept its terms on huggingface.co, then "
                        "log in with `hf auth login`") from None
    except errors.RepositoryNotFoundError:
        raise UserError(f"no dataset {repo} on the Hugging Face Hub (a private one needs `hf auth login`)") from None
    except errors.RevisionNotFoundError:
        raise UserError(f"{repo} has no revision {revision!r}", field="--revision") from None
    except Exception as exc:  # noqa: BLE001 - offline, DNS, proxy, disk: one line, the cause last
        cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
        raise UserError(f"cannot download {repo} from the Hugging Face Hub (offline? no cached copy either): "
                        f"download it where you are online (`hf download {repo} --repo-type dataset "
                        f"--local-dir DIR`) and import DIR; {type(exc).__name__}: {cause}") from None


def dataset_root(directory: Path) -> Path:
    """Where the dataset's files may live: its directory, or for a snapshot in huggingface_hub's
    cache (``datasets--OWNER--NAME/snapshots/<rev>``, whose files are links to ``../../blobs``) the
    dataset's whole cache folder."""
    if directory.parent.name == "snapshots" and (directory.parent.parent / "blobs").is_dir():
        return directory.parent.parent
    return directory


def own_file(p: Path, directory: Path) -> Path:
    """``p``, a file found in the dataset ``directory``, resolved, if it is the dataset's own: a
    link out of the dataset (its cache folder, for a snapshot) is refused, never read or copied."""
    root = dataset_root(directory)
    resolved = p.resolve()
    if not resolved.is_relative_to(root.resolve()):
        where = "cache folder" if root != directory else "directory"
        raise ProblemFileError(f"{p.relative_to(directory)} is a link to a file outside the dataset's {where} "
                               f"({resolved}); copy the file in instead", path=directory)
    return resolved


def data_files(directory: Path, split: str | None = None) -> list[Path]:
    """The dataset's data files (parquet/JSONL/JSON, not the card), those of ``split`` if given."""
    files = [p for p in sorted(directory.rglob("*")) if p.is_file() and p.suffix.lower() in DATA_SUFFIXES
             and _visible(p, directory) and p.name.lower() not in ("dataset_infos.json", "dataset_info.json")]
    for p in files:
        own_file(p, directory)
    if split is None:
        return files
    chosen = [p for p in files if split in _splits_of(p, directory)]
    if not chosen:
        known = list(dict.fromkeys(s for p in files for s in _splits_of(p, directory)))
        raise UserError(f"no data files for split '{split}' in {directory}"
                        f"{'; splits there: ' + ', '.join(known) if known else ''}", field="--split")
    return chosen


def _splits_of(p: Path, root: Path) -> list[str]:
    """The split a data file belongs to, from its name (``data/train-00000-of-00001.parquet``,
    ``test.jsonl``) or, for the viewer's ``default/train/0000.parquet``, its directory."""
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", p.stem)
    if stem.isdigit() and len(p.relative_to(root).parts) > 1:
        return [p.parent.name]
    return [stem]


def read_rows(path: Path) -> list[Any]:
    """The records of one data file."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":
        data = read_json(path)
        return data if isinstance(data, list) else [data]
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(f"reading parquet needs pyarrow: {INSTALL_HINT}", path=path) from None
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - a damaged or partial download
        raise ProblemFileError(f"not a readable parquet file ({type(exc).__name__}: {exc})", path=path) from None


def _check_rows(rows: list[Any], kind: str, path: Path) -> None:
    need = _ROW_KEYS[kind]
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ProblemFileError(f"expected {kind} records (mappings), got {type_name(row)}", path=path, field=f"[{i}]")
        if kind == "hipho" and "information" in row:
            continue
        missing = [k for k in need if k not in row]
        if missing:
            raise ProblemFileError(f"not {kind} rows: no {', '.join(missing)} column (columns: "
                                   f"{', '.join(map(str, row)) or 'none'})", path=path)


def _critpt_challenges(rows: list[dict]) -> dict[str, dict]:
    """Rows -> CritPt challenge JSON by challenge name (``Challenge_7`` from its notebook path,
    else from the problem id without ``_main`` / ``_sub_N``)."""
    out: dict[str, dict] = {}
    for row in rows:
        notebook = str(row.get("metadata_notebook_path") or "")
        name = str(row.get("dataset_name") or (Path(notebook).stem if notebook else "")
                   or re.sub(r"_(main|sub_\d+)$", "", str(row.get("problem_id"))))
        problem = {k: v for k, v in row.items() if not k.startswith("metadata_") and k != "dataset_name"}
        problem["metadata"] = {k[len("metadata_"):]: v for k, v in row.items() if k.startswith("metadata_")}
        challenge = out.setdefault(name, {"dataset_name": name, "source_notebook": notebook, "problems": []})
        challenge["problems"].append(problem)
    return out


def _copy_figures(rows: list[dict], source: Path, directory: Path, dest: Path) -> None:
    """HiPhO items name their figures relative to their file: bring them along (the loader of the
    stored copy then checks each is an image)."""
    for row in rows:
        for rel in row.get("image_question") or []:
            src = source.parent / str(rel)
            if src.is_file() and not Path(rel).is_absolute() and ".." not in Path(rel).parts:
                real = own_file(src, directory)
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(real, dest / rel)


def convert(kind: str, directory: Path, dest: Path, *, split: str | None = None) -> int:
    """Write the ``kind`` problems of a Hub dataset directory into ``dest`` in PhysLab's layout;
    returns how many data files were read."""
    files = data_files(directory, split)
    if not files:
        raise ProblemFileError("no data files (parquet, JSON Lines or JSON) in this dataset directory", path=directory)
    critpt_rows: list[dict] = []
    for f in files:
        rows = read_rows(f)
        if kind == "critpt" and len(rows) == 1 and isinstance(rows[0], dict) and "problems" in rows[0]:
            shutil.copy2(f, dest / f"{slug(f.stem)}.json")  # a challenge file as CritPt's GitHub has them
            continue
        _check_rows(rows, kind, f)
        if kind == "critpt":
            critpt_rows.extend(rows)
        elif kind == "tpbench":
            stem = slug(str(f.relative_to(directory).with_suffix("")).replace("/", "_"))
            (dest / f"{stem}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        else:  # hipho: one exam per file, its data sheet first
            (dest / f"{f.stem}.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
            _copy_figures(rows, f, directory, dest)
    for name, challenge in _critpt_challenges(critpt_rows).items():
        (dest / f"{slug(name)}.json").write_text(json.dumps(challenge, indent=1, ensure_ascii=False), encoding="utf-8")
    for lic in directory.glob("LICENSE*"):
        shutil.copyfile(own_file(lic, directory), dest / lic.name)
    return len(files)
