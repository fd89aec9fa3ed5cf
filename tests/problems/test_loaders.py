from __future__ import annotations

import json
import shutil

import pytest

from physlab.errors import ProblemFileError, UserError
from physlab.problems import Problem, load_directory, load_file, load_suite
from physlab.problems.suites import BUILTIN_DIR

from .conftest import SYMBOLIC_YAML

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def test_yaml_symbolic_problem(write):
    p = write("isco.yaml", SYMBOLIC_YAML)
    [prob] = load_file(p)
    assert prob.id == "isco"
    assert prob.reference == "r_isco = 6*M" and prob.reference_format == "python"
    assert prob.statement.startswith("Find the ISCO") and prob.solution == "Set V' = V'' = 0."
    assert prob.has_template and prob.gradable and prob.difficulty == 2 and prob.source == "test"
    assert prob.path == p.resolve() and prob.extra["format"] == "yaml"


@pytest.mark.parametrize(
    "answer, text, fmt",
    [
        ("0.25", "0.25", "number"),
        ("1.5e-3", "0.0015", "number"),
        ("6", "6", "number"),
        ("'\\frac{3}{2} M'", "\\frac{3}{2} M", "latex"),
        ("'$6M$'", "$6M$", "latex"),
        ("'3*sqrt(3)*M'", "3*sqrt(3)*M", "python"),
    ],
)
def test_yaml_reference_format_detection(write, answer, text, fmt):
    p = write("a.yaml", f"problem: x\nanswer: {answer}\n")
    [prob] = load_file(p)
    assert prob.reference_format == fmt
    if fmt != "number":
        assert prob.reference == text
    else:
        assert float(prob.reference) == float(text)


def test_yaml_explicit_format_overrides_detection(write):
    [prob] = load_file(write("a.yaml", "problem: x\nanswer: 6 GM/c^2\nreference_format: latex\n"))
    assert prob.reference_format == "latex" and prob.reference == "6 GM/c^2"


def test_yaml_numeric_with_rtol_and_images(write, tmp_path):
    write("figs/f1.png", PNG)
    p = write("num.yml", "id: my-num\nproblem: p\nanswer: 3.3125\nrtol: 1e-3\nimages: [figs/f1.png]\n"
              "answer_template: |\n  def answer():\n      C = ...\n      return C\n")
    [prob] = load_file(p)
    assert prob.id == "my-num" and prob.rtol == 1e-3
    assert prob.images == [(tmp_path / "figs/f1.png").resolve()] and prob.images[0].is_absolute()


def test_yaml_open_question(write):
    [prob] = load_file(write("open.yaml", "problem: Is the vacuum stable?\n"))
    assert prob.reference is None and prob.answer_template is None and not prob.gradable


def test_yaml_list_of_problems(write):
    p = write("many.yaml", "- id: a\n  problem: one\n  answer: 1\n- id: b\n  problem: two\n")
    assert [x.id for x in load_file(p)] == ["a", "b"]


def test_yaml_metadata_is_kept_and_answer_like_metadata_hidden(write):
    [prob] = load_file(write("k.yaml", "problem: q\ntags: [gr]\nmetadata: {answer_latex: '\\frac12', year: 2024}\n"))
    assert prob.extra["answer_key_metadata"] == {"answer_latex": "\\frac12"} and prob.extra["tags"] == ["gr"]
    assert prob.extra["metadata"] == {"year": 2024}
    assert "answer_key_metadata" not in prob.public().extra and prob.public().extra["metadata"] == {"year": 2024}


def test_json_single_problem_uses_yaml_format(write):
    [prob] = load_file(write("one.json", json.dumps({"problem": "q", "answer": "x**2"})))
    assert prob.reference_format == "python" and prob.id == "one"


def test_markdown_open_question(write):
    [prob] = load_file(write("my question.md", "# Dark matter\n\nWhat is it made of?\n"))
    assert prob.id == "my_question" and prob.extra["title"] == "Dark matter"
    assert prob.statement.startswith("# Dark matter") and not prob.gradable and not prob.has_template


def test_critpt_example_file():
    f = BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json"
    probs = load_file(f)
    assert [p.id for p in probs] == ["quantum_error_correction_main"] + [f"quantum_error_correction_sub_{i}" for i in range(3)]
    main = probs[0]
    assert main.reference.startswith("F_logical = 1 - (sp.Rational(16, 25)")
    assert main.reference_format == "python" and "def answer(p)" in main.answer_template
    assert main.extra["problem_type"] == "main" and main.source == "CritPt/quantum_error_correction"
    assert "answer_key_answer_code" in main.extra and "answer_key_answer_code" not in main.public().extra
    assert probs[1].reference == "F_physical = (1 - sp.Rational(12, 15)* p)**2"


def test_critpt_without_answer_is_ungraded(write):
    data = {"dataset_name": "C1", "problems": [{
        "problem_id": "C1_main", "problem_type": "main", "problem_description": "Compute x.",
        "code_template": "def answer():\n    x = ...\n    return x\n", "answer_code": "", "answer_only_code": ""}]}
    [prob] = load_file(write("C1.json", json.dumps(data)))
    assert prob.id == "C1_main" and prob.reference is None and prob.has_template


def _tpbench_records():
    return [
        {"problem_id": "tp 1", "domain": "Cosmology", "difficulty_level": "level 3",
         "problem": "Find the horizon.", "solution": "Integrate.", "answer": "\\frac{2}{H_0}",
         "code_answer_requirements": "Write def expected_answer(H0) returning the horizon.",
         "reference_implementation": "import numpy as np\n\ndef expected_answer(H0: float) -> float:\n    return 2/H0\n"},
        {"problem_id": "tp2", "problem": "Second.", "answer": "$x^2$"},
    ]


def test_tpbench_json_and_jsonl(write):
    recs = _tpbench_records()
    a = load_file(write("tp.json", json.dumps(recs)))
    b = load_file(write("tp.jsonl", "\n".join(json.dumps(r) for r in recs) + "\n"))
    assert [p.id for p in a] == [p.id for p in b] == ["tp_1", "tp2"]
    first = a[0]
    assert first.reference == "\\frac{2}{H_0}" and first.reference_format == "latex" and first.difficulty == 3
    assert "def answer(H0: float)" in first.answer_template and "import numpy as np" in first.answer_template
    assert "return 2/H0" not in first.answer_template  # the implementation is the answer key
    assert "return 2/H0" in first.extra["answer_key_reference_implementation"]
    pub = first.public().model_dump_json()
    assert "2/H0" not in pub and "H_0}" not in pub and first.solution and "Integrate" not in pub
    assert a[1].answer_template is None


def test_directory_suite_is_recursive_and_skips_docs(write, tmp_path):
    write("suite/a.yaml", "problem: one\nanswer: 1\n")
    write("suite/sub/b.md", "Open question?\n")
    write("suite/README.md", "# About this suite\n")
    write("suite/LICENSE", "MIT\n")
    write("suite/.hidden/c.yaml", "problem: hidden\n")
    write("suite/notes.txt", "ignored\n")
    probs = load_directory(tmp_path / "suite", suite="suite")
    assert sorted(p.id for p in probs) == ["a", "b"] and {p.suite for p in probs} == {"suite"}
    assert sorted(p.id for p in load_suite(str(tmp_path / "suite"))) == ["a", "b"]


def test_directory_duplicate_ids_are_an_error(write, tmp_path):
    write("s/x.yaml", "id: same\nproblem: one\n")
    write("s/deeper/y.yaml", "id: same\nproblem: two\n")
    with pytest.raises(ProblemFileError, match="duplicate problem id 'same'"):
        load_directory(tmp_path / "s")


def test_hipho_sample_suite_loads_with_images():
    probs = load_suite("hipho_sample")
    assert len(probs) == 5 and all(p.reference_format == "latex" for p in probs)
    with_images = [p for p in probs if p.images]
    assert with_images and all(i.is_absolute() and i.is_file() for p in with_images for i in p.images)
    first = probs[0]
    assert first.statement.startswith("General Data Sheet") and first.reference.startswith("\\boxed{")
    assert first.extra["answer_types"] == ["Expression"] and first.extra["points"] == [0.2]


def test_hipho_missing_image_is_reported(tmp_path):
    src = BUILTIN_DIR / "hipho_sample" / "IPhO_2025.json"
    shutil.copy(src, tmp_path / "h.json")  # figures not copied alongside
    with pytest.raises(ProblemFileError) as exc:
        load_file(tmp_path / "h.json")
    assert "image_question" in str(exc.value) and "image not found" in str(exc.value)


def test_public_never_contains_answer_key(write):
    builtin = load_suite("examples") + load_suite("hipho_sample")
    [yaml_prob] = load_file(write("isco.yaml", SYMBOLIC_YAML))
    for prob in [*builtin, yaml_prob]:
        pub = prob.public()
        assert pub.reference is None and pub.solution is None and pub.reference_format is None
        assert pub.path is None
        assert not any(k.startswith("answer_key") for k in pub.extra)
        dumped = pub.model_dump_json()
        if prob.reference_format == "python":
            assert json.dumps(prob.reference)[1:-1] not in dumped
        for marking in prob.extra.get("answer_key_marking", []):
            for line in marking:
                assert json.dumps(line)[1:-1] not in dumped
        for ans in prob.extra.get("answer_key_answers", []):
            assert json.dumps(ans)[1:-1] not in dumped
        assert isinstance(pub, Problem) and pub.statement == prob.statement


def test_unknown_suite_lists_close_matches():
    with pytest.raises(UserError, match="did you mean examples"):
        load_suite("exampels")


def test_json_list_of_yaml_format_problems(write):
    data = [{"id": "a", "problem": "q", "answer": "x = 1",
             "answer_template": "def answer():\n    x = ...\n    return x\n"}, {"id": "b", "problem": "open"}]
    probs = load_file(write("list.json", json.dumps(data)))
    assert [p.extra["format"] for p in probs] == ["yaml", "yaml"] and probs[0].has_template
