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
DUTIES = {
    "planner": ["conventions", "decidable", "accept or", "two independent routes"],
    "orchestrator": ["REFUTED", "INCONCLUSIVE", "never the question", "at most ONE worker per", "completion-gates"],
    "researcher": ["Markdown with LaTeX", "Do not put it inside the tool", "second route"],
    "computer": ["Exact where the answer is exact", "deterministic", "Print every number",
                 "Cross-check independently", "Never widen a tolerance"],
    "reviewer": ["independently", "scope", "prefer INCONCLUSIVE", "what evidence would decide"],
    "critic": ["Do not repeat", "at most", "termination", "new grounds"],
    "adjudicator": ["uphold", "dismiss", "check it yourself"],
    "formatter": ["Map the template onto the results", "which result fills which part", "not established"],
    "surveyor": ["Do not guess the final answer", "known_pitfalls"],
}


@pytest.mark.parametrize("role", ROLES)
def test_each_role_is_told_its_duties_and_the_standards_where_they_apply(role):
    text = instructions(role)
    for phrase in DUTIES[role]:
        assert phrase in text, f"{role}: {phrase!r}"
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
    for role in ROLES:
        row = next(line for line in doc.splitlines() if line.startswith(f"| {role} |"))
        cells = [c.strip() for c in row.split("|")[1:-1]]
        stable, volatile = C.LAYOUT[role]
        assert C.ROLE_SECTIONS[role] == C.HEAD + stable + volatile, role
        assert (cells[2], cells[3]) == (", ".join(stable) or "—", ", ".join(volatile)), role
        assert (cells[1] == "✓") == (role in WITH_STANDARDS), role
    for name, field in LabSettings.model_fields.items():
        if name != "windows":
            default = int(field.default) if field.default == int(field.default) else field.default
            assert f"`{name}` ({default}" in doc, name
