"""A `--param prompt_file` made to stop the run: a template that renders forever, asks for a
terabyte, doubles through keys that refer to each other or through YAML aliases, or includes a
file. Templates are rendered in a limited child process with a deadline and an output cap; each
of these is one line naming the file (exit 2), never a hang, a host out of memory, or "a PhysLab
bug"."""

from __future__ import annotations

import subprocess

import pytest

from tests.capped import run_capped

CLI = "import runpy, sys; sys.argv = ['physlab', *sys.argv[1:]]; runpy.run_module('physlab', run_name='__main__')"
QEC = "examples/quantum_error_correction_main"

DOUBLING = "SYSTEM_PROMPT: '{{K0}}'\nPARSE_PROMPT: x\n" + "".join(
    f"K{i}: '{{{{K{i + 1}}}}}{{{{K{i + 1}}}}}'\n" for i in range(40)) + "K40: 'xxxxxxxx'\n"
ALIASES = ("a: &a ['x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x']\n"
           + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                     for p, c in zip("abcdefgh", "bcdefghi"))
           + "SYSTEM_PROMPT: '{{ i }}'\nPARSE_PROMPT: x\n")
BOMBS = {
    "renders forever": ("SYSTEM_PROMPT: '{% for i in range(100000) %}{% for j in range(100000) %}"
                        "{% for k in range(100000) %}{% endfor %}{% endfor %}{% endfor %}'\nPARSE_PROMPT: x\n",
                        "render"),
    "asks for a terabyte": ("SYSTEM_PROMPT: \"{{ 'x' * 1000000000000 }}\"\nPARSE_PROMPT: x\n", "render"),
    "keys that double each other": (DOUBLING, "characters"),
    "YAML aliases": (ALIASES, "aliases"),
    "an include": ("SYSTEM_PROMPT: \"{% include '/etc/passwd' %}\"\nPARSE_PROMPT: x\n", "include"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", BOMBS)
def test_a_hostile_prompt_file_is_one_line_naming_it(tmp_path, name):
    text, said = BOMBS[name]
    path = tmp_path / "prompt_template.yaml"
    path.write_text(text)
    try:
        done = run_capped(CLI, "solve", QEC, "--strategy", "two-step", "--model", "scripted:two-step-qec",
                          "--param", f"prompt_file={path}", "--workspace", str(tmp_path / "run"),
                          memory_mb=1024, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a prompt file that {name} held `physlab solve` past two minutes")
    err = done.stderr.decode()
    assert done.returncode == 2, err[-800:]
    line = err.strip()
    assert len(line.splitlines()) == 1, line
    assert "PhysLab bug" not in line and "prompt_file" in line and said in line
    assert "root:" not in line                                  # nothing of /etc/passwd is shown
