"""Issue #32, the host: `physlab problems check` evaluates a file's template and reference in the
sandbox, as grading does, never in-process. Before the fix a hostile Hugging Face-layout dataset
read OPENAI_API_KEY through its template code (and `problems check` printed it back)."""

from __future__ import annotations

import json

import pytest

from physlab.grading.refcheck import evaluate_reference
from physlab.problems import load_file

from .test_hf_import import critpt_rows, hub_dir, run

KEY = "sk-test-canary-0123456789"


def _hostile_template(canary) -> str:
    # the template's preamble runs where references are evaluated; it reads the key, writes it to
    # the host, and makes the reference a symbol named after it (printed back by the check)
    return ("import os, sympy as sp\n"
            f"open({str(canary)!r}, 'w').write(os.environ.get('OPENAI_API_KEY', 'no key'))\n"
            "p = sp.symbols('p')\n"
            "LEAK = sp.Symbol('key_' + os.environ.get('OPENAI_API_KEY', 'none'))\n\n"
            "def answer(p):\n    F = ...\n    return F\n")


def test_a_hostile_dataset_cannot_read_the_key_through_problems_check(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    canary = tmp_path / "stolen.txt"
    row, _ = critpt_rows()
    row = dict(row, code_template=_hostile_template(canary), answer_only_code="F_logical = 1 - p + LEAK")
    row["code_template"] = row["code_template"].replace("F = ...\n    return F", "F_logical = ...\n    return F_logical")
    d = hub_dir(tmp_path, "Evil", [row])
    code, out, err = run(["problems", "import", "critpt", str(d), "--name", "evil"], capsys)
    assert code == 0, err
    code, out, err = run(["problems", "check", "evil"], capsys)
    assert KEY not in out + err
    assert not canary.exists() or KEY not in canary.read_text()


def test_problems_check_still_finds_what_is_wrong_with_a_reference(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("problem: s\nanswer_template: |\n  import sympy as sp\n  def answer(x):\n"
                 "      y = ...\n      return y\nanswer: y = x + sp.Symbol('q')\n")
    code, out, _ = run(["problems", "check", str(f)], capsys)
    assert code == 1 and "not answer() parameters: q" in out, out
    f.write_text("problem: s\nanswer_template: |\n  import sympy as sp\n  def answer(x):\n"
                 "      y = ...\n      return y\nanswer: y = 1/undefined_name\n")
    code, out, _ = run(["problems", "check", str(f)], capsys)
    assert code == 1 and "NameError" in out, out


def test_a_reference_that_hangs_is_reported_not_waited_for(tmp_path):
    f = tmp_path / "hang.yaml"
    f.write_text("problem: s\nanswer_template: |\n  import sympy as sp\n  def answer(x):\n"
                 "      y = ...\n      return y\nanswer: |\n  while True:\n      pass\n  y = x\n")
    (prob,) = load_file(f)
    with pytest.raises(ValueError, match="did not finish"):
        evaluate_reference(prob, timeout_s=2.0)


def test_reference_values_come_back_as_data(tmp_path):
    """The value a check reports is rebuilt from the sandbox's answer tree (SymPy objects, never a
    string evaluated on the host)."""
    import sympy as sp

    f = tmp_path / "ok.yaml"
    f.write_text("problem: s\nanswer_template: |\n  import sympy as sp\n  x = sp.Symbol('x', positive=True)\n"
                 "  def answer(x):\n      y = ...\n      z = ...\n      return {'y': y, 'z': z}\n"
                 "answer: |\n  y = sp.sqrt(x**2)\n  z = sp.Rational(1, 3)\n")
    (prob,) = load_file(f)
    r = evaluate_reference(prob)
    assert r.issues == [] and r.params == ("x",)
    assert r.value["y"] == sp.Symbol("x", positive=True) and r.value["z"] == sp.Rational(1, 3)
    json.dumps(r.issues)
