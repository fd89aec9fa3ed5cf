"""Every malformed problem file gives ONE line naming the file, the field and what was expected,
and the CLI exits 2 without a traceback."""

from __future__ import annotations

import json

import pytest

from physlab.cli import main

TEMPLATE = "answer_template: |\n  def answer(M):\n      r = ...\n      return r\n"

CASES = {
    # name: (file name, content, substrings the one-line message must contain)
    "missing_problem": ("p.yaml", "answer: 6\n", ["field 'problem'", "missing", "non-empty string"]),
    "empty_problem": ("p.yaml", "problem: '  '\n", ["field 'problem'", "empty"]),
    "problem_not_string": ("p.yaml", "problem: [1, 2]\n", ["field 'problem'", "expected a string, got a list"]),
    "template_without_answer": ("p.yaml", "problem: q\nanswer_template: |\n  def solve(M):\n      return 1\n",
                                ["field 'answer_template'", "def answer(...)"]),
    "template_syntax_error": ("p.yaml", "problem: q\nanswer_template: |\n  import sympy as sp\n  def answer(M:\n      return 1\n",
                              ["field 'answer_template'", "does not parse", "line 2"]),
    "reference_not_python": ("p.yaml", "problem: q\n" + TEMPLATE + "answer: r = 6 *\n",
                             ["field 'answer'", "not parseable Python", "line 1", "reference_format: latex"]),
    "reference_python_forced": ("p.yaml", "problem: q\nanswer: 6 GM/c^2\nreference_format: python\n",
                                ["field 'answer'", "not parseable Python"]),
    "reference_wrong_names": ("p.yaml", "problem: q\n" + TEMPLATE + "answer: x = 6*M\n",
                              ["field 'answer'", "assigns x", "template fills r"]),
    "reference_bad_type": ("p.yaml", "problem: q\nanswer: {a: 1}\n", ["field 'answer'", "got a mapping"]),
    "reference_bad_format_name": ("p.yaml", "problem: q\nanswer: '1'\nreference_format: mathml\n",
                                  ["field 'reference_format'", "python, number, latex"]),
    "image_missing": ("p.yaml", "problem: q\nimages: [fig/nope.png]\n", ["field 'images'", "image not found: fig/nope.png"]),
    "images_wrong_type": ("p.yaml", "problem: q\nimages: 3\n", ["field 'images'", "expected a list of file paths"]),
    "rtol_not_number": ("p.yaml", "problem: q\nanswer: 1\nrtol: tight\n", ["field 'rtol'", "expected a number"]),
    "rtol_negative": ("p.yaml", "problem: q\nanswer: 1\nrtol: -0.1\n", ["field 'rtol'", "positive"]),
    "rtol_infinite": ("p.yaml", "problem: q\nanswer: 1\nrtol: .inf\n", ["field 'rtol'", "between 0 and 1"]),
    "rtol_percent": ("p.yaml", "problem: q\nanswer: 1\nrtol: 5\n", ["field 'rtol'", "between 0 and 1", "got 5"]),
    "answer_nan": ("p.yaml", "problem: q\nanswer: .nan\n", ["field 'answer'", "expected a finite number"]),
    "answer_inf": ("p.yaml", "problem: q\nanswer: -.inf\n", ["field 'answer'", "expected a finite number"]),
    "answer_nan_text": ("p.yaml", "problem: q\nanswer: 'nan'\nreference_format: number\n",
                        ["field 'answer'", "expected a finite number, got 'nan'"]),
    "difficulty_not_int": ("p.yaml", "problem: q\ndifficulty: hard\n", ["field 'difficulty'", "expected an integer"]),
    "bad_id": ("p.yaml", "id: a b/c\nproblem: q\n", ["field 'id'", "letters, digits"]),
    "yaml_not_mapping": ("p.yaml", "- just\n- strings\n", ["field '[0].id'", "needs an 'id'"]),
    "yaml_scalar": ("p.yaml", "hello\n", ["expected a mapping", "got a string"]),
    "yaml_syntax": ("p.yaml", "problem: [unclosed\n", ["invalid YAML", "line"]),
    "empty_yaml": ("p.yaml", "", ["file is empty"]),
    "json_syntax": ("p.json", '{"problem": ', ["invalid JSON", "line 1"]),
    "json_scalar": ("p.json", "42", ["expected a JSON object or list, got an integer"]),
    "json_unknown_shape": ("p.json", '{"foo": 1}', ["unrecognised problem file", "CritPt"]),
    "critpt_problems_not_list": ("c.json", json.dumps({"dataset_name": "C", "problems": {"a": 1}}),
                                 ["field 'problems'", "expected a non-empty list", "got a mapping"]),
    "critpt_dataset_name_missing": ("c.json", json.dumps({"problems": [
        {"problem_id": "C_main", "problem_description": "d", "code_template": "def answer():\n    x = ...\n    return x\n"}]}),
        ["field 'dataset_name'", "missing"]),
    "critpt_template_missing": ("c.json", json.dumps({"dataset_name": "C", "problems": [
        {"problem_id": "C_main", "problem_description": "d"}]}), ["field 'problems[0].code_template'", "missing"]),
    "critpt_template_no_answer": ("c.json", json.dumps({"dataset_name": "C", "problems": [
        {"problem_id": "C_main", "problem_description": "d", "code_template": "def f():\n    return 1\n"}]}),
        ["field 'problems[0].code_template'", "def answer(...)"]),
    "critpt_reference_bad": ("c.json", json.dumps({"dataset_name": "C", "problems": [
        {"problem_id": "C_main", "problem_description": "d", "code_template": "def answer():\n    x = ...\n    return x\n",
         "answer_only_code": "x = (1"}]}), ["field 'problems[0].answer_only_code'", "not parseable Python"]),
    "hipho_answer_missing": ("h.json", json.dumps([{"information": "sheet"}, {"id": "H1", "context": "c", "question": "q",
                                                  "marking": [], "answer": []}]),
                             ["field '[1].answer'", "\\boxed"]),
    "hipho_question_wrong_type": ("h.json", json.dumps([{"information": "sheet"}, {"id": "H1", "context": "c",
                                                       "question": 5, "marking": [], "answer": ["\\boxed{1}"]}]),
                                  ["field '[1].question'", "expected a string, got an integer"]),
    "hipho_image_missing": ("h.json", json.dumps([{"information": "s"}, {"id": "H1", "context": "c", "question": "q",
                                                 "marking": [], "answer": ["\\boxed{1}"], "image_question": ["img/x.png"]}]),
                            ["field '[1].image_question'", "image not found"]),
    "yaml_duplicate_ids": ("p.yaml", "- id: a\n  problem: q\n- id: a\n  problem: r\n",
                           ["duplicate problem id 'a'", "unique in a file"]),
    "critpt_duplicate_ids": ("c.json", json.dumps({"dataset_name": "C", "problems": [
        {"problem_id": "C_main", "problem_description": "d", "code_template": "def answer():\n    x = ...\n    return x\n"}] * 2}),
        ["duplicate problem id 'C_main'", "unique in a file"]),
    "jsonl_bad_line": ("t.jsonl", '{"problem": "a", "answer": "1"}\n{oops\n', ["invalid JSON on line 2"]),
    "markdown_empty": ("q.md", "   \n", ["file is empty"]),
    "unsupported_suffix": ("q.txt", "What?", ["unsupported problem file type '.txt'"]),
    "not_utf8": ("p.yaml", b"problem: \xff\xfe\n", ["not UTF-8"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_problem_file_is_one_clear_line(case, write, capsys):
    name, content, expected = CASES[case]
    path = write(name, content)
    with pytest.raises(SystemExit) as exc:
        main(["problems", "show", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and str(path) in lines[0]
    for piece in expected:
        assert piece in lines[0], (piece, lines[0])


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["problems", "show", "examples/no_such_problem"], "unknown problem id 'no_such_problem' in suite 'examples'"),
        (["problems", "show", "examples/gr_photon_sphre"], "close matches: gr_photon_sphere"),
        (["problems", "show", "nosuite/x"], "'nosuite' is not a known suite"),
        (["problems", "show", "missing.yaml"], "missing.yaml: file not found"),
        # a missing file inside an existing directory is "not found", not a scan of the directory
        (["problems", "show", "sub/missing.yaml"], "sub/missing.yaml: file not found"),
        (["problems", "list", "exampels"], "did you mean examples"),
        (["problems", "import", "critpt", "/nonexistent/dir"], "/nonexistent/dir: not found"),
        # a directory where a problem file is expected: said so, the directory is not read
        (["problems", "show", "sub"], "sub: expected a problem file, got a directory"),
        (["problems", "show", "./sub"], "sub: expected a problem file, got a directory"),
        (["grade", "sub", "candidate.py"], "sub: expected a problem file, got a directory"),
        # '/name' that does not exist: never the working directory read as a suite
        (["problems", "show", "/nonexistent_physlab_problem"], "/nonexistent_physlab_problem: not found"),
        (["grade", "/nonexistent_physlab_problem", "candidate.py"], "/nonexistent_physlab_problem: not found"),
        (["problems", "show", "#some_id"], "expected FILE#ID"),
        # DIR/ID in a directory without problem files (a suite's name taken for a path): the suites
        (["problems", "show", "empty/qec"], "no problem files there; built-in and imported suites: examples"),
    ],
)
def test_bad_specs_are_one_line(argv, expected, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "broken.yaml").write_text("problem: [unclosed\n")  # must not be read
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and expected in err, err


def test_multi_problem_file_needs_an_id(capsys):
    from physlab.problems.suites import BUILTIN_DIR

    f = BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json"
    with pytest.raises(SystemExit) as exc:
        main(["problems", "show", str(f)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "holds 4 problems" in err and "#ID" in err and "quantum_error_correction_sub_0" in err


def test_import_wrong_kind_is_rejected(write, tmp_path, capsys):
    write("d/a.yaml", "problem: q\n")
    with pytest.raises(SystemExit) as exc:
        main(["problems", "import", "critpt", str(tmp_path / "d")])
    assert exc.value.code == 2
    assert "expected critpt problems only" in capsys.readouterr().err
