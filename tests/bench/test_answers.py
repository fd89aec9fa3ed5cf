"""Answers files (the CritPt export: test_critpt_export.py)."""

from __future__ import annotations

import json

import pytest

from physlab.bench.answers import load_answers
from physlab.errors import UserError


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
