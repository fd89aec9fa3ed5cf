"""Prompts a physicist would sign (issue finding 4): every role is told what each section of its
context is, the physics standards reach every role that does or judges physics, each role's own
duties are spelled out, and the researcher's derivation travels as Markdown, not a JSON string."""

from __future__ import annotations

import re

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from physlab.lab import context as C
from physlab.lab.roles import ROLES
from physlab.lab.roles._base import WITH_STANDARDS, instructions
from physlab.lab.scenarios import _parse as P
from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState, Survey
from tests.lab.direct import run_engine
from tests.lab.mini import mini_problem
from tests.lab.test_checks_and_balances import fns

W = C.Windows()


def rich_state():
    s = ResearchState(problem_id="mini")
    s = T.set_survey(s, Survey(background="b", known_pitfalls=["sign of the kernel"]))
    s, _ = T.set_strategy(s, "plan", add_checks=["positive"], conventions=["SI units"])
    s = T.begin_iteration(s)
    s, rq = T.create_rq(s, "What is 6*7?")
    s, ev = T.add_evidence(s, target=rq, role="computer", findings="42", code="print(42)", output="42")
    s, wh = T.propose_wh(s, claim="6*7 = 42", value="42", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED")
    s, wh2 = T.propose_wh(s, claim="42 is even", evidence=[ev], depends_on=[wh])
    s, cr = T.file_critique(s, target_type="ER", target=s.wh(wh).er, text="check it")
    s, cr2 = T.file_critique(s, target_type="strategy", text="go faster")
    return s, rq, wh, wh2, cr, cr2


def prompts() -> dict[str, str]:
    s, rq, wh, wh2, cr, cr2 = rich_state()
    p = mini_problem()
    return {
        "surveyor": C.for_surveyor(p).text,
        "planner": C.for_planner(p, s, [s.critique(cr2)], W).text,
        "orchestrator": C.for_orchestrator(p, s, W, new_evidence=s.evidence, new_reviews=["WH-1: VERIFIED"],
                                           events=["[x] y"], human=["HM-1: hi"], gates=["WH-2 awaits review"],
                                           max_workers=3).text,
        "researcher": C.for_worker("researcher", p, s, W, target=rq, instructions="do", method_hints="", relevant=[]).text,
        "computer": C.for_worker("computer", p, s, W, target=wh2, instructions="do", method_hints="", relevant=[]).text,
        "reviewer": C.for_reviewer(p, s, W, wh2).text,
        "critic": C.for_critic(p, s, W, max_critiques=4).text,
        "adjudicator": C.for_adjudicator(p, s, W, s.critique(cr)).text,
        "formatter": C.for_formatter(p, s, W, forced=True, reason="max_iterations").text,
    }


def top_level_tags(prompt: str) -> list[str]:
    tags, depth_open = [], None
    for m in re.finditer(r"^<(/?)([a-z-]+)>$", prompt, flags=re.M):
        closing, name = m.groups()
        if depth_open is None and not closing:
            depth_open = name
            tags.append(name)
        elif closing and name == depth_open:
            depth_open = None
    return tags


@pytest.mark.parametrize("role", ROLES)
def test_every_section_a_role_is_shown_is_explained_in_its_instructions(role):
    shown = top_level_tags(prompts()[role])
    assert shown == C.ROLE_SECTIONS[role]
    text = instructions(role)
    for tag in shown:
        assert f"<{tag}>: " in text, f"{role} is shown <{tag}> but not told what it is"


STANDARDS = ["units", "metric signature", "Fourier", "Dimensions", "Limits", "Symmetries and conservation laws",
             "Signs", "Factors of 2 and 2π", "Branch cuts", "Order of limits", "Boundary terms", "Degeneracies",
             "Overcounting"]
# The instructions each prompt carries (issue 33: each finding's instruction, where only the model
# can follow it): a label (docs/lab.md lists it in the role's row) and a phrase of the prompt file.
INSTRUCTIONS: dict[str, dict[str, str]] = {
    "surveyor": {
        "specific, structural pitfalls": "Only pitfalls that follow from clear structural reasoning",
        "conventions of every symbol": "`conventions`: every symbol of the problem",
        "model-independent sanity checks with their rationale": "They must hold whatever the model of the answer",
        "the expected structure of the answer, never its value": "`expected_answer_structure`: the form",
        "map, do not solve or guess": "do not guess the final answer",
    },
    "planner": {
        "one checkable claim per step (the reviewer test)": "The reviewer test",
        "null-checking steps": "first tests whether it is there at all",
        "two independent routes to the answer": "two independent routes",
        "decidable, model-independent sanity checks": "each decidable by evaluating a candidate answer",
        "accept, decline or dismiss each critique": "`decline` — it is right, but acting on it would add little",
        "abandon a hypothesis, mark a result obsolete": "`obsolete` an established result",
        "consulted on every demotion": "Demotions (<demotions>)",
        "answer a stall escalation": "A `stall` critique from the lab",
        "termination critiques": "A `termination` critique",
    },
    "orchestrator": {
        "INCONCLUSIVE is not evidence against": "INCONCLUSIVE: not evidence against the claim",
        "STALLED: another route or abandon": "A STALLED hypothesis must not get more of the same evidence",
        "iterations remaining: synthesise": "When the budget warning appears, synthesise",
        "accept the simple answer": "Accept the simple answer when the physics gives it",
        "settle or abandon competing claims before completing":
            "a competing value sitting inconclusive blocks completion",
        "name the results that make up the answer": "name them, in order, in `answer_results`",
        "the evidence the adjudicator asked for": "exactly the evidence the adjudicator asked for",
        "one worker per target": "at most ONE worker per target",
        "one deliverable per task, self-contained": "lead with the one deliverable",
        "claims that stand alone": "Hypotheses must stand alone",
    },
    "researcher": {
        "the derivation as Markdown with LaTeX": "in Markdown with LaTeX",
        "not inside the tool arguments": "Do not put it inside the tool arguments",
        "checks and a second route": "by a second route",
        "learn from earlier attempts": "find out why they failed before you start",
        "a false premise or a null result is a finding": "a null result (a parameter that drops out",
        "questioning the problem only as <problem-guidelines> allows": "Whether the problem itself may be questioned",
        "never invent a result": "Never invent a result",
    },
    "computer": {
        "the approach first": "First call, alone: `document_approach`",
        "a small script budget": "Aim for one to three scripts",
        "validate building blocks on a small known case": "Validate the building blocks first",
        "exact where the answer is exact": "Exact where the answer is exact",
        "print every quoted number": "Print every number you will quote",
        "an independent cross-check": "Cross-check independently",
        "never widen a tolerance": "Never widen a tolerance",
        "a crash is no result": "never report it as a result",
        "diagnose earlier failures": "diagnose their root cause",
    },
    "reviewer": {
        "audit the definitions": "Definitions first",
        "audit the starting point": "The starting point",
        "re-derive the decisive step": "Re-derive or re-compute the decisive step independently",
        "a pitfall or a violated structure is never VERIFIED": "INCONCLUSIVE, never VERIFIED",
        "scope against the question and the template": "does it answer the question in <question>",
        "an execution failure is no refutation": "it is no refutation of the claim",
        "a null result is as valid": "A null result (no dependence, a vanishing correction) is as valid",
        "a re-review answers each earlier objection": "whether the new evidence answers each earlier objection",
        "PASS, FAIL or N/A for every check": "PASS, FAIL or N/A",
        "prefer INCONCLUSIVE when unsure": "prefer INCONCLUSIVE",
    },
    "critic": {
        "silence is a positive claim": "Silence is a positive claim",
        "graded by severity": "`HIGH` when it could make the final answer wrong",
        "what is wrong, why it matters, how to test it": "how to find out whether the objection holds",
        "loops and saturation": "the run is looping",
        "repeated refutations question the premise": "Repeated refutations on one topic may mean the premise",
        "scope against the expected structure": "expected structure of the answer in the survey",
        "a sanity check can be wrong": "A check can itself be wrong",
        "termination readiness": "Termination readiness",
        "no repeat without new grounds": "Do not repeat a critique",
    },
    "adjudicator": {
        "neutral": "Neither side gets the benefit of the doubt",
        "check it yourself": "check it yourself",
        "uphold, dismiss or needs_evidence": "`needs_evidence` when the record cannot settle the dispute",
        "no dismissal of a cited sanity check on theory alone": "may not be dismissed on theory alone",
        "a null result is as valid": "a null result is as valid",
    },
    "formatter": {
        "map the template onto the results": "Map the template onto the results",
        "the results named as the answer": "<answer-structure> names those",
        "transcribe, do not reshape": "Transcribe, do not reshape",
        "only the template's symbols": "Use only the symbols the template declares",
        "no sentinel guards": "No regime guards returning a sentinel",
        "say what is not established": "which parts are not established",
        "an answer resting on nothing is no answer": "recorded as no answer",
    },
}


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("role", ROLES)
def test_each_role_is_told_its_duties_and_the_standards_where_they_apply(role):
    text = _flat(instructions(role))
    for label, phrase in INSTRUCTIONS[role].items():
        assert _flat(phrase) in text, f"{role} ({label}): {phrase!r}"
    if role in WITH_STANDARDS:
        for phrase in STANDARDS:
            assert phrase in text, f"{role}: {phrase!r}"
    else:
        assert "How this lab does physics" not in text


async def test_the_researchers_derivation_travels_as_markdown_with_latex(tmp_path):
    derivation = r"""## Derivation
With $\hbar = 1$, $$E_0 = -\frac{J}{2}\left(1 + \frac{\Delta^2}{8}\right)$$ and "quotes" stay intact."""

    def researcher(messages, info):
        return ModelResponse(parts=[TextPart(derivation), ToolCallPart(info.output_tools[0].name, {
            "findings": "value = 42", "checks": ["6*7 by hand"], "confidence": "exact"})])

    def orchestrator(messages, info):          # send the researcher, not the computer
        prompt = P.prompt(messages)
        if "RQ-" not in P.block(prompt, "research-questions") and P.tool_returns(messages):
            rq = P.ids(" ".join(P.tool_returns(messages)), "RQ")[0]
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"dispatches": [
                {"worker": "researcher", "target": rq, "instructions": "derive"}]})])
        from tests.lab.test_checks_and_balances import SIMPLE
        return SIMPLE.orchestrator(messages, info, prompt)

    engine, out = await run_engine(tmp_path / "r", fns(researcher=researcher, orchestrator=orchestrator),
                                   mini_problem(), max_iterations=2)
    ev = out.state.evidence[0]
    assert ev.role == "researcher" and ev.derivation == derivation and ev.checks == ["6*7 by hand"]
    review = C.for_reviewer(mini_problem(), out.state, W, "WH-1").text if out.state.whs else ""
    assert derivation in review                                   # the reviewer reads it whole


def test_docs_say_what_each_role_sees_and_the_parameters_as_the_code_does():
    from pathlib import Path

    from physlab.lab.engine import LabSettings

    doc = (Path(__file__).resolve().parents[2] / "docs" / "lab.md").read_text(encoding="utf-8")
    sees, carries = doc.split("## What each role sees", 1)[1].split("## The instructions each prompt carries", 1)
    for role in ROLES:
        row = next(line for line in carries.splitlines() if line.startswith(f"| {role} |"))
        listed = [x.strip() for x in row.split("|")[2].split(";")]
        assert listed == list(INSTRUCTIONS[role]), role
        row = next(line for line in sees.splitlines() if line.startswith(f"| {role} |"))
        cells = [c.strip() for c in row.split("|")[1:-1]]
        stable, volatile = C.LAYOUT[role]
        assert C.ROLE_SECTIONS[role] == C.HEAD + stable + volatile, role
        assert (cells[2], cells[3]) == (", ".join(stable) or "—", ", ".join(volatile)), role
        assert (cells[1] == "✓") == (role in WITH_STANDARDS), role
    from physlab.cli.strategies import _shown

    def shown(value):     # as `strategies show` writes it (a whole float without its .0)
        return _shown(int(value) if isinstance(value, float) and value == int(value) else value)
    for name, field in LabSettings.model_fields.items():
        if name != "windows":
            assert f"| `{name}` | {shown(field.get_default(call_default_factory=True))}" in doc, name
    from physlab.lab.engine import PAPER
    for name, value in PAPER.items():                  # the preset=paper column
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{name}` |"))
        assert row.rstrip(" |").endswith(f"| {shown(value)}"), name
    for name in C.SECTION_GUIDE:
        if any(name in sections for sections in C.ROLE_SECTIONS.values()):
            assert f"| {name} |" in sees, f"docs/lab.md does not say what <{name}> holds"
