"""`physlab sandbox run SCRIPT` — the fixed CLI contract."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CONTRACT = {"exit_code", "stdout", "stderr", "timed_out", "duration_s", "truncated"}


def physlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from physlab.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120)


def test_json_contract(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sympy\nprint(sympy.sqrt(8))\nraise SystemExit(3)\n")
    out = physlab("sandbox", "run", str(script), "--json")
    assert out.returncode == 3, out.stderr
    data = json.loads(out.stdout)
    assert CONTRACT <= set(data)
    assert data["exit_code"] == 3 and data["stdout"] == "2*sqrt(2)\n" and not data["timed_out"]


def test_plain_output_and_timeout_exit_124(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text("print('start', flush=True)\nwhile True:\n    pass\n")
    out = physlab("sandbox", "run", str(script), "--timeout", "1", "--backend", "rlimit")
    assert out.returncode == 124
    assert "start" in out.stdout and "timed out" in out.stderr


@pytest.mark.parametrize("args", [["missing.py"], ["{script}", "--backend", "nope"],
                                  ["{script}", "--timeout", "-1"]])
def test_bad_usage_is_one_line_exit_2(tmp_path, args):
    script = tmp_path / "ok.py"
    script.write_text("print(1)\n")
    out = physlab("sandbox", "run", *[a.format(script=script) for a in args])
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
