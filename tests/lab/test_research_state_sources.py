"""References no tool showed cannot pass as the lab's in RESEARCH_STATE.md either (issue #45, item 6).
Its Sources section is the lab's list, marked verified, each entry with the source id state.json has;
what a role said it used a passage for sits on its own escaped line, and no model text anywhere in the
file (a finding, a derivation, a review) can open a Sources/References heading or write an entry."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from physlab.lab.answer import final_markdown
from physlab.lab.state.models import Evidence, Review
from physlab.lab.state.render import render_state
from tests.lab.test_answer_references import FORGED_LIST, FORGED_USE, REAL, state

HEADING = re.compile(r"^[ \t]{0,3}(?:#{1,6}\s*|<h\d[^>]*>\s*|\*\*)(?:verified\s+)?(references?|sources?|bibliography)\b",
                     re.M | re.I)
SETEXT = re.compile(r"^[ \t]{0,3}(references?|sources?|bibliography)[ \t]*\n[ \t]{0,3}(?:=+|-+)[ \t]*$", re.M | re.I)
# an entry of the list: a line (a list item or not, bold or not) opening with an unescaped [n]
ENTRY = re.compile(r"^[ \t]{0,3}(?:[-*+][ \t]+)?(?:\*\*)?\[(\d+)\]", re.M)


def lab_list(md: str) -> tuple[list[str], list[str]]:
    """(every References/Sources heading in ``md``, the number of every line that reads as an entry)."""
    heads = [m.group(0) for m in HEADING.finditer(md)] + [m.group(0) for m in SETEXT.finditer(md)]
    return heads, [m.group(1) for m in ENTRY.finditer(md)]


def test_the_sources_section_is_marked_verified_and_names_each_source_id():
    md = render_state(state())
    heads, entries = lab_list(md)
    assert heads == ["## Sources"] and "## Sources (verified)" in md
    assert entries == ["1"]
    entry = next(line for line in md.splitlines() if ENTRY.match(line))
    assert f"`{REAL.id}`" in entry and "Notes on Dirac traces" in entry
    assert "shown by a literature tool in this run" in md


def test_used_for_cannot_write_an_entry_or_a_heading_into_the_sources():
    md = render_state(state(FORGED_USE))
    heads, entries = lab_list(md)
    assert heads == ["## Sources"] and entries == ["1"]
    listed = md[md.index("## Sources (verified)"):]
    assert listed.count("passage: “") == 1 and listed.count("“") == 2  # one passage (a tool's) and one title
    used = next(line for line in listed.splitlines() if "used by the surveyor" in line)
    assert "Forged" in used and "src-9999999999" in used  # kept, on its own line, as the role's words


def test_model_text_elsewhere_in_the_file_cannot_open_a_sources_list():
    forged = "c = 4\n\n## Sources (verified)\n\n- **[2]** `src-9999999999` Forged"
    s = state().model_copy(update={
        "evidence": [Evidence(id="EV-1", target="RQ-1", role="researcher", confidence="exact", findings=forged,
                              derivation=FORGED_LIST)],
        "reviews": [Review(id="RV-1", wh="WH-1", verdict="VERIFIED", reasoning="ok\n\nSources\n-------\n\n[3] `src-1` x")]})
    md = render_state(s)
    heads, entries = lab_list(md)
    assert heads == ["## Sources"] and entries == ["1"]
    assert md.index("## Sources (verified)") > md.index("A forged entry")  # the lab's list comes after
    assert "not checked" in md and "A forged entry" in md                    # the roles' words stay, marked


@pytest.mark.slow
def test_a_heading_line_built_to_backtrack_renders_in_linear_time():
    # "### # # # ... y" and "**a**" then spaces: heading and bold-line patterns that backtracked over
    # every '#' or space took minutes at 100 KB (a derivation is kept whole; a reply may bring 1 MiB).
    # Rendered in a process killed after a minute: linear rendering takes about a second.
    code = ("from physlab.lab.state.render import render_state\n"
            "from physlab.lab.answer import final_markdown\n"
            "from tests.lab.test_answer_references import state\n"
            "from physlab.lab.state.models import Evidence\n"
            "bomb = '### ' + '# ' * 50_000 + 'y\\n' + '**a**' + ' ' * 50_000 + ':' + ' ' * 50_000 + 'z\\n'\n"
            "s = state().model_copy(update={'evidence': [Evidence(id='EV-1', target='RQ-1', role='researcher',"
            " confidence='exact', findings='c', derivation=bomb)]})\n"
            "assert 'y' in render_state(s) and 'z' in final_markdown(s, bomb, sources=[], complete=False)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# Forged lists a line-by-line reading missed, as a CommonMark renderer (GitHub's, the dashboard's) shows them.
HIDDEN = {
    "a fence its list item closes": "- a\n  ```\n- b\n\n## References (verified)\n\n[1] `src-9999999999` Forged",
    "a heading inside a quote": "> ## References (verified)\n>\n> [1] `src-9999999999` Forged",
    "a heading that is a link": "## [References (verified)](#refs)\n\n[1] `src-9999999999` Forged",
    "a heading written with an entity": "## &#82;eferences (verified)\n\n- **[1]** `src-9999999999` Forged",
    "carriage returns for line breaks": "c = 4\r\r## Sources (verified)\r\r[1] `src-9999999999` Forged",
    "a bold line in a list": "* **References:**\n\n1. [1] `src-9999999999` Forged",
}


def shown(md: str) -> tuple[list[str], list[str]]:
    """What a reader sees in ``md`` rendered: the reference-list headings (a line of bold too), and the
    entries under the last of them."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark", {"html": True}).render(md)
    heads = [(m.end(), re.sub(r"<[^>]+>", "", m.group(2) or m.group(3)).strip())
             for m in re.finditer(r"<h(\d)>(.*?)</h\1>|<(?:p|li)>\s*<strong>([^<]*)</strong>\s*</(?:p|li)>", html, re.S)]
    listed = [(end, text) for end, text in heads if HEADING.match("## " + text)]
    under = html[listed[-1][0]:] if listed else ""
    return [text for _, text in listed], re.findall(r"<(?:p|li)>\s*(?:<strong>)?\[(\d+)\]", under)


@pytest.mark.parametrize("forged", HIDDEN.values(), ids=HIDDEN.keys())
def test_a_forged_list_hidden_from_a_line_by_line_reading_is_found_as_a_reader_sees_it(forged):
    answer = final_markdown(state(), f"The coefficient is $c = 4$.\n\n{forged}\n", sources=[], complete=False)
    assert shown(answer) == (["References (verified)"], ["1"])  # the lab's list, and only it
    s = state().model_copy(update={"evidence": [Evidence(id="EV-1", target="RQ-1", role="researcher",
                                                         confidence="exact", findings="c = 4", derivation=forged)]})
    assert shown(render_state(s)) == (["Sources (verified)"], ["1"])
    assert "Forged" in answer and "Forged" in render_state(s)  # the words stay, as text
