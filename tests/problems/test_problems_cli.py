from __future__ import annotations

import json

import pytest

from physlab.cli import main
from physlab.problems import load_suite, resolve_problem
from physlab.problems.suites import BUILTIN_DIR

from .conftest import SYMBOLIC_YAML


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_list_suites_and_problems(capsys):
    code, out, _ = run(["problems", "list"], capsys)
    assert code == 0 and "examples" in out and "builtin" in out
    code, out, _ = run(["problems", "list", "--json"], capsys)
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["examples"]["problems"] == len(load_suite("examples")) >= 16
    code, out, _ = run(["problems", "list", "examples"], capsys)
    assert code == 0 and "quantum_error_correction_main" in out and "gr_photon_sphere" in out
    code, out, _ = run(["problems", "list", "examples", "--json"], capsys)
    rows = json.loads(out)
    assert {"id", "source", "difficulty", "template", "reference"} <= set(rows[0])
    assert all(r["template"] and r["reference"] for r in rows)


def test_show_hides_reference_unless_asked(capsys):
    code, out, _ = run(["problems", "show", "examples/quantum_error_correction_main"], capsys)
    assert code == 0 and "[[4,2,2]]" in out and "def answer(p)" in out
    assert "253952" not in out and "Reference" not in out
    code, out, _ = run(["problems", "show", "examples/quantum_error_correction_main", "--json"], capsys)
    data = json.loads(out)
    assert data["reference"] is None and "253952" not in out
    code, out, _ = run(["problems", "show", "examples/quantum_error_correction_main", "--with-answer"], capsys)
    assert code == 0 and "sp.Rational(253952, 50625)" in out and "Reference (python)" in out


def test_show_hipho_hides_marking(capsys):
    prob = load_suite("hipho_sample")[0]
    code, out, _ = run(["problems", "show", f"hipho_sample/{prob.id}"], capsys)
    assert code == 0 and "Award" not in out and "\\boxed" not in out
    code, out, _ = run(["problems", "show", f"hipho_sample/{prob.id}", "--with-answer"], capsys)
    assert "Award" in out and "\\boxed" in out


def test_show_file_and_file_hash_id(write, capsys):
    p = write("isco.yaml", SYMBOLIC_YAML)
    code, out, _ = run(["problems", "show", str(p)], capsys)
    assert code == 0 and "ISCO radius" in out and "6*M" not in out
    f = BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json"
    code, out, _ = run(["problems", "show", f"{f}#quantum_error_correction_sub_1"], capsys)
    assert code == 0 and "Subproblem 1" in out


def test_import_critpt_and_hipho_then_list(tmp_path, capsys, write):
    # a small CritPt directory (copied from the built-in example) and the HiPhO sample with figures
    d = tmp_path / "critpt_dir"
    d.mkdir()
    (d / "qec.json").write_text((BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json").read_text())
    code, out, err = run(["problems", "import", "critpt", str(d), "--name", "mycrit"], capsys)
    assert code == 0, err
    assert "imported 4 critpt problems (4 with a reference) as suite 'mycrit'" in out
    code, out, _ = run(["problems", "list", "mycrit", "--json"], capsys)
    assert len(json.loads(out)) == 4
    assert resolve_problem("mycrit/quantum_error_correction_sub_0").suite == "mycrit"
    # importing again under the same name needs --force
    code, _, err = run(["problems", "import", "critpt", str(d), "--name", "mycrit"], capsys)
    assert code == 2 and "--force" in err
    code, _, _ = run(["problems", "import", "critpt", str(d), "--name", "mycrit", "--force"], capsys)
    assert code == 0
    code, out, err = run(["problems", "import", "hipho", str(BUILTIN_DIR / "hipho_sample" / "IPhO_2025.json")], capsys)
    assert code == 0, err and "suite 'IPhO_2025'" in out
    probs = load_suite("IPhO_2025")
    assert len(probs) == 5 and any(p.images for p in probs)
    home = tmp_path / "home" / "suites" / "IPhO_2025"
    assert all(home in i.parents and i.is_file() for p in probs for i in p.images)
    code, out, _ = run(["problems", "list", "--json"], capsys)
    kinds = {r["name"]: r["kind"] for r in json.loads(out)}
    assert kinds["mycrit"] == kinds["IPhO_2025"] == "imported"
    # a built-in name cannot be shadowed
    code, _, err = run(["problems", "import", "critpt", str(d), "--name", "examples"], capsys)
    assert code == 2 and "built-in suite" in err


def test_failed_import_writes_nothing(tmp_path, write, capsys):
    write("d/good.yaml", "problem: q\n")
    write("d/bad.yaml", "problem: q\nanswer_template: 'x = 1'\n")
    code, _, err = run(["problems", "import", "yaml", str(tmp_path / "d"), "--name", "half"], capsys)
    assert code == 2 and "bad.yaml" in err
    assert not (tmp_path / "home" / "suites" / "half").exists()


def test_check_command(write, tmp_path, capsys):
    code, out, _ = run(["problems", "check", "examples"], capsys)
    assert code == 0 and "examples/sm_ising_1d: ok (python)" in out
    n = len(load_suite("examples"))
    assert out.splitlines()[-1].endswith(f"{n} problems: {n} ok")
    write("s/good.yaml", SYMBOLIC_YAML)
    write("s/stray.yaml", SYMBOLIC_YAML.replace("r_isco = 6*M", "r_isco = 6*M*sp.Symbol('G')"))
    code, out, _ = run(["problems", "check", str(tmp_path / "s")], capsys)
    assert code == 1 and "s/stray: FAIL" in out and "s/good: ok" in out
    assert out.splitlines()[-1] == "2 files, 2 problems: 1 ok, 1 with a broken reference"


def test_readme_reference_candidate_matches_the_reference():
    """examples/qec_reference_answer.py (the README's grade demo) really encodes CritPt's answer."""
    import runpy
    from pathlib import Path

    import sympy as sp

    from physlab.grading.refcheck import evaluate_reference

    repo = Path(__file__).resolve().parents[2]
    ns = runpy.run_path(str(repo / "examples" / "qec_reference_answer.py"))
    p = sp.Symbol("p")
    ref = evaluate_reference(resolve_problem("examples/quantum_error_correction_main")).value
    assert sp.simplify(ns["answer"](p) - ref) == 0


def test_problems_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["problems", "--help"])
    out = capsys.readouterr().out
    summary = next(line for line in out.splitlines() if "Problems and suites" in line)
    for verb in ("list", "show", "check", "import"):
        assert verb in summary, summary
