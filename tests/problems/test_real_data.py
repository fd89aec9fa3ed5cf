"""The public benchmark data in ../shared/data (skipped cleanly when absent)."""

from __future__ import annotations

import ast
import json

from physlab.grading.refcheck import evaluate_reference
from physlab.problems import load_directory, load_file, load_suite


def test_all_70_critpt_challenges_load_and_templates_define_answer(shared_data):
    d = shared_data / "critpt" / "public_test_challenges"
    files = sorted(d.glob("*.json"))
    assert len(files) == 70
    probs = load_directory(d, suite="critpt")
    assert len(probs) == 70 and len({p.id for p in probs}) == 70
    for p in probs:
        tree = ast.parse(p.answer_template)  # independent of the loader's own check
        funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "answer"]
        assert funcs, p.id
        assert p.reference is None and p.statement.strip()  # answers are private for the test set
        assert p.extra["format"] == "critpt" and p.source.startswith("CritPt/Challenge_")


def test_critpt_example_references_evaluate(shared_data):
    probs = load_file(shared_data / "critpt" / "example_challenges" / "quantum_error_correction.json")
    assert len(probs) == 4
    import sympy as sp

    for p in probs:
        r = evaluate_reference(p)
        assert r.issues == [] and r.params == ("p",)
        assert sp.simplify(r.value.subs(sp.Symbol("p"), 0) - 1) == 0  # no errors => fidelity 1


def test_hipho_ipho2025_loads_39_problems_with_images(shared_data):
    f = shared_data / "hipho" / "IPhO_2025.json"
    raw = json.loads(f.read_text())
    assert len(raw) == 40 and "information" in raw[0]
    probs = load_file(f)
    assert len(probs) == 39
    assert [p.id for p in probs] == [item["id"] for item in raw[1:]]
    for p, item in zip(probs, raw[1:]):
        assert p.statement.startswith("General Data Sheet") and item["question"].strip() in p.statement
        assert p.reference_format == "latex" and p.reference.count("\\boxed") == len(item["answer"])
        assert len(p.images) == len(item["image_question"])
        assert all(i.is_absolute() and i.is_file() for i in p.images)
        assert p.extra["answer_key_marking"] == item["marking"]
        assert p.extra["points"] == item["points"] and p.extra["units"] == item["unit"]
        pub = p.public().model_dump_json()
        for scheme in item["marking"]:
            for line in scheme:
                assert json.dumps(line)[1:-1] not in pub
    assert sum(bool(p.images) for p in probs) == sum(bool(i["image_question"]) for i in raw[1:]) > 25


def test_import_real_data_then_list_by_name(shared_data):
    from physlab.problems import import_suite

    name, dest, probs = import_suite("hipho", shared_data / "hipho" / "IPhO_2025.json", name="ipho25")
    assert name == "ipho25" and len(probs) == 39
    again = load_suite("ipho25")
    assert len(again) == 39 and all(i.is_file() and dest in i.parents for p in again for i in p.images)
    name, _, probs = import_suite("critpt", shared_data / "critpt" / "public_test_challenges")
    assert name == "public_test_challenges" and len(load_suite(name)) == 70
