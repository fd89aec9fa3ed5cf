"""Answers files and the CritPt submission payload."""

from __future__ import annotations

import json

import pytest

from physlab.bench.answers import critpt_payload, load_answers
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.cli import main
from physlab.errors import UserError
from physlab.problems.model import Problem


def test_answers_file_forms(tmp_path):
    f = tmp_path / "a.yaml"
    f.write_text("p1: 'x**2'\np2: 3.5\np3: {reference: 'a+b', rtol: 0.01}\n")
    got = load_answers(f)
    assert got["p1"] == {"reference": "x**2"}
    assert got["p2"] == {"reference": "3.5", "reference_format": "number"}
    assert got["p3"] == {"reference": "a+b", "rtol": 0.01}
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"p1": {"answer": 1}}))
    with pytest.raises(UserError, match=r"b.json: field 'p1'"):
        load_answers(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(UserError, match="mapping"):
        load_answers(bad)
    with pytest.raises(UserError, match="not found"):
        load_answers(tmp_path / "none.yaml")


def _db_with_answers(tmp_path, groups=(("oneshot", "scripted:a"),)):
    st = ResultsStore(tmp_path / "r.sqlite")
    probs = [Problem(id=f"Challenge_{i}", statement="s", answer_template="def answer():\n    return ...",
                     extra={"critpt_problem_id": f"Challenge_{i}_main"}) for i in (1, 2)]
    st.add_problems(probs, suite="critpt")
    w = worker_id()
    for strat, model in groups:
        for p in probs:
            for r in (0, 1):
                spec = CellSpec(problem_id=p.id, strategy=strat, model=model, repeat=r, suite="critpt")
                st.add_cells([spec])
                st.claim(spec.key, w)
                code = None if (p.id == "Challenge_2" and r == 0) else f"def answer():\n    return {r}"
                st.finish(spec.key, w, CellResult(status="complete", answer_code=code))
    return st


def test_critpt_payload_one_submission_per_challenge(tmp_path):
    st = _db_with_answers(tmp_path)
    payload = critpt_payload(st)
    subs = payload["submissions"]
    assert [s["problem_id"] for s in subs] == ["Challenge_1_main", "Challenge_2_main"]
    assert subs[0]["generated_code"] == "```python\ndef answer():\n    return 0\n```"
    # repeat 0 of Challenge_2 had no code: the next repeat's answer is used
    assert "return 1" in subs[1]["generated_code"]
    assert all(s["model"] == "scripted:a" for s in subs)


def test_critpt_export_needs_a_group_when_several(tmp_path):
    st = _db_with_answers(tmp_path, groups=(("oneshot", "scripted:a"), ("rsa", "scripted:a")))
    with pytest.raises(UserError, match="--strategy"):
        critpt_payload(st)
    assert len(critpt_payload(st, strategy="rsa")["submissions"]) == 2
    st.close()
    out = tmp_path / "sub.json"
    with pytest.raises(SystemExit) as e:
        main(["bench", "export-critpt", "--db", str(tmp_path / "r.sqlite"), "--out", str(out)])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["bench", "export-critpt", "--db", str(tmp_path / "r.sqlite"), "--out", str(out),
              "--strategy", "oneshot", "--model", "scripted:a"])
    assert e.value.code == 0
    assert len(json.loads(out.read_text())["submissions"]) == 2
