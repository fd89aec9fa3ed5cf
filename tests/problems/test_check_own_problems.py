"""`physlab problems check` on a physicist's own problems: a reference that cannot match its
template, misspelt keys and a template with nothing to fill are refused with one line each; a
directory is checked file by file, every file reported, a summary at the end, exit 1 if any is bad."""

from __future__ import annotations

import pytest

from physlab.cli import main
from physlab.errors import ProblemFileError
from physlab.problems import load_file

TWO_VALUES = """
problem: ISCO radius and specific energy of a Schwarzschild black hole of mass M.
answer_template: |
  import sympy as sp
  M = sp.symbols("M", positive=True)
  def answer(M):
      r = ...
      E = ...
      return r, E
"""


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.mark.parametrize("answer, expected", [
    ("answer: 6*M\n", ["returns 2 values (r, E)", "one expression"]),
    ("answer: r = 6*M\n", ["fills r, E", "E is not assigned"]),
    ("answer: (6*M, sp.sqrt(8)/3, 1)\n", ["returns 2 values (r, E)", "3 values"]),
    ("answer: 6.0\n", ["returns 2 values (r, E)", "one number"]),
])
def test_reference_that_cannot_match_a_two_value_template_is_refused(write, answer, expected):
    f = write("isco.yaml", TWO_VALUES + answer)
    with pytest.raises(ProblemFileError) as exc:
        load_file(f)
    msg = str(exc.value)
    assert "\n" not in msg and "field 'answer'" in msg and str(f) in msg
    for part in expected:
        assert part in msg, msg


def test_matching_reference_still_loads(write):
    f = write("isco.yaml", TWO_VALUES + "answer: |\n  r = 6*M\n  E = sp.sqrt(8)/3\n")
    [p] = load_file(f)
    assert p.reference_format == "python"
    f = write("isco2.yaml", TWO_VALUES + "answer: (6*M, sp.sqrt(8)/3)\n")
    assert load_file(f)[0].gradable


def test_dict_template_against_tuple_reference_is_a_kind_mismatch(write):
    f = write("d.yaml", """
        problem: q
        answer_template: |
          def answer(x):
              a = ...
              b = ...
              return {"a": a, "b": b}
        answer: (x, 2*x)
        """)
    with pytest.raises(ProblemFileError, match="returns a mapping with keys a, b.*a tuple of 2 values"):
        load_file(f)


@pytest.mark.parametrize("key, suggestion", [("rtoll", "rtol"), ("tolerance", "rtol"), ("answer_templte", "answer_template"),
                                             ("soluton", "solution"), ("statement", "problem")])
def test_unknown_keys_are_refused_with_the_nearest_known_one(write, key, suggestion):
    f = write("k.yaml", f"problem: q\nanswer: 1.5\n{key}: 1e-3\n")
    with pytest.raises(ProblemFileError) as exc:
        load_file(f)
    msg = str(exc.value)
    assert f"field '{key}'" in msg and f"did you mean '{suggestion}'?" in msg and "\n" not in msg


def test_template_with_nothing_to_fill_is_refused(write):
    f = write("t.yaml", "problem: q\nanswer_template: |\n  def answer(M):\n      return 6*M\nanswer: 6*M\n")
    with pytest.raises(ProblemFileError, match=r"field 'answer_template'.*nothing to fill"):
        load_file(f)


def test_list_placeholders_count_as_blanks(write):
    """CritPt writes list answers as `energies = [...]`: that is something to fill."""
    f = write("l.yaml", "problem: q\nanswer_template: |\n  def answer():\n      energies = [...]\n"
                        "      overlaps = [...]\n      return energies, overlaps\n"
                        "answer: |\n  energies = [1.0, 2.0]\n  overlaps = [0.5, 0.25]\n")
    assert load_file(f)[0].gradable


def test_check_reports_every_file_of_a_directory(write, tmp_path, capsys):
    d = tmp_path / "mine"
    write("mine/a_good.yaml", TWO_VALUES + "answer: |\n  r = 6*M\n  E = sp.sqrt(8)/3\n")
    write("mine/b_arity.yaml", TWO_VALUES + "answer: 6*M\n")
    write("mine/c_typo.yaml", "problem: q\nanswer: 1.5\nrtoll: 1e-3\n")
    write("mine/d_nothing.yaml", "problem: q\nanswer_template: |\n  def answer():\n      return 1\nanswer: 1\n")
    write("mine/e_open.md", "# Is the vacuum stable?\n")
    # a whole function as the reference: only running it shows it returns one value, not two
    write("mine/f_call.yaml", TWO_VALUES + "answer: |\n  def answer(M):\n      return 6*M\n")
    code, out, err = run(["problems", "check", str(d)], capsys)
    assert code == 1 and "Traceback" not in out + err
    lines = out.splitlines()
    assert any(line.startswith("mine/a_good: ok") for line in lines), out
    assert any("b_arity.yaml" in line and "FAIL" in line and "one expression" in line for line in lines), out
    assert any("c_typo.yaml" in line and "did you mean 'rtol'?" in line for line in lines), out
    assert any("d_nothing.yaml" in line and "nothing to fill" in line for line in lines), out
    assert any(line.startswith("mine/e_open: ok") for line in lines), out
    assert any(line.startswith("mine/f_call: FAIL") and "returns 2 values (r, E)" in line
               and "gives 1 value" in line for line in lines), out
    assert lines[-1] == "6 files, 3 problems: 2 ok, 1 with a broken reference, 3 files that do not load"


def test_check_of_good_files_exits_0(write, tmp_path, capsys):
    write("ok/a.yaml", TWO_VALUES + "answer: |\n  r = 6*M\n  E = sp.sqrt(8)/3\n")
    code, out, _ = run(["problems", "check", str(tmp_path / "ok")], capsys)
    assert code == 0 and out.splitlines()[-1] == "1 file, 1 problem: 1 ok"


def test_check_reports_duplicate_ids_across_files(write, tmp_path, capsys):
    write("dup/a.yaml", "id: same\nproblem: q\n")
    write("dup/b.yaml", "id: same\nproblem: r\n")
    code, out, _ = run(["problems", "check", str(tmp_path / "dup")], capsys)
    assert code == 1 and "duplicate problem id 'same'" in out
