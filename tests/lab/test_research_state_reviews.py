"""Reviews as a physicist reads them (issue 44): RESEARCH_STATE.md holds each review and ruling
whole (it cut them at 300 characters with "…"), and the lab's scripted reviewer quotes what its
check printed, not the tool's empty `STDERR:` header."""

from __future__ import annotations

import asyncio
import re

import pytest

from physlab.api import solve_async
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState
from physlab.lab.state.render import render_state
from physlab.problems import resolve_problem

LONG_REVIEW = ("The stabilizer bookkeeping is consistent with the circuit; " * 8
               + "\nChecks: stabilizers XXXX, ZZZZ and logical Z_A, Z_B are +1 on the final state: PASS; "
               "SC-1: F(0) = 1: N/A (the last words)")


def test_research_state_md_holds_a_long_review_whole():
    s = ResearchState(problem_id="p")
    s = T.begin_iteration(s)
    s, rq = T.create_rq(s, "q?")
    s, ev = T.add_evidence(s, target=rq, role="researcher", findings="f")
    s, wh = T.propose_wh(s, claim="a claim", value="1", evidence=[ev])
    s = T.record_review(s, wh, "VERIFIED", LONG_REVIEW)
    s = s[0] if isinstance(s, tuple) else s
    md = render_state(s)
    section = md.split("## Reviews", 1)[1].split("## Critiques", 1)[0]
    assert "(the last words)" in section and "…" not in section
    # each line of the review stays inside its list item
    assert "\n  Checks: stabilizers" in section


@pytest.fixture(scope="module")
def qec_run(tmp_path_factory):
    ws = tmp_path_factory.mktemp("runs") / "qec"
    asyncio.run(solve_async(resolve_problem("examples/quantum_error_correction_main"), "lab", "scripted:lab-qec",
                            workspace=ws))
    return ws


def test_the_demos_reviews_carry_no_empty_stderr_header(qec_run):
    state = ResearchState.model_validate_json((qec_run / "state.json").read_text())
    texts = [r.reasoning for r in state.reviews] + [c.ruling for c in state.critiques if c.ruling]
    assert any("PASS" in t for t in texts)                     # the checks' output is quoted
    assert not [t for t in texts if re.search(r"STDERR:\s*(\n|$)", t)], texts
    md = (qec_run / "RESEARCH_STATE.md").read_text()
    assert not re.search(r"STDERR:\s*\n", md)
    for review in state.reviews:                               # whole, as the reviewer wrote it
        assert all(line.strip() in md for line in review.reasoning.splitlines())
