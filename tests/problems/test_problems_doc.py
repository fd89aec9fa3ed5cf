"""docs/problems.md matches the code: its example loads and checks, every form of `answer` it
shows gives the same reference value, and its table lists every key the YAML loader accepts."""

from __future__ import annotations

import re
from pathlib import Path

import sympy as sp
import yaml

from physlab.grading.refcheck import evaluate_reference
from physlab.problems import load_file
from physlab.problems.yaml_format import KNOWN_KEYS

DOC = Path(__file__).resolve().parents[2] / "docs" / "problems.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_documented_example_loads_and_its_reference_is_what_it_says(tmp_path):
    example = blocks("yaml")[0]
    f = tmp_path / "isco.yaml"
    f.write_text(example)
    [p] = load_file(f)
    assert p.id == "schwarzschild_isco" and p.extra["tags"] == ["general relativity"]
    r = evaluate_reference(p)
    M = sp.Symbol("M", positive=True)
    assert r.issues == [] and sp.simplify(r.value[0] - 6 * M) == 0 and sp.simplify(r.value[1] - sp.sqrt(8) / 3) == 0


def test_every_documented_form_of_the_answer_gives_the_same_value(tmp_path):
    example = yaml.safe_load(blocks("yaml")[0])
    forms = [yaml.safe_load(b)["answer"] for b in blocks("yaml")[1:] if b.lstrip().startswith("answer:")]
    assert len(forms) == 2
    expected = evaluate_reference(load_file(_write(tmp_path / "a.yaml", example))[0]).value
    for i, form in enumerate(forms):
        [p] = load_file(_write(tmp_path / f"f{i}.yaml", {**example, "answer": form}))
        assert all(sp.simplify(a - b) == 0 for a, b in zip(evaluate_reference(p).value, expected)), form


def test_the_key_table_lists_every_key_the_loader_accepts():
    table = DOC.read_text().split("| key | what it holds |")[1].split("\n\n")[0]
    documented = set(re.findall(r"`([a-z_]+)`", "\n".join(line.split("|")[1] for line in table.splitlines()[2:])))
    assert set(KNOWN_KEYS) - {"answer_format"} <= documented  # answer_format: the old name of reference_format


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
