"""Problem files shaped to exhaust the reader: YAML aliases that expand a few hundred bytes into
billions of values, JSON, YAML and Python nested hundreds of thousands deep. Each gets one line
naming the file; `problems check` goes on to the files beside it. The bombs run in a child
process with a memory cap, so a regression fails the test instead of taking the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from physlab.cli import main
from physlab.problems import load_file

SRC = str(Path(__file__).resolve().parents[2] / "src")
VALID = "id: fine\nproblem: What is 6*7?\nanswer: 42\n"


def alias_bomb(levels: int = 10, width: int = 9) -> str:
    """The billion laughs in YAML: each level repeats the one before ``width`` times (564 bytes)."""
    lines = ["problem: hi", "metadata:", f"  a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def physlab(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in a child with 1.5 GB of address space and a minute: a bomb cannot take the host."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))

    env = {**os.environ, "PYTHONPATH": SRC, "PHYSLAB_HOME": str(cwd / "home")}
    return subprocess.run([sys.executable, "-m", "physlab", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, preexec_fn=cap)


def test_a_yaml_alias_bomb_is_refused_in_one_line(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    assert bomb.stat().st_size < 600
    out = physlab("problems", "show", str(bomb), cwd=tmp_path)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bomb) in lines[0] and "alias" in lines[0], out.stderr[-2000:]


def test_aliases_that_share_a_template_between_problems_still_load(write):
    """What aliases are for: one template written once for several problems."""
    p = write("two.yaml", """
        - id: a
          problem: Radius of the ISCO for mass $M$.
          answer_template: &t |
            def answer(M):
                r = ...
                return r
          answer: r = 6*M
        - id: b
          problem: Radius of the photon sphere for mass $M$.
          answer_template: *t
          answer: r = 3*M
        """)
    a, b = load_file(p)
    assert a.answer_template == b.answer_template and "def answer(M)" in b.answer_template


PUBLIC_OF_A_SHARED_STRUCTURE = """
from pathlib import Path
from physlab.llm.prompt import problem_prompt_parts
from physlab.problems.model import Problem
level = ["x"] * 9
for _ in range(12):  # 9**13 leaves once expanded: no machine has the memory
    level = [level] * 9
prob = Problem(id="p", statement="Say hi.", reference="1", reference_format="number", path=Path("p.yaml"),
               extra={"metadata": {"shared": level}, "answer_key_metadata": {"answer": 1}})
pub = prob.public()
assert pub.reference is None and pub.path is None and "answer_key_metadata" not in pub.extra
assert pub.extra["metadata"] is prob.extra["metadata"]
print(problem_prompt_parts(prob)[0].strip())
"""


def test_a_public_view_shares_metadata_instead_of_copying_it(tmp_path):
    """Every prompt is built from problem.public(): a shared structure (as YAML aliases make, or
    Python code builds) is handed on as it is, never expanded into every prompt."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))

    out = subprocess.run([sys.executable, "-c", PUBLIC_OF_A_SHARED_STRUCTURE], env={**os.environ, "PYTHONPATH": SRC},
                         capture_output=True, text=True, timeout=60, preexec_fn=cap)
    assert out.returncode == 0 and out.stdout == "Say hi.\n", out.stderr[-2000:]


@pytest.mark.parametrize("name, text, what", [
    ("deep.json", '{"problem": "hi", "metadata": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
    ("deep.jsonl", '{"problem": "hi", "answer": ' + "[" * 200_000 + "]" * 200_000 + "}\n", "nested too deeply"),
    ("deep.yaml", "problem: hi\nmetadata: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    # deep enough to pass the JSON reader, too deep to be written back as JSON (a results database)
    ("deep_marking.json", '[{"information": "s"}, {"id": "H1", "context": "c", "question": "q", '
     '"answer": ["\\\\boxed{1}"], "marking": ' + "[" * 900 + "]" * 900 + "}]", "more than 64 levels deep"),
    ("itself.yaml", "problem: hi\nmetadata: &m {again: *m}\n", "nested too deeply"),
    # 40 levels, then the same 40 again under 30 more: 72 deep, though no path is written out that long
    ("shared_deep.yaml", "problem: hi\nmetadata:\n  first: &p " + "[" * 40 + "x" + "]" * 40 + "\n  later: "
     + "[" * 30 + "*p" + "]" * 30 + "\n", "more than 64 levels deep"),
    ("deep_template.yaml", "problem: hi\nanswer_template: |\n  def answer():\n      x = " + "-" * 100_000
     + "1\n      return x\n", "nested too deeply"),
])
def test_a_file_nested_too_deeply_is_one_line_and_check_goes_on(tmp_path, name, text, what, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / name).write_text(text)
    (suite / "valid.yaml").write_text(VALID)
    code, _, err = run(["problems", "show", str(suite / name)], capsys)
    assert code == 2 and "a PhysLab bug" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and what in lines[0], err[-2000:]

    code, out, err = run(["problems", "check", str(suite)], capsys)
    assert code == 1 and "a PhysLab bug" not in err, err[-2000:]
    report = out.splitlines()
    assert any(name in line and "FAIL" in line and what in line for line in report), out
    assert any(line.endswith("fine: ok (number)") for line in report), out


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    got = capsys.readouterr()
    return exc.value.code, got.out, got.err
