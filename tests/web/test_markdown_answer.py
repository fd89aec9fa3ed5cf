"""Problem statements, ANSWER.md and claims are Markdown with LaTeX and are shown as such (no raw
HTML from model text gets through), and the filled answer comes first, above the template."""

from __future__ import annotations

import asyncio
import re

import pytest
from fastapi.testclient import TestClient

from physlab.api import solve_async
from physlab.lab.state import transitions as T
from physlab.lab.workspace import RunWorkspace
from physlab.problems import resolve_problem
from physlab.web import create_app
from tests.web.helpers import XSS

LOCAL = "http://127.0.0.1"  # the dashboard answers loopback hosts only

QEC = "examples/quantum_error_correction_main"

ANSWER_MD = f"""## Result

The post-selected fidelity is

$$F(p) = 1 - \\frac{{3}}{{2}} p^2$$

1. propagate every fault;
2. keep the runs that **pass** the checks.

| order | term |
|---|---|
| $p^2$ | $-3/2$ |

[a link](javascript:alert(1)) and [the paper](https://arxiv.org/abs/2501.00001) {XSS}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("md") / "runs"
    asyncio.run(solve_async(resolve_problem(QEC), "lab", "scripted:lab-qec", workspace=root / "qec"))
    (root / "qec" / "ANSWER.md").write_text(ANSWER_MD)
    return root


def section(html: str, ident: str) -> str:
    """The element with id ``ident``, to its matching end tag (nested elements of its kind counted)."""
    start = html.index(f'id="{ident}"')
    tag = html[html.rindex("<", 0, start) + 1:].split()[0]
    depth = 0
    for m in re.finditer(rf"<(/?){tag}\b", html[start:]):
        depth += -1 if m.group(1) else 1
        if depth < 0:
            return html[html.index(">", start) + 1:start + m.start()]
    raise AssertionError(ident)


def test_answer_md_is_rendered_markdown_with_mathml_and_nothing_raw(lab):
    html = TestClient(create_app(lab), base_url=LOCAL).get("/runs/qec").text
    answer = section(html, "answer-md")
    assert "<h2>Result</h2>" in answer and "<ol>" in answer and "<strong>pass</strong>" in answer
    assert "<table>" in answer and answer.count("<math") >= 3 and 'display="block"' in answer
    assert '<a href="https://arxiv.org/abs/2501.00001" rel="noopener noreferrer nofollow"' in answer
    assert "javascript:" not in re.sub(r">[^<]*<", "><", answer)      # not in any tag: only as text
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in answer


def test_problem_statement_and_claims_are_markdown(lab):
    ws = RunWorkspace(lab / "qec")
    s = ws.load()
    s, wh = T.propose_wh(s, claim="**Bold claim**: the fidelity is\n\n- even in $p$\n- at most $1$", value="1",
                         evidence=[s.evidence[0].id])
    ws.commit(s, "iteration 9: a claim in Markdown")
    html = TestClient(create_app(lab), base_url=LOCAL).get("/runs/qec").text
    card = section(html, f"card-{wh}")
    assert "<strong>Bold claim</strong>" in card and "<ul>" in card and "<math" in card
    problem = section(html, "problem")
    assert "<h1>" in problem and problem.count("<p>") >= 2 and "<math" in problem   # not one paragraph
    assert "<pre><code" in problem                                                  # the template's code block


def test_the_filled_answer_comes_first_above_the_template(lab):
    html = TestClient(create_app(lab), base_url=LOCAL).get("/runs/qec").text
    code = (lab / "qec" / "answer.py").read_text()
    line = section(html, "answer-line")
    assert line.startswith("F_logical = (229376*p**5") and line.rstrip().endswith("return F_logical")
    assert "Return the expression" not in line and "FILL IN" not in line         # no docstring, no comments
    order = [html.index('id="answer-line"'), html.index('id="answer-md"'), html.index('id="answer-py"')]
    assert order == sorted(order)                                               # answer first, then the rest
    assert 'class="full" id="answer-py"' in html and "Return the expression" in html
    assert code.splitlines()[0] in html


def test_python_in_prose_stays_a_formula():
    from physlab.web.markdown import markdown_html

    html = markdown_html("F(p) = (229376*p**5 - 1116160*p**4)/(x*y), **bold** and *slanted*")
    assert "229376*p**5 - 1116160*p**4" in html and "(x*y)" in html
    assert html.count("<strong>") == 1 and html.count("<em>") == 1
