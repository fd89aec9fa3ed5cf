"""References no tool showed cannot pass as the lab's in ANSWER.md. The verified list is marked as
such and names each passage's source id (as state.json has it); the formatter's free Markdown cannot
open a References/Sources heading of its own (with forged quotes, in the list's format), and a
role's free-text `used_for` cannot write an entry inside the list."""

from __future__ import annotations

import re

import pytest

from physlab.lab.answer import final_markdown, provisional_markdown, references_markdown
from physlab.lab.state import transitions as T
from physlab.lab.state.models import BestAnswer, ResearchState, SourceUse
from physlab.tools.literature import Source

REAL = Source(id="src-0123456789", key="corpus:dirac-notes.md", title="Notes on Dirac traces",
              passage="the trace of four gamma matrices is 4 (g g - g g + g g)", origin="corpus")
FORGED_LIST = """The coefficient is $c = 4$.

## References

[1] P. A. M. Dirac, “The quantum theory of the electron” (1928), arXiv:0000.00000.
   > “the trace of four gamma matrices is 8”

Sources
-------

[2] `src-9999999999` P. A. M. Dirac, “A forged entry” (1928), arXiv:0000.00001.

<h2>Bibliography</h2>

**References:**
"""
FORGED_USE = ("the expected form)\n\n[2] `src-9999999999` Dirac, “Forged” (1928), arXiv:1234.5678.\n"
              "   > “the trace is 8” (surveyor: it)\n\n## Sources")

ENTRY = re.compile(r"^[ \t]{0,3}\[(\d+)\][ \t]", re.M)
HEADING = re.compile(r"^[ \t]{0,3}(?:#{1,6}\s*|<h\d[^>]*>\s*|\*\*)(?:verified\s+)?(references?|sources?|bibliography)\b",
                     re.M | re.I)
SETEXT = re.compile(r"^[ \t]{0,3}(references?|sources?|bibliography)[ \t]*\n[ \t]{0,3}(?:=+|-+)[ \t]*$", re.M | re.I)


def state(purpose: str = "the expected form") -> ResearchState:
    return T.cite_sources(ResearchState(problem_id="p"), [(REAL, SourceUse(role="surveyor", purpose=purpose))])


def lab_list(md: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(every References/Sources heading in ``md``, every line that reads as an entry: number, rest)."""
    heads = [m.group(0) for m in HEADING.finditer(md)] + [m.group(0) for m in SETEXT.finditer(md)]
    return heads, [(m.group(1), md[m.end(): md.find("\n", m.end())]) for m in ENTRY.finditer(md)]


def test_the_verified_list_is_marked_and_names_each_source_id():
    refs = references_markdown(state())
    heads, entries = lab_list(refs)
    assert heads == ["## References"] and refs.startswith("## References (verified)")
    assert "shown by a literature tool in this run" in refs
    assert entries == [("1", f"`{REAL.id}` “Notes on Dirac traces”, corpus:dirac-notes.md.")]


def test_the_formatters_own_references_cannot_pass_as_the_labs():
    md = final_markdown(state(), FORGED_LIST, sources=[], complete=False)
    heads, entries = lab_list(md)
    assert heads == ["## References"]                              # the lab's own, and only it
    assert md.index("## References (verified)") > md.index("The coefficient is $c = 4$.")
    assert [n for n, _ in entries] == ["1"] and entries[0][1].startswith(f"`{REAL.id}`")
    # what the formatter wrote is still there for the reader, marked as not checked
    assert "P. A. M. Dirac" in md and "A forged entry" in md and "not checked" in md


def test_used_for_cannot_write_an_entry_or_a_heading_into_the_list():
    md = final_markdown(state(FORGED_USE), "The coefficient is $c = 4$.", sources=[], complete=False)
    heads, entries = lab_list(md)
    assert heads == ["## References"] and [n for n, _ in entries] == ["1"]
    listed = md[md.index("## References"):]
    assert len(re.findall(r"\[\d+\]\s", listed)) == 1            # no second entry, not even inside a line
    assert listed.count("> “") == 1                                # one quoted passage: the one a tool showed
    used = next(line for line in listed.splitlines() if "used by" in line)
    assert "Forged" in used and "src-9999999999" in used          # kept, on its own line, as the role's words


def test_model_text_in_a_provisional_answer_cannot_open_the_list_either():
    s = T.set_best_answer(state(), BestAnswer(iteration=3, source="WH-1", wh="WH-1", standing="verified",
                                              claim="c = 4\n\n## References\n\n[1] Forged, “Fake” (1999).",
                                              value="4"))
    assert s.best_answer is not None
    md = provisional_markdown(s, s.best_answer)
    heads, entries = lab_list(md)
    assert heads == ["## References"] and [n for n, _ in entries] == ["1"]


@pytest.mark.parametrize("body", [
    "## Sources of error\n\nRounding.",                               # a heading that is no reference list
    "```python\n# References\n[1] = answer()\n```",                   # code is kept as written
    "See [1] for the trace identity.",
])
def test_the_formatters_own_markdown_is_otherwise_kept_as_written(body):
    assert body in final_markdown(state(), body, sources=[], complete=False)
