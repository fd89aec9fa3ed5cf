"""CritPt, HiPhO and TPBench as Hugging Face publishes them: `physlab problems import KIND DIR`
reads a dataset directory in the Hub's layout (parquet/JSON files under data/, a dataset card),
and `hf:OWNER/NAME` fetches one by name when online. The directories here are small local copies
written in that layout (no network)."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from physlab.cli import main
from physlab.grading.refcheck import evaluate_reference
from physlab.problems import resolve_problem
from physlab.problems.suites import BUILTIN_DIR

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CARD = """---
license: apache-2.0
configs:
- config_name: default
  data_files:
  - split: {split}
    path: data/{split}-*
---
# {name}
"""


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def hub_dir(root, name, rows, split="train"):
    """A dataset directory as the Hub stores it: README.md card + data/<split>-00000-of-00001.parquet."""
    d = root / name
    (d / "data").mkdir(parents=True)
    (d / "README.md").write_text(CARD.format(split=split, name=name))
    (d / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
    pq.write_table(pa.Table.from_pylist(rows), d / "data" / f"{split}-00000-of-00001.parquet")
    return d


def critpt_rows():
    """CritPt-Benchmark/CritPt's columns: the challenge JSON's problems, metadata flattened to
    metadata_* columns, no dataset_name; the test set's answers are empty."""
    challenge = json.loads((BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json").read_text())
    main_problem = challenge["problems"][0]
    meta = main_problem["metadata"]
    row = {k: v for k, v in main_problem.items() if k != "metadata"}
    row.update({"problem_index": None, "testcases": None, "metadata_settings": json.dumps(meta["settings"]),
                "metadata_tag": meta["tag"], "metadata_problem_setup": meta["problem_setup"],
                "metadata_notebook_path": meta["notebook_path"]})
    hidden = dict(row, problem_id="Challenge_7_main", answer_code="", answer_only_code="",
                  metadata_notebook_path="data/public_test_challenges/Challenge_7.ipynb",
                  problem_description="Find the critical coupling of a model.",
                  code_template="import sympy as sp\n\ndef answer():\n    g_c = ...\n    return g_c\n")
    return [row, hidden]


def test_import_critpt_from_a_hub_directory(tmp_path, capsys):
    d = hub_dir(tmp_path, "CritPt", critpt_rows())
    code, out, err = run(["problems", "import", "critpt", str(d), "--name", "crit"], capsys)
    assert code == 0, err
    assert "imported 2 critpt problems (1 with a reference) as suite 'crit'" in out
    main_p = resolve_problem("crit/quantum_error_correction_main")
    assert main_p.extra["format"] == "critpt" and main_p.source == "CritPt/quantum_error_correction"
    assert "[[4,2,2]]" in main_p.statement and "def answer(p)" in main_p.answer_template
    # the reference evaluates to CritPt's published answer (the built-in copy of the same challenge)
    builtin = resolve_problem("examples/quantum_error_correction_main")
    import sympy as sp
    assert sp.simplify(evaluate_reference(main_p).value - evaluate_reference(builtin).value) == 0
    hidden = resolve_problem("crit/Challenge_7_main")
    assert hidden.reference is None and hidden.source == "CritPt/Challenge_7"
    # the stored suite is PhysLab's own layout: it loads without pyarrow or the Hub
    code, out, _ = run(["problems", "check", "crit"], capsys)
    assert code == 0 and out.splitlines()[-1] == "2 files, 2 problems: 2 ok"


def test_import_tpbench_from_a_hub_directory(tmp_path, capsys):
    rows = [{"problem_id": "1", "domain": "Cosmology", "difficulty_level": "Level 1",
             "problem": "In a flat matter-dominated universe, what is the age $t_0$ in terms of $H_0$?",
             "solution": "a ~ t^{2/3}, H = 2/(3t).", "answer": "$t_0 = \\frac{2}{3 H_0}$",
             "code_answer_requirements": "Provide the answer as a Python function of H0.",
             "reference_implementation": "def age(H0):\n    return 2/(3*H0)\n"}]
    d = hub_dir(tmp_path, "TPBench", rows, split="public")
    code, out, err = run(["problems", "import", "tpbench", str(d)], capsys)
    assert code == 0, err
    assert "imported 1 tpbench problems (1 with a reference) as suite 'TPBench'" in out
    p = resolve_problem("TPBench/1")
    assert p.reference_format == "latex" and "def answer(H0)" in p.answer_template and p.difficulty == 1
    assert "return 2/(3*H0)" in p.extra["answer_key_reference_implementation"]


def test_import_hipho_from_a_hub_directory_with_figures(tmp_path, capsys):
    d = tmp_path / "HiPhO"
    shutil.copytree(BUILTIN_DIR / "hipho_sample", d / "data", ignore=shutil.ignore_patterns("README.md", "LICENSE"))
    (d / "README.md").write_text("---\nlicense: mit\n---\n# HiPhO\n")
    code, out, err = run(["problems", "import", "hipho", str(d)], capsys)
    assert code == 0, err
    assert "imported 5 hipho problems (5 with a reference) as suite 'HiPhO'" in out
    with_figures = [p for p in __import__("physlab").problems.load_suite("HiPhO") if p.images]
    assert with_figures and all(img.is_file() for p in with_figures for img in p.images)


def test_a_split_can_be_chosen(tmp_path, capsys):
    rows = critpt_rows()
    d = hub_dir(tmp_path, "CritPt", rows[:1])
    pq.write_table(pa.Table.from_pylist(rows[1:]), d / "data" / "test-00000-of-00001.parquet")
    code, out, err = run(["problems", "import", "critpt", str(d), "--split", "test", "--name", "t"], capsys)
    assert code == 0 and "imported 1 critpt problems (0 with a reference)" in out, err
    code, _, err = run(["problems", "import", "critpt", str(d), "--split", "validation"], capsys)
    assert code == 2 and "no data files for split 'validation'" in err
    assert "splits there: test, train" in err


def test_rows_of_the_wrong_benchmark_are_one_line(tmp_path, capsys):
    d = hub_dir(tmp_path, "NotCritPt", [{"question": "q", "answer": "1"}])
    code, out, err = run(["problems", "import", "critpt", str(d)], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "train-00000-of-00001.parquet" in err and "problem_id" in err


def test_by_name_downloads_the_dataset_with_huggingface_hub(tmp_path, capsys, monkeypatch):
    hub = pytest.importorskip("huggingface_hub")
    local = hub_dir(tmp_path, "snapshot", critpt_rows())
    asked = {}

    def fake_snapshot_download(repo_id, **kwargs):  # the Hub itself cannot be reached from tests
        asked.update(repo_id=repo_id, **kwargs)
        return str(local)

    monkeypatch.setattr(hub, "snapshot_download", fake_snapshot_download)
    code, out, err = run(["problems", "import", "critpt", "hf:CritPt-Benchmark/CritPt"], capsys)
    assert code == 0, err
    assert asked["repo_id"] == "CritPt-Benchmark/CritPt" and asked["repo_type"] == "dataset"
    assert "as suite 'CritPt'" in out
    manifest = json.loads((tmp_path / "home" / "suites" / "CritPt" / ".physlab-suite.json").read_text())
    assert manifest["imported_from"] == "hf:CritPt-Benchmark/CritPt"


def test_by_name_offline_is_one_clear_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    code, _, err = run(["problems", "import", "critpt", "hf:CritPt-Benchmark/CritPt"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "CritPt-Benchmark/CritPt" in err and "offline" in err


def test_by_name_without_huggingface_hub_says_what_to_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # as if not installed
    code, _, err = run(["problems", "import", "tpbench", "hf:ZhiqiGao/TPBench"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "pip install 'physlab[hf]'" in err
