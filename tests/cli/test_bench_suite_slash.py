"""`physlab bench run examples/` -- the slash a shell's tab completion adds, in a checkout whose own
examples/ folder holds no problem files -- runs the built-in suite and says so; a directory with no
problem files and no suite of its name is one line, and leaves no empty database behind."""

from __future__ import annotations

import sqlite3

import pytest

from physlab.problems.suites import suite_meant


def test_a_suite_name_with_a_slash_is_the_suite_unless_a_folder_of_problems_is_meant(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert suite_meant("examples") == ("examples", None)
    assert suite_meant("examples/") == ("examples", None)                  # no such folder here: the suite
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "qec_reference_answer.py").write_text("print(1)\n")
    spec, note = suite_meant("examples/")                                  # a folder without problems
    assert spec == "examples" and note and "built-in suite 'examples'" in note and "no problem files" in note
    (tmp_path / "examples" / "mine.yaml").write_text("problem: What is 1+1?\nanswer: 2\n")
    assert suite_meant("examples/") == ("examples/", None)                 # a folder of problems: that folder
    assert suite_meant("mydir/") == ("mydir/", None)                       # not a suite's name: as given


def physlab(capsys, *args: str) -> tuple[int, str, str]:
    from physlab.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_a_folder_without_problems_is_one_line_and_no_database(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x\n")
    code, _, err = physlab(capsys, "bench", "run", "notes/", "--models", "scripted:echo", "--no-progress")
    assert code == 2 and len(err.splitlines()) == 1 and "no problem files" in err, err
    assert not (tmp_path / "results.sqlite").exists()


@pytest.mark.slow
def test_bench_run_examples_slash_runs_the_builtin_suite_and_says_so(tmp_path, monkeypatch, capsys):
    from physlab.problems import load_suite

    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "qec_reference_answer.py").write_text("print(1)\n")
    code, out, err = physlab(capsys, "bench", "run", "examples/", "--models", "scripted:echo", "--no-progress")
    assert "running the built-in suite 'examples'" in err, err
    con = sqlite3.connect(tmp_path / "results.sqlite")
    cells = con.execute("SELECT count(*), count(DISTINCT suite), max(suite) FROM cells").fetchone()
    assert cells == (len(load_suite("examples")), 1, "examples")            # the same cells as `bench run examples`
