"""``scripted:lab-dirac`` — the lab with its tools beyond Python (``--tools cas,corpus=DIR``): the
surveyor finds the trace identities in the physicist's own notes (a local corpus), reads them and
cites the passage it relies on; the computer settles the trace of four gamma matrices in FORM, in
the sandbox; the reviewer checks it again in FORM; the formatter fills the template with the
coefficient FORM printed. The ANSWER.md then lists the cited note among its references.

Every decision is read from what a role is shown (its prompt, its tools' returns): the key and the
passage cited are the ones the corpus tools returned, and the coefficient is parsed from FORM's
output. ``dirac_problem()`` and ``write_corpus(DIR)`` give the problem and a corpus to run it on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from physlab.lab.roles import role_markers
from physlab.lab.scenarios import _parse as P
from physlab.llm.scripted import final_answer, register_scenario, tool_call
from physlab.problems.model import Problem

NAME = "lab-dirac"
TEMPLATE = "def answer():\n    c = ...\n    return c\n"
STATEMENT = ("In four spacetime dimensions, with $\\{\\gamma^\\mu, \\gamma^\\nu\\} = 2 g^{\\mu\\nu}$, the trace of "
             "four gamma matrices is $\\mathrm{Tr}(\\gamma^\\mu\\gamma^\\nu\\gamma^\\rho\\gamma^\\sigma) = "
             "c\\,(g^{\\mu\\nu}g^{\\rho\\sigma} - g^{\\mu\\rho}g^{\\nu\\sigma} + g^{\\mu\\sigma}g^{\\nu\\rho})$. Find $c$.")

NOTES = """# Notes on Dirac traces

These are my notes for the QED lectures.

## Trace identities

The trace of an odd number of gamma matrices vanishes. With the Clifford algebra
{gamma^mu, gamma^nu} = 2 g^{mu nu} and Tr(1) = 4 for the 4x4 Dirac matrices, the trace of two gamma
matrices is Tr(gamma^mu gamma^nu) = 4 g^{mu nu}, and the trace of four gamma matrices is
Tr(gamma^mu gamma^nu gamma^rho gamma^sigma) = 4 (g^{mu nu} g^{rho sigma} - g^{mu rho} g^{nu sigma}
+ g^{mu sigma} g^{nu rho}).

## Pitfalls

In d dimensions Tr(1) is a convention; keep it 4 when regularising dimensionally.
"""

TRACE_FRM = """* the trace of four gamma matrices in 4 dimensions (FORM's g_ on spin line 1)
Indices mu, nu, rho, sigma;
Local T = g_(1, mu, nu, rho, sigma);
Trace4, 1;
Print;
.end
"""

# The reviewer's own route: contract the trace with g_{mu nu} g_{rho sigma}; with c the result is
# c (16 - 4 + 4) = 16 c, and the direct trace of g^mu g_mu g^rho g_rho is 4 * 4 * 4 = 64.
CONTRACTED_FRM = """* Tr(gamma^mu gamma_mu gamma^rho gamma_rho) in 4 dimensions: 64 when c = 4
Indices mu, rho;
Local C = g_(1, mu, mu, rho, rho);
Trace4, 1;
Print;
.end
"""


def dirac_problem() -> Problem:
    return Problem(id="dirac-trace", statement=STATEMENT, answer_template=TEMPLATE, reference="4",
                   reference_format="python")


def write_corpus(folder: Path) -> Path:
    """The physicist's notes this scenario cites, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dirac-notes.md").write_text(NOTES, encoding="utf-8")
    return folder


def calls(*pairs: tuple[str, dict[str, Any]]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(n, a) for n, a in pairs])


def _stdout(tool_return: str) -> str:
    return tool_return.split("STDOUT:\n", 1)[-1].split("\nSTDERR:", 1)[0]


def trace_coefficient(form_output: str) -> str | None:
    """c from FORM's printed T = c*d_(mu,nu)*d_(rho,sigma) - c*d_(mu,rho)*... (None if not that form)."""
    flat = "".join(_stdout(form_output).split())
    m = re.search(r"T=(\d+)\*d_\(mu,nu\)\*d_\(rho,sigma\)-(\d+)\*d_\(mu,rho\)\*d_\(nu,sigma\)\+(\d+)\*"
                  r"d_\(mu,sigma\)\*d_\(nu,rho\);", flat)
    return m.group(1) if m and len({m.group(1), m.group(2), m.group(3)}) == 1 else None


class DiracScenario:
    """One instance per run; decisions come from the prompts and tool returns it receives."""

    def __call__(self, role: str, messages: list[ModelMessage], info: AgentInfo):
        play = getattr(self, role, None)
        if play is None:
            raise RuntimeError(f"scripted scenario {NAME} plays the lab's roles, not '{role}' (use --strategy lab)")
        return play(messages, info, P.prompt(messages))

    def surveyor(self, messages, info, prompt):
        tools = {t.name for t in info.function_tools}
        if "search_corpus" not in tools:          # run without a corpus: a survey from what it knows
            return self._survey(info, cited=None)
        found = P.tool_returns(messages, "search_corpus")
        if not found:
            return calls(("search_corpus", {"query": "trace of four gamma matrices"}))
        hits = json.loads(found[-1])["hits"]
        if not hits:
            return self._survey(info, cited=None)
        read = P.tool_returns(messages, "read_paper")
        if not read:
            return calls(("read_paper", {"key": hits[0]["key"], "query": "trace four gamma matrices"}))
        paper = json.loads(read[-1])
        passage = next((p["text"] for p in paper["passages"] if "trace of four gamma" in p["text"]), "")
        sentence = " ".join(passage[passage.find("the trace of four gamma"):].split())
        quote = sentence[: sentence.find(").") + 2] if ")." in sentence else sentence[:200]
        cited = P.tool_returns(messages, "cite_source")
        if not cited:
            return calls(("cite_source", {"key": paper["key"], "quote": quote,
                                          "used_for": "the expected form of the trace and c = 4 in four dimensions"}))
        return self._survey(info, cited=quote if cited[-1].startswith("cited") else None)

    def _survey(self, info, cited: str | None):
        insight = f"The physicist's notes state: {cited}" if cited else "Traces follow from the Clifford algebra."
        return final_answer(info, {
            "background": "The trace of a product of four Dirac matrices in four dimensions, by the Clifford algebra.",
            "key_insights": [insight, "Tr(1) = 4 for the 4x4 Dirac matrices."],
            "known_methods": ["FORM's Trace4 on a spin line", "anticommuting gamma^mu through the product"],
            "known_pitfalls": ["Tr(1) depends on the representation's dimension: 4 here."],
            "sanity_checks": [{"predicate": "c is a positive integer", "rationale": "Tr(1) = 4 > 0"}],
            "expected_answer_structure": "One integer c."})

    def planner(self, messages, info, prompt):
        crits = P.ids(P.block(prompt, "critiques-to-answer"), "CR")
        return final_answer(info, {"strategy": "Compute the trace in FORM (Trace4), review it by a contraction "
                                               "check, answer with c.",
                                   "critique_responses": [{"critique_id": c, "verdict": "accept", "response": "ok"}
                                                          for c in crits]})

    def orchestrator(self, messages, info, prompt):
        out = info.output_tools[0].name
        done = P.tool_returns(messages)
        whs = P.hypotheses(prompt)
        ers = P.established(prompt)
        if "RQ-" not in P.block(prompt, "research-questions"):
            if not done:
                return calls(("create_research_question", {"question": "What is c in the four-gamma trace?"}))
            rq = re.findall(r"Created (RQ-\d+)", " ".join(done))[0]
            return tool_call(out, {"dispatches": [{"worker": "computer", "target": rq,
                                                   "instructions": "Compute the trace with FORM (execute, "
                                                                   "language form) and read c off its output."}]})
        evidence = P.new_evidence(prompt)
        if evidence and not done and not whs:
            ev = P.ids(evidence[-1], "EV")[0]
            m = re.search(r"c = (\d+)", P.block(evidence[-1], "findings"))
            if m is None:
                return tool_call(out, {"summary": "the computation gave no coefficient"})
            opened = re.findall(r"^(RQ-\d+) \[open\]", P.block(prompt, "research-questions"), flags=re.M)
            return calls(*[("close_question", {"question_id": r}) for r in opened],
                         ("propose_hypothesis", {"claim": f"The four-gamma trace coefficient is c = {m.group(1)}",
                                                 "value": m.group(1), "evidence_ids": [ev]}))
        if done:
            return tool_call(out, {"summary": "hypothesis proposed"})
        if ers and not any(st == "proposed" for st in whs.values()):
            return tool_call(out, {"complete": True})
        return tool_call(out, {"summary": "waiting for the review"})

    def computer(self, messages, info, prompt):
        if P.turn(messages) == 0:
            return calls(("document_approach", {"approach": "FORM: Trace4 of g_(1,mu,nu,rho,sigma) gives the trace "
                                                            "as a sum of metric products; c is their coefficient."}))
        if not any(t.name == "execute" for t in info.function_tools):     # --tools none: Python only
            if not P.tool_returns(messages, "execute_python"):
                return calls(("execute_python", {"code": "print('FORM is not among this run\'s tools')"}))
            return tool_call(info.output_tools[0].name, {"findings": "FORM is not among this run's tools.",
                                                         "method": "none", "confidence": "partial"})
        runs = P.tool_returns(messages, "execute")
        if not runs:
            return calls(("execute", {"code": TRACE_FRM, "language": "form"}))
        c = trace_coefficient(runs[-1])
        findings = f"c = {c}: FORM printed {' '.join(_stdout(runs[-1]).split())[-140:]}" if c else \
            "FORM did not print the expected form:\n" + runs[-1][-600:]
        return tool_call(info.output_tools[0].name, {"findings": findings, "method": "FORM Trace4 in the sandbox",
                                                     "checks": ["the three terms carry the same coefficient"],
                                                     "confidence": "exact" if c else "partial"})

    def reviewer(self, messages, info, prompt):
        claim = P.block(prompt, "claim")
        m = re.search(r"^value: (\d+)$", claim, flags=re.M)
        runs = P.tool_returns(messages, "execute")
        if m and not runs and any(t.name == "execute" for t in info.function_tools):
            return calls(("execute", {"code": CONTRACTED_FRM, "language": "form"}))
        printed = "".join(_stdout(runs[-1]).split()) if runs else ""
        got = re.search(r"C=(\d+);", printed)
        ok = bool(m and got and int(got.group(1)) == 16 * int(m.group(1)))
        return final_answer(info, {
            "verdict": "VERIFIED" if ok else "INCONCLUSIVE",
            "reasoning": f"Contracted in FORM: Tr(g^mu g_mu g^rho g_rho) = {got.group(1) if got else '?'}, which is "
                         f"16 c for c = {m.group(1) if m else '?'}." if runs else "No independent check could run.",
            "checks": [{"check": "contraction with g_{mu nu} g_{rho sigma}", "outcome": "PASS" if ok else "FAIL"}]})

    def critic(self, messages, info, prompt):
        return final_answer(info, {"critiques": [], "assessment": "The result rests on a FORM computation checked "
                                                                  "by an independent contraction."})

    def adjudicator(self, messages, info, prompt):
        return final_answer(info, {"decision": "dismiss", "reasoning": "checked"})

    def formatter(self, messages, info, prompt):
        ers = [e for e in P.established(prompt) if e[3]]
        if not ers:
            return final_answer(info, {"ready": False, "missing": "no established c"})
        er, _, _, value = ers[-1]
        return final_answer(info, {"ready": True, "answer_code": TEMPLATE.replace("...", value),
                                   "answer_markdown": f"c = {value}\n\nc is taken from {er}, computed in FORM.",
                                   "sources": [{"part": "c", "source": er}]})


register_scenario(NAME, DiracScenario, role_markers=role_markers, description="the lab with --tools cas,corpus=DIR: FORM computes a Dirac "
                                                   "trace, the surveyor cites the physicist's notes")
