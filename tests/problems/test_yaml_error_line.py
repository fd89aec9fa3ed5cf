"""A YAML mistake is reported at the line where it was made: a quote or a list opened on line 2
and never closed is line 2 (PyYAML finds out only at the end of the file, or where the runaway
string happens to stop), while errors PyYAML places right keep their line."""

from __future__ import annotations

import pytest

from physlab.errors import ProblemFileError
from physlab.problems import load_file


def message(tmp_path, text: str) -> str:
    f = tmp_path / "mine.yaml"
    f.write_text(text)
    with pytest.raises(ProblemFileError) as exc:
        load_file(f)
    said = str(exc.value)
    assert "\n" not in said and str(f) in said
    return said


@pytest.mark.parametrize("text", [
    'problem: What is F?\nanswer: "1 - 3*p**2\nrtol: 0.01\nsource: me\n',         # the closing quote forgotten
    "problem: What is F?\nanswer: '1 - 3*p**2\nrtol: 0.01\nsource: me\n",
    'problem: What is F?\nanswer: "1 - 3*p**2\nrtol: 0.01\nsource: "me"\nid: x\n',  # ... and a later quote closes it
    'problem: What is F?\ntags: [qec, noise\nanswer: 1 - 3*p**2\nsource: me\n',     # a list never closed
])
def test_an_unclosed_quote_or_list_on_line_2_is_reported_at_line_2(tmp_path, text):
    said = message(tmp_path, text)
    assert "line 2" in said and "line 5" not in said.split("line 2")[0], said


def test_errors_pyyaml_places_right_keep_their_line(tmp_path):
    said = message(tmp_path, "id: x\nsource: me\nproblem: Find x: the value\nanswer: 1\n")
    assert "line 3, column 16" in said and "line 2" not in said
    said = message(tmp_path, 'id: x\nproblem: "Find $\\sigma$ here"\nanswer: 1\n')
    assert "line 2" in said and "escape" in said
