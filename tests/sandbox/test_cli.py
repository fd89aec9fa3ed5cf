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
                                  ["{script}", "--timeout", "-1"], ["{script}", "--timeout", "inf"],
                                  ["{script}", "--timeout", "nan"], ["{script}", "--timeout", "1e300"]])
def test_bad_usage_is_one_line_exit_2(tmp_path, args):
    script = tmp_path / "ok.py"
    script.write_text("print(1)\n")
    out = physlab("sandbox", "run", *[a.format(script=script) for a in args])
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_traceback_shows_the_script_not_the_sandbox(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("def f():\n    return 1 / 0\n\nf()\n")
    out = physlab("sandbox", "run", str(script))
    assert out.returncode == 1
    assert "ZeroDivisionError" in out.stderr and "main.py\", line 4" in out.stderr
    assert "zygote" not in out.stderr and "exec(code" not in out.stderr, out.stderr


def test_memory_beyond_the_kernel_limit_runs_unlimited(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("print('hello')\n")
    out = physlab("sandbox", "run", str(script), "--memory-mb", str(10**14), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["stdout"] == "hello\n"


LOADED = "import sys\nprint(sorted(m for m in ('sympy', 'numpy', 'scipy', 'matplotlib') if m in sys.modules))\n"


def test_a_script_run_from_the_command_line_pays_only_for_what_it_imports(tmp_path):
    """`sandbox run` starts one worker for one script: it preloads the stack's modules the script
    names (as the lab's warm workers have them), not the whole stack (issue 44: seconds of CPU for a
    `print(1+1)`)."""
    plain = tmp_path / "plain.py"
    plain.write_text(LOADED)
    out = physlab("sandbox", "run", str(plain))
    assert (out.returncode, out.stdout) == (0, "[]\n"), out.stderr
    numeric = tmp_path / "numeric.py"
    numeric.write_text("from numpy import linalg\n" + LOADED)
    out = physlab("sandbox", "run", str(numeric))
    assert (out.returncode, out.stdout) == (0, "['numpy']\n"), out.stderr
