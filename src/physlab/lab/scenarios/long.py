"""``scripted:lab-long`` — a long run for the cost benchmark (``benchmarks/lab_cost.py``) and the
tests of a growing lab: 40 rounds of three independent research questions each, on the ground
state of the quartic anharmonic oscillator (PROBLEM below).

Each round the orchestrator integrates the evidence of the last one (a hypothesis per item, the
questions closed, a note, a dead end for each refutation) and opens three questions, one per
line of attack: A, the Rayleigh–Schrödinger coefficients by the Bender–Wu recursion (a
researcher); B, a Borel–Padé resummation (a researcher); C, exact diagonalisation in a truncated
oscillator basis (every fifth round the computer really runs it in the sandbox, otherwise a
researcher estimates it). The reviewer judges by line and round, so the run's record grows the way a
long run's does: a few established results (each line-A result builds on the previous one), many
inconclusive and refuted hypotheses, dead ends, notes; the critic audits every other iteration,
sometimes asks the planner to revise the strategy (the stable part of every prompt changes) and
sometimes challenges the newest result (the adjudicator dismisses it). After the last round the
orchestrator closes what is open, abandons the hypotheses the established results leave undecided
and declares completion; the formatter fills the template from the newest line-A result. Every
decision is read from the prompt the role is shown."""

from __future__ import annotations

import re

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from physlab.lab.roles import role_markers
from physlab.lab.scenarios import _parse as P
from physlab.llm.scripted import final_answer, register_scenario, tool_call
from physlab.problems.model import Problem

NAME = "lab-long"
ROUNDS = 40

PROBLEM = Problem(
    id="anharmonic_ground_state",
    statement=(
        "# Problem setup\n"
        "Consider the quartic anharmonic oscillator $H = \\tfrac12 p^2 + \\tfrac12 x^2 + g x^4$ with $\\hbar = m = "
        "\\omega = 1$ and coupling $g \\ge 0$. Its ground-state energy $E_0(g)$ has the Rayleigh–Schrödinger "
        "expansion $E_0(g) = \\sum_k E_k g^k$, $E_0(0) = 1/2$, which is asymptotic (the coefficients grow like "
        "$(-1)^{k+1} k!\\,3^k$) but Borel summable.\n\n"
        "# Task\n"
        "Give $E_0(g)$ through order $g^3$ exactly, as a polynomial in $g$, and establish each coefficient by two "
        "independent routes (the Bender–Wu recursion and a numerical diagonalisation at small $g$). State the "
        "radius of validity of the truncated series and check it against the exact spectrum at $g = 0.1$."),
    answer_template="def answer(g):\n    E0 = ...\n    return E0\n")

SERIES = ["1/2", "+ 3/4*g", "- 21/8*g**2", "+ 333/16*g**3"]
LINES = {"A": ("researcher", "Derive the Rayleigh-Schrodinger coefficient by the Bender-Wu recursion"),
         "B": ("researcher", "Estimate E_0(0.1) by Borel-Pade resummation of the series"),
         "C": ("computer", "Diagonalise H in a truncated oscillator basis and extract E_0(g) at small g")}
TAG = re.compile(r"\[round (\d+), line ([ABC])\]")


def series(order: int) -> str:
    return " ".join(SERIES[: min(order, 3) + 1])


def _tag(text: str) -> tuple[int, str] | None:
    m = TAG.search(text)
    return (int(m.group(1)), m.group(2)) if m else None


def verdict(rnd: int, line: str) -> str:
    """How the reviewer judges a claim: line A holds every fourth round (and is only inconclusive or
    wrong in between), line B's resummation never does, line C when the basis was large enough."""
    if line == "A":
        return {0: "VERIFIED", 2: "REFUTED"}.get(rnd % 4, "INCONCLUSIVE")
    if line == "C":
        return "VERIFIED" if rnd % 10 == 5 else "INCONCLUSIVE" if rnd % 5 == 0 else "REFUTED"
    return "REFUTED"


def calls(*pairs) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(n, a) for n, a in pairs])


DIAG = '''import numpy as np
N = {n}
g = {g}
a = np.diag(np.sqrt(np.arange(1, N)), 1)
x = (a + a.T) / np.sqrt(2)
H = np.diag(np.arange(N) + 0.5) + g * np.linalg.matrix_power(x, 4)
E = np.linalg.eigvalsh(H)
series = 0.5 + 0.75 * g - 21 / 8 * g**2 + 333 / 16 * g**3
print(f"E0({{g}}) = {{E[0]:.10f}} with N = {{N}}; series through g^3: {{series:.10f}}")
'''


class LongScenario:
    """One instance per run; decisions come from the prompts and tool returns it receives."""

    def __init__(self, rounds: int = ROUNDS) -> None:
        self.rounds = rounds

    def __call__(self, role, messages, info):
        return getattr(self, role)(messages, info, P.prompt(messages))

    def surveyor(self, messages, info, prompt):
        return final_answer(info, {
            "background": "The quartic anharmonic oscillator is the textbook case of an asymptotic perturbation "
                          "series: the Rayleigh-Schrodinger coefficients of E_0(g) grow factorially with alternating "
                          "sign (Bender and Wu), so the series has zero radius of convergence, yet it is Borel "
                          "summable and its low orders describe E_0 well for small g. " * 2,
            "key_insights": ["The coefficients follow from a recursion for the wave-function corrections in the "
                             "basis of Hermite functions (Bender-Wu).",
                             "Truncating the series is optimal near order 1/(3g); at g = 0.1 only a few terms help.",
                             "Diagonalising H in a truncated oscillator basis converges fast for the ground state."],
            "known_methods": ["Bender-Wu recursion (exact rationals)", "Borel-Pade resummation",
                              "Exact diagonalisation in the oscillator basis (N ~ 40-80)"],
            "known_pitfalls": ["Confusing the x^4 normalisation (g x^4 versus g x^4/4) changes every coefficient.",
                               "Extrapolating the asymptotic series past its optimal order.",
                               "A basis too small for the chosen g gives a spurious agreement."]})

    def planner(self, messages, info, prompt):
        crits = P.ids(P.block(prompt, "critiques-to-answer"), "CR")
        version = re.search(r"^v(\d+):", P.block(prompt, "strategy"), flags=re.M)
        strategy = ("1. Derive E_1..E_3 exactly by the Bender-Wu recursion, one coefficient per question. "
                    "2. Cross-check each against exact diagonalisation at g = 0.01-0.1. "
                    "3. Use Borel-Pade only as a plausibility check, never as evidence for a coefficient. "
                    "4. Establish each coefficient before building the next on it.")
        if version:
            strategy += f" (Revision {int(version.group(1)) + 1}: keep the lines independent; close stale questions.)"
        return final_answer(info, {
            "strategy": strategy,
            "conventions": ["hbar = m = omega = 1; the perturbation is g x^4 (not g x^4 / 4).",
                            "E_k is the coefficient of g^k in E_0(g); E_0 = 1/2."],
            "add_sanity_checks": [] if crits else ["E_0(0) = 1/2", "E_1 = 3/4 (first-order <0|x^4|0>)",
                                                   "the series at g = 0.1 agrees with diagonalisation to O(g^4)"],
            "critique_responses": [{"critique_id": c, "verdict": "accept", "response": "Accepted; strategy revised."}
                                   for c in crits]})

    # ---------------------------------------------------------------- the loop
    def orchestrator(self, messages, info, prompt):
        it = P.iteration(prompt)
        out = info.output_tools[0].name
        done = P.tool_returns(messages)
        if P.turn(messages) == 0:
            actions = []
            ers = {(_tag(e[2]) or (0, ""))[1]: e[1] for e in P.established(prompt)}   # newest WH per line
            for item in P.new_evidence(prompt):
                ev = P.ids(item, "EV")[0]
                tag, findings = _tag(item), P.block(item, "findings")
                if tag is None:
                    continue
                rnd, line = tag
                value = re.search(r"^value: (.+)$", findings, flags=re.M)
                args = {"claim": findings.split("\n")[0][:300],
                        "evidence_ids": [ev], "value": value.group(1) if value else ""}
                if line == "A" and "A" in ers:
                    args["depends_on"] = [ers["A"]]
                actions.append(("propose_hypothesis", args))
            if it > self.rounds:          # wrapping up: give up the claims the established results leave undecided
                gates = P.block(prompt, "completion-gates")
                stale = [wh for line in gates.splitlines() if "neither established nor abandoned" in line
                         for wh in P.ids(line.split("neither")[0] + line.split("abandoned:")[-1], "WH")]
                actions += [("abandon_hypothesis", {"hypothesis_id": wh, "reason": "superseded: the established "
                             "line-A results determine the answer"}) for wh in dict.fromkeys(stale)]
            for rq in re.findall(r"^(RQ-\d+) \[open\]", P.block(prompt, "research-questions"), flags=re.M):
                if rq in P.block(prompt, "new-evidence") or it > self.rounds:
                    actions.append(("close_question", {"question_id": rq,
                                                       "status": "answered" if it <= self.rounds else "dropped"}))
            for line in P.block(prompt, "new-verification-results").splitlines():
                m = re.match(r"(WH-\d+): REFUTED", line)
                if m:
                    actions.append(("record_dead_end", {"description": f"{m.group(1)} was refuted: "
                                                        + line.split("—", 1)[-1].strip()[:200],
                                                        "related_ids": [m.group(1)]}))
            actions.append(("add_research_note", {"text": f"Iteration {it}: integrated the last round; line A "
                                                  "carries the coefficients, line C checks them numerically, line B "
                                                  "only bounds the resummed value."}))
            if it <= self.rounds:
                actions += [("create_research_question", {"question": f"[round {it}, line {x}] {LINES[x][1]} "
                                                          f"(order {1 + it % 3})."}) for x in "ABC"]
            return calls(*actions)
        created = re.findall(r"Created (RQ-\d+)", " ".join(done))
        if created:
            return tool_call(out, {"dispatches": [
                {"worker": LINES[x][0] if x != "C" or it % 5 == 0 else "researcher", "target": rq,
                 "instructions": f"{LINES[x][1]}; report the value with its checks."}
                for x, rq in zip("ABC", created)], "summary": f"Round {it}: three independent lines dispatched."})
        if P.block(prompt, "completion-gates").startswith("none") and P.established(prompt):
            return tool_call(out, {"complete": True, "summary": "The coefficients are established."})
        return tool_call(out, {"summary": "Waiting for the last reviews."})

    def researcher(self, messages, info, prompt):
        target = P.block(prompt, "target")
        rnd, line = _tag(target) or (0, "A")
        order = 1 + rnd % 3
        derivation = (f"## Round {rnd}, line {line}\n\n"
                      "Write $H = H_0 + g V$ with $V = x^4$ and $x = (a + a^\\dagger)/\\sqrt 2$. In the basis "
                      "$|n\\rangle$ of $H_0$, $V$ connects $n$ to $n \\pm 4, n \\pm 2, n$, so the corrections "
                      "$|\\psi_k\\rangle = \\sum_n A_{k,n} |n\\rangle$ obey the Bender–Wu recursion\n\n"
                      "$$ 2 n A_{k,n} = \\sum_{j} V_{n,j} A_{k-1,j} - \\sum_{l=1}^{k} E_l A_{k-l,n}, \\qquad "
                      "E_k = \\sum_j V_{0,j} A_{k-1,j}. $$\n\n"
                      f"Carried to order {order}: $E_0(g) = {series(order)}$. " * 3
                      + "\n\nChecks: $E_1 = \\langle 0|x^4|0\\rangle = 3/4$; signs alternate as expected.")
        findings = (f"[round {rnd}, line {line}] To order g^{order}, E_0(g) = {series(order)} "
                    f"({'resummed estimate, not a coefficient' if line == 'B' else 'exact rationals'}).\n"
                    f"value: {series(order)}")
        return ModelResponse(parts=[TextPart(derivation), ToolCallPart(info.output_tools[0].name, {
            "findings": findings, "checks": ["E_1 = 3/4 from <0|x^4|0>", "alternating signs"],
            "confidence": "approximate" if line == "B" else "exact"})])

    def computer(self, messages, info, prompt):
        rnd, line = _tag(P.block(prompt, "target")) or (0, "C")
        if P.turn(messages) == 0:
            return calls(("document_approach", {"approach": "Exact diagonalisation of H in the first N oscillator "
                                                "states at g = 0.1, compared with the series through g^3."}))
        runs = P.tool_returns(messages, "execute_python")
        if not runs:
            return calls(("execute_python", {"code": DIAG.format(n=20 + rnd, g=0.1)}))
        printed = re.search(r"E0\(0\.1\) = ([0-9.]+)", runs[-1])
        return tool_call(info.output_tools[0].name, {
            "findings": f"[round {rnd}, line {line}] Diagonalisation gives E_0(0.1) = "
                        f"{printed.group(1) if printed else 'nothing (the script failed)'}; the series through "
                        f"g^3 agrees to O(g^4).\nvalue: {series(3)}",
            "method": "numpy eigvalsh of H in a truncated oscillator basis", "checks": ["E_0(0) = 1/2 at g = 0"],
            "confidence": "exact" if printed else "partial"})

    def reviewer(self, messages, info, prompt):
        claim = P.block(prompt, "claim")
        rnd, line = _tag(claim) or (0, "B")
        v = verdict(rnd, line)
        why = {"VERIFIED": "Re-derived the coefficient independently; it matches, and the sanity checks pass.",
               "REFUTED": "The value does not survive an independent check: the resummation (or a basis that is "
                          "too small) moves it outside the claimed accuracy.",
               "INCONCLUSIVE": "Plausible, but only one route supports it; a second, independent route would "
                               "decide it."}[v]
        return tool_call(info.output_tools[0].name, {"verdict": v, "reasoning": why})

    def critic(self, messages, info, prompt):
        it = P.iteration(prompt)
        ers = P.established(prompt)
        crits = []
        if it % 6 == 0:
            crits.append({"target_type": "strategy", "kind": "staleness",
                          "text": "Line B has been refuted every round; the strategy should say what it is for."})
        if it % 10 == 0 and ers:
            crits.append({"target_type": "ER", "target": ers[-1][0], "kind": "missing_validation",
                          "text": "This coefficient rests on the recursion alone; check it against diagonalisation."})
        return final_answer(info, {"critiques": crits, "assessment": "Progressing along line A."})

    def adjudicator(self, messages, info, prompt):
        return tool_call(info.output_tools[0].name, {"decision": "dismiss", "reasoning": "The evidence includes an "
                                                     "independent check; the critique does not hold."})

    def formatter(self, messages, info, prompt):
        template = P.block(P.instructions(messages), "answer-template").strip().removeprefix("```python")
        template = template.removesuffix("```").strip()
        found = [(e[0], e[3]) for e in P.established(prompt) if e[3]]
        if not found:
            found = list(P.hypothesis_values(prompt, "best-hypotheses").items())
        if not found:
            return final_answer(info, {"ready": False, "missing": "no established value for E0"})
        source, value = found[-1]
        return final_answer(info, {"ready": True, "answer_code": template.replace("E0 = ...", f"E0 = {value}", 1),
                                   "sources": [{"part": "E0", "source": source}],
                                   "answer_markdown": f"E_0(g) = {value}\n\nE0 is taken from {source}."})


register_scenario(NAME, LongScenario, role_markers=role_markers, description=f"a long lab run: {ROUNDS} rounds of three independent questions "
                                                  "(the cost benchmark's scenario)")
