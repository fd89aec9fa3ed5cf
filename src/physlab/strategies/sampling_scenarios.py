"""Scripted scenarios (``scripted:NAME``) for the sampling scaffolds on the built-in problem
examples/quantum_error_correction_main, so every one of them runs offline:

    physlab solve examples/quantum_error_correction_main --strategy rsa --model scripted:rsa-qec

One scenario, ``sampling-qec``, answers every role those scaffolds use; ``two-step-qec``,
``rsa-qec``, ``manager-qec``, ``tpbench-qec`` and ``multi-round-qec`` are the same scenario under
the strategy's name. What it plays:

- candidate solutions cycle through two correct answers written differently (the published
  rational function, and the same function as a single fraction) and two wrong ones (the classic
  "every error is detected, F = 1" and a plausible leading-order formula);
- every candidate's derivation holds ``CHECK: lhs == rhs`` identities; the wrong ones contain an
  algebra slip. The SymPy verifier writes one script per CHECK and runs it with its tool -- in the
  sandbox -- and grades from the printed result, so a wrong step really fails the candidate;
- the weak verifier says yes to the correct and to the plausible wrong answer (a tie), the
  tie-breaker prefers the correct one (verifiers, the tie-breaker and the SymPy grader answer
  through their output tools, as real models do); RSA's aggregator keeps a correct candidate when it sees one;
  multi-round is wrong in round 0 and right afterwards; the manager dispatches a subagent that
  checks the low-order expansion with real SymPy code before submitting.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from physlab.llm.scripted import (
    Reply,
    final_answer,
    first_user_text,
    last_user_text,
    register_scenario,
    text,
    tool_call,
)

_HEAD = "import sympy as sp\n\np = sp.symbols('p')\n\ndef answer(p):\n"
_N = ("(sp.Rational(16, 25)*p**2 - sp.Rational(128, 125)*p**3 + sp.Rational(2048, 3375)*p**4"
      " - sp.Rational(32768, 253125)*p**5)")
_D = ("(1 - sp.Rational(68, 15)*p + sp.Rational(704, 75)*p**2 - sp.Rational(32768, 3375)*p**3"
      " + sp.Rational(253952, 50625)*p**4 - sp.Rational(262144, 253125)*p**5)")
_D_MINUS_N = ("(1 - sp.Rational(68, 15)*p + sp.Rational(656, 75)*p**2 - sp.Rational(29312, 3375)*p**3"
              " + sp.Rational(223232, 50625)*p**4 - sp.Rational(229376, 253125)*p**5)")


def _code(expr: str) -> str:
    return f"```python\n{_HEAD}    F_logical = {expr}\n    return F_logical\n```\n"


_CORRECT_PROSE = (
    "The post-selected fidelity is a ratio: the probability of an accepted run with the right "
    "logical state over the probability of an accepted run. Each CNOT is followed by one of 15 "
    "two-qubit Paulis with probability p/15; I propagate every fault through the rest of the "
    "circuit and keep the configurations that neither flag the ancilla nor violate XXXX or ZZZZ.\n"
)
CANDIDATES = {
    "correct-factored": (
        _CORRECT_PROSE
        + "Step 1: no fault on the five CNOTs. CHECK: (1 - p)**5 == 1 - 5*p + 10*p**2 - 10*p**3 + 5*p**4 - p**5\n"
        + "Step 2: the accepted weight factorises. CHECK: (15 - 8*p)*(15 + 8*p) == 225 - 64*p**2\n"
        + "Final Answer: F = 1 - N(p)/D(p) with the polynomials below.\n\n" + _code(f"1 - {_N}/{_D}")),
    "correct-fraction": (
        _CORRECT_PROSE
        + "Step 1: no fault on the five CNOTs. CHECK: (1 - p)**5 == 1 - 5*p + 10*p**2 - 10*p**3 + 5*p**4 - p**5\n"
        + "Step 2: write the fidelity as one fraction. CHECK: (1 - sp.Rational(1, 3)) == sp.Rational(2, 3)\n"
        + "Final Answer: F = (D(p) - N(p))/D(p).\n\n" + _code(f"{_D_MINUS_N}/{_D}")),
    "wrong-all-detected": (
        "Every single CNOT fault either trips the ancilla or anticommutes with a stabilizer, so "
        "every error is detected.\n"
        + "Step 1: the weight-one faults cancel. CHECK: 15*(p/15) - p == p/15\n"
        + "Final Answer: F = 1.\n\n" + _code("sp.Integer(1)")),
    "wrong-leading-order": (
        "Only pairs of faults can be undetected; keeping the leading order in p.\n"
        + "Step 1: the pair probability. CHECK: (4*p/15)**2 == 16*p**2/15\n"
        + "Final Answer: F = 1 - 16 p^2/25.\n\n" + _code("1 - sp.Rational(16, 25)*p**2")),
}
CORRECT = ("correct-factored", "correct-fraction")
# The order generated candidates cycle through (4 of 7 correct, written two ways).
CYCLE = ["correct-factored", "wrong-all-detected", "correct-fraction", "wrong-leading-order",
         "correct-factored", "wrong-all-detected", "correct-fraction"]


def _which(text_: str) -> list[str]:
    """The known candidates quoted in a prompt, in order of appearance."""
    found = []
    for name, body in CANDIDATES.items():
        marker = body.split("Final Answer:")[1].split("\n")[0]
        pos = text_.find("Final Answer:" + marker)
        if pos >= 0:
            found.append((pos, name))
    return [n for _, n in sorted(found)]


def _tool_returns(messages: list[ModelMessage]) -> list[str]:
    return [str(part.content) for msg in messages if isinstance(msg, ModelRequest)
            for part in msg.parts if isinstance(part, ToolReturnPart)]


def check_script(identity: str) -> str:
    lhs, rhs = identity.split("==", 1)
    return ("import sympy as sp\np = sp.symbols('p')\n"
            f"lhs = {lhs.strip()}\nrhs = {rhs.strip()}\n"
            "print(sp.simplify(sp.expand(lhs - rhs)) == 0)\n")


def sympy_verifier_turn(messages: list[ModelMessage], info: AgentInfo) -> Reply:
    """The step-wise SymPy grader: one script per CHECK line, then the Appendix A.4 report built
    from what the sandbox printed."""
    task = first_user_text(messages)
    solution = task.split("Candidate solution to grade:", 1)[-1]
    checks = re.findall(r"CHECK:\s*(.+)", solution)
    returns = _tool_returns(messages)
    if len(returns) < len(checks):
        i = len(returns)
        return tool_call("run_sympy_script", {"script": check_script(checks[i])},
                         content=f"Checking step {i + 1}: {checks[i]}")
    steps = []
    for i, (identity, out) in enumerate(zip(checks, returns)):
        stdout = out.split("STDOUT:\n", 1)[-1].split("\nSTDERR:", 1)[0].strip()
        ok = stdout.endswith("True")
        steps.append({"step_number": i + 1, "calculation_description": identity,
                      "sympy_script_content": check_script(identity), "script_stdout": stdout,
                      "script_stderr": "", "is_correct": ok,
                      "error_explanation": "confirmed" if ok else f"SymPy disagrees: {identity}"})
    score = int(all(s["is_correct"] for s in steps))
    return final_answer(info, {"sympy_verification": steps, "overall_score": score,
                               "general_feedback": "all steps check" if score else "a step fails"})


def _tiebreak(prompt: str, info: AgentInfo) -> Reply:
    a1 = prompt.split("Attempt 1:", 1)[-1].split("Attempt 2:", 1)[0]
    choice = 1 if any(n in CORRECT for n in _which(a1)) else 2
    return final_answer(info, {"analysis": f"Attempt {choice} is right (scripted).", "correct_attempt": choice})


def _manager_turn(messages: list[ModelMessage], info: AgentInfo, state: dict[str, Any]) -> Reply:
    if info.output_tools and not info.allow_text_output:  # forced wrap-up
        return tool_call("submit_final_answer", {"answer_text": "Best supported answer.",
                                                 "answer_code": _code(f"1 - {_N}/{_D}")})
    returns = _tool_returns(messages)
    tools = {t.name for t in info.function_tools}
    if not returns and "dispatch_subagent" in tools:
        return tool_call("dispatch_subagent", {
            "system_prompt": "You are a careful theoretical physicist with a Python sandbox.",
            "user_message": "Expand F(p) = 1 - N(p)/D(p) (the [[4,2,2]] candidate) to third order "
                            "in p with SymPy and report the series.",
            "execute_code": True})
    if len(returns) == 1:
        return tool_call("write_to_permanent_memory",
                         {"content": "VERIFIED low-order expansion: " + returns[0][:300]})
    return tool_call("submit_final_answer", {
        "answer_text": "F(p) = 1 - N(p)/D(p); its expansion 1 - 16p^2/25 + O(p^3) was checked "
                       "by a subagent with SymPy.",
        "answer_code": _code(f"1 - {_N}/{_D}")})


def _subagent_turn(messages: list[ModelMessage], info: AgentInfo) -> Reply:
    returns = _tool_returns(messages)
    if not returns and any(t.name == "run_python" for t in info.function_tools):
        return tool_call("run_python", {"code": (
            "import sympy as sp\np = sp.symbols('p')\n"
            f"F = 1 - {_N}/{_D}\nprint(sp.series(F, p, 0, 4))\n")})
    return "Series: " + (returns[-1] if returns else "no computation available")


def sampling_qec():
    state: dict[str, Any] = {"generated": 0, "aggregated": 0, "summaries": 0}

    def respond(role: str, messages: list[ModelMessage], info: AgentInfo) -> Reply:
        prompt = last_user_text(messages)
        if role == "generator":
            name = CYCLE[state["generated"] % len(CYCLE)]
            state["generated"] += 1
            return CANDIDATES[name]
        if role == "aggregator":
            seen = _which(prompt.split("--- Candidate solution 1 ---", 1)[-1])
            good = [n for n in seen if n in CORRECT]
            return CANDIDATES[good[0] if good else (seen[0] if seen else "wrong-all-detected")]
        if role == "verifier":
            if any(t.name == "run_sympy_script" for t in info.function_tools):
                return sympy_verifier_turn(messages, info)
            shown = _which(prompt)
            yes = bool(shown) and shown[0] != "wrong-all-detected"
            return final_answer(info, {"is_solution_correct": "yes" if yes else "no"})
        if role == "tiebreaker":
            return _tiebreak(prompt, info)
        if role == "solver":
            return CANDIDATES["correct-factored"].split("```python")[0]
        if role in ("formatter",):
            return _code(f"1 - {_N}/{_D}")
        if role == "reasoner":
            return "Detailed reasoning about fault propagation in the [[4,2,2]] circuit."
        if role == "summarizer":
            state["summaries"] += 1
            return CANDIDATES["wrong-all-detected" if state["summaries"] == 1 else "correct-factored"]
        if role == "manager":
            return _manager_turn(messages, info, state)
        if role == "subagent":
            return _subagent_turn(messages, info)
        return text(f"[{role}] no scripted reply")

    return respond


_DESC = "offline demo of the sampling scaffolds on the [[4,2,2]] QEC example"
register_scenario("sampling-qec", sampling_qec, description=_DESC + " (every role)")
for _strategy in ("two-step", "rsa", "manager", "tpbench", "multi-round"):
    register_scenario(f"{_strategy}-qec", sampling_qec, description=f"{_DESC} ({_strategy})")
