"""`physlab grade PROBLEM CANDIDATE [--json]`: exit codes and JSON fields."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from physlab.cli import app

from .helpers import QEC_FILE

QEC_SPEC = f"{QEC_FILE}#quantum_error_correction_main"
REF = ("1 - (sp.Rational(16, 25)* p**2 - sp.Rational(128, 125)* p**3 + sp.Rational(2048, 3375)* p**4"
       " - sp.Rational(32768, 253125)* p**5) / (1 - sp.Rational(68, 15)* p + sp.Rational(704, 75)* p**2"
       " - sp.Rational(32768, 3375)* p**3 + sp.Rational(253952, 50625)* p**4 - sp.Rational(262144, 253125)* p**5)")
CODE = "import sympy as sp\n\ndef answer(p):\n    return {}\n"

pytestmark = pytest.mark.skipif(not QEC_FILE.is_file(), reason="shared CritPt data not available")


@pytest.fixture
def cli(grading_sandbox, monkeypatch):
    """The CLI in-process, on the session's warm sandbox."""
    import physlab.cli.grade as grading_cli

    monkeypatch.setattr(grading_cli, "command_sandbox", lambda: grading_sandbox)
    runner = CliRunner()

    def run(*args):
        return runner.invoke(app, list(args))

    return run


def test_correct_python_file_exit_0(cli, tmp_path):
    cand = tmp_path / "answer.py"
    cand.write_text(CODE.format(REF))
    res = cli("grade", QEC_SPEC, str(cand), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["verdict"] == "correct" and out["reason"]


def test_markdown_uses_last_block_exit_1(cli, tmp_path):
    cand = tmp_path / "reply.md"
    cand.write_text("Draft:\n```python\n" + CODE.format(REF) + "```\n\nFinal:\n```python\n"
                    + CODE.format("2*p") + "```\n")
    res = cli("grade", QEC_SPEC, str(cand), "--json")
    assert res.exit_code == 1
    assert json.loads(res.output)["verdict"] == "incorrect"
    cand.write_text("Draft:\n```python\n" + CODE.format("2*p") + "```\n\nFinal:\n```python\n"
                    + CODE.format(REF) + "```\n")
    assert cli("grade", QEC_SPEC, str(cand)).exit_code == 0


def test_invalid_exit_1_plain_output(cli, tmp_path):
    cand = tmp_path / "answer.py"
    cand.write_text("import sympy as sp\n\ndef answer(p):\n    F = ...\n    return F\n")
    res = cli("grade", QEC_SPEC, str(cand))
    assert res.exit_code == 1
    assert res.output.startswith("invalid:")


def _physlab(*args):
    return subprocess.run([sys.executable, "-m", "physlab", *args], capture_output=True, text=True, timeout=120)


def test_problem_without_reference_exit_2(tmp_path):
    prob = tmp_path / "open.yaml"
    prob.write_text("problem: What is the mass of the electron?\n")
    cand = tmp_path / "a.py"
    cand.write_text(CODE.format("1"))
    res = _physlab("grade", str(prob), str(cand))
    assert res.returncode == 2
    assert "no reference" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_missing_candidate_and_bad_problem_exit_2(tmp_path):
    res = _physlab("grade", QEC_SPEC, str(tmp_path / "missing.py"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    res = _physlab("grade", str(tmp_path / "nope.yaml"), str(tmp_path / "missing.py"))
    assert res.returncode == 2 and "Traceback" not in res.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e300"])
def test_unusable_timeout_is_bad_usage_not_a_traceback(tmp_path, value):
    cand = tmp_path / "a.py"
    cand.write_text(CODE.format("p"))
    res = _physlab("grade", QEC_SPEC, str(cand), "--timeout", value)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "--timeout" in res.stderr


def test_reference_that_fails_names_the_files_answer_field(tmp_path):
    prob = tmp_path / "broken.yaml"
    prob.write_text("problem: q\nanswer_template: |\n  def answer(x):\n      y = ...\n      return y\n"
                    "answer: y = 1/0\n")
    cand = tmp_path / "a.py"
    cand.write_text("def answer(x):\n    return x\n")
    res = _physlab("grade", str(prob), str(cand))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert f"{prob}: field 'answer':" in res.stderr and "ZeroDivisionError" in res.stderr, res.stderr


def test_json_says_what_was_compared_for_code_and_written_answers(cli, tmp_path):
    cand = tmp_path / "answer.py"
    cand.write_text(CODE.format("2*p"))
    out = json.loads(cli("grade", QEC_SPEC, str(cand), "--json").output)
    assert out["verdict"] == "incorrect" and out["path"] == "code"
    assert out["method"] and out["candidate_normalized"] == "2*p" and "p" in out["reference_normalized"]
    prob = tmp_path / "bohr.yaml"
    prob.write_text("problem: Ground-state energy of hydrogen in the Bohr model.\n"
                    "answer: 'E_1 = -\\frac{1}{2}\\alpha^2 m_e c^2'\nreference_format: latex\n")
    reply = tmp_path / "reply.md"
    reply.write_text("Using the virial theorem...\n\n**Final answer:** $E_1 = -\\tfrac12 \\alpha^2 m_e c^2$\n")
    res = cli("grade", str(prob), str(reply), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["verdict"] == "correct" and out["path"] == "latex" and out["problem"]
    assert out["reference_normalized"].startswith("E_1 = ") and out["candidate_normalized"].startswith("E_1 = ")
    plain = cli("grade", str(prob), str(reply))
    assert plain.output.startswith("correct:") and "compared (latex" in plain.output
