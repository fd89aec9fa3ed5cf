"""A multiple-choice problem (``choices:``): the loader reads the option letters and a reference
among them, refuses anything else with one line, and the grader grades the letter a reply names."""

from __future__ import annotations

import pytest

from physlab.cli import main
from physlab.problems import load_file

STATEMENT = "problem: 'Which speed? (A) c (B) c/2 (C) 2c (D) 0'\n"


@pytest.mark.parametrize("choices,answer,letters,reference", [
    ("[A, B, C, D]", "A", ["A", "B", "C", "D"], "A"),
    ("[a, b, c]", "'(b)'", ["A", "B", "C"], "B"),
    ("ABCD", "[A, C]", ["A", "B", "C", "D"], "A, C"),
    ("{A: 'c', B: 'c/2'}", "'\\text{(b)}'", ["A", "B"], "B"),
])
def test_choices_and_their_reference_load(tmp_path, capsys, choices, answer, letters, reference):
    f = tmp_path / "mc.yaml"
    f.write_text(STATEMENT + f"choices: {choices}\nanswer: {answer}\n")
    [p] = load_file(f)
    assert p.choices == letters and p.reference == reference and p.reference_format == "latex"
    assert p.public().choices == letters  # the options are part of the question
    with pytest.raises(SystemExit) as exc:
        main(["problems", "check", str(f)])
    assert exc.value.code == 0, capsys.readouterr()


@pytest.mark.parametrize("content,words", [
    ("choices: [A, A]\nanswer: A\n", ["field 'choices'", "distinct option letters"]),
    ("choices: [A, BB]\nanswer: A\n", ["field 'choices'", "distinct option letters"]),
    ("choices: 4\nanswer: A\n", ["field 'choices'", "distinct option letters"]),
    ("choices: [A, B]\nanswer: C\n", ["field 'answer'", "one or more of the letters A, B"]),
    ("choices: [A, B]\nanswer: '2c'\n", ["field 'answer'", "one or more of the letters A, B"]),
])
def test_bad_choices_give_one_line(tmp_path, capsys, content, words):
    f = tmp_path / "mc.yaml"
    f.write_text(STATEMENT + content)
    with pytest.raises(SystemExit) as exc:
        main(["problems", "show", str(f)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and err.startswith("error: "), err
    assert all(w in err for w in words), err
