"""The baselines as their papers run them (issue #34, finding 3): tpbench-sympy passes a check on the
agent's overall score; tpbench-weak's verifier reasons before its yes/no and the tie-break compares
each pair once; multi-round carries each round's summary; rsa generates under CritPt's system prompt
and can vote on the exact answer string as physics-intern's code does; SCALAR's persona and
feedback texts are the ones the seed quotes, and its transcript names the Judge's own model. Where
PhysLab's way differs it is a switch, its default the paper's (or argued in its source note)."""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelRequest
from sampling_ctx import make_ctx, solution

from physlab.api import solve_async
from physlab.llm.scripted import final_answer, last_user_text, register_scenario, tool_call
from physlab.strategies.multi_round import MultiRound
from physlab.strategies.rsa import RSA, RSAParams
from physlab.strategies.scalar.personas import EXPERTISE, FEEDBACK, STYLE
from physlab.strategies.tpbench.select import VerifierParams
from physlab.strategies.tpbench.sympy_check import SympyParams, TPBenchSympy
from physlab.strategies.tpbench.weak import TPBenchWeak, WeakVerdict


def _generator(cycle, judge=None):
    def factory():
        state = {"n": 0}

        def respond(role, messages, info):
            if role == "generator":
                expr = cycle[state["n"] % len(cycle)]
                state["n"] += 1
                return solution(expr, reasoning=f"Derivation #{state['n']}.")
            return judge(role, messages, info)
        return respond
    return factory


# ---- tpbench-sympy ------------------------------------------------------------------------------

SCRIPT = "import sympy as sp\np = sp.symbols('p')\nprint(sp.expand((1 - p)**2))\n"


def _agent_reporting(script_in_report: str | None, overall: int):
    """A grading agent that runs SCRIPT, then reports it (re-typed: the JSON's script differs from
    the one it ran by its spacing) or reports no step at all."""
    def agent(role, messages, info):
        ran = any(getattr(p, "part_kind", "") == "tool-return" for m in messages for p in getattr(m, "parts", []))
        if not ran:
            return tool_call("run_sympy_script", {"script": SCRIPT})
        steps = [] if script_in_report is None else [{
            "step_number": 1, "calculation_description": "expand the square",
            "sympy_script_content": script_in_report, "script_stdout": "p**2 - 2*p + 1", "script_stderr": "",
            "is_correct": True, "error_explanation": ""}]
        return final_answer(info, {"sympy_verification": steps, "overall_score": overall, "general_feedback": "ok"})
    return agent


async def test_a_sympy_check_passes_on_the_agents_overall_score(tmp_path):
    retyped = SCRIPT.replace(" = ", "=").replace("\n", "\n\n")
    ctx = make_ctx(tmp_path, _generator(["(1 - p)**2"], judge=_agent_reporting(retyped, 1)))
    attempt = await TPBenchSympy.configured({"n_samples": 1, "k_verif": 1}).run(ctx)
    (check,) = attempt.details["checks"]["0"]
    assert check["passed"] is True and attempt.details["scores"] == {"0": 1.0}
    # what the sandbox really printed is still recorded beside the agent's report
    assert check["scripts_run"] == 1 and check["report"]["sympy_verification"][0]["script_ran"] is True

    ctx = make_ctx(tmp_path / "0", _generator(["(1 - p)**2"], judge=_agent_reporting(retyped, 0)))
    attempt = await TPBenchSympy.configured({"n_samples": 1, "k_verif": 1}).run(ctx)
    assert attempt.details["checks"]["0"][0]["passed"] is False


async def test_the_stricter_check_is_a_switch_and_a_report_with_no_step_fails_it(tmp_path):
    assert SympyParams().check_pass == "overall_score"
    ctx = make_ctx(tmp_path, _generator(["(1 - p)**2"], judge=_agent_reporting(None, 1)))
    attempt = await TPBenchSympy.configured({"n_samples": 1, "k_verif": 1, "check_pass": "steps_ran"}).run(ctx)
    (check,) = attempt.details["checks"]["0"]
    assert check["passed"] is False and "no step" in check["problem"]

    retyped = SCRIPT.replace(" = ", "=").replace("\n", "\n\n")   # the same script, spaced otherwise
    ctx = make_ctx(tmp_path / "b", _generator(["(1 - p)**2"], judge=_agent_reporting(retyped, 1)))
    attempt = await TPBenchSympy.configured({"n_samples": 1, "k_verif": 1, "check_pass": "steps_ran"}).run(ctx)
    assert attempt.details["checks"]["0"][0]["passed"] is True


# ---- tpbench-weak -------------------------------------------------------------------------------

def test_the_weak_verifier_reasons_before_its_verdict():
    assert list(WeakVerdict.model_fields) == ["reasoning", "is_solution_correct"]


async def test_the_tie_break_compares_each_pair_once(tmp_path):
    log: dict = {}

    def judge(role, messages, info):
        log.setdefault(role, []).append(last_user_text(messages))
        if role == "verifier":
            return final_answer(info, {"reasoning": "Both steps follow.", "is_solution_correct": "yes"})
        return final_answer(info, {"analysis": "Attempt 1 keeps the square.", "correct_attempt": 1})

    assert VerifierParams().k_tie == 1
    ctx = make_ctx(tmp_path, _generator(["1 - p", "(1 - p)**2", "1 - 2*p"], judge=judge))
    attempt = await TPBenchWeak.configured({"n_samples": 3, "k_verif": 2}).run(ctx)
    assert attempt.stop_reason == "tie_break" and len(attempt.details["best_groups"]) == 3
    assert len(log["tiebreaker"]) == 3  # three pairs, one comparison each (Algorithm 2, lines 15-16)


# ---- multi-round --------------------------------------------------------------------------------

async def test_multi_round_carries_each_rounds_summary(tmp_path):
    log: dict = {}

    def factory():
        state = {"reasoner": 0, "summarizer": 0}

        def respond(role, messages, info):
            state[role] += 1
            n = state[role] - 1
            log.setdefault(role, []).append(last_user_text(messages))
            if role == "reasoner":
                return f"LONG-REASONING-{n} " + "we expand and check " * 50
            return solution("(1 - p)**2", reasoning=f"SUMMARY-{n}: both gates survive.")
        return respond

    ctx = make_ctx(tmp_path, factory)
    attempt = await MultiRound.configured({"extra_rounds": 2}).run(ctx)
    assert attempt.status == "complete"
    third = log["reasoner"][2]
    assert "SUMMARY-0" in third and "SUMMARY-1" in third      # Appendix A.2: the previous conclusions
    assert "LONG-REASONING-0" not in third and "LONG-REASONING-1" not in third
    assert attempt.details["rounds"][2]["carried"] == ["summary", "summary"]


# ---- rsa ----------------------------------------------------------------------------------------

def _system(messages) -> str:
    return "\n".join(m.instructions for m in messages if isinstance(m, ModelRequest) and m.instructions)


def _rsa_scenario(cycle, log):
    def factory():
        state = {"n": 0}

        def respond(role, messages, info):
            log.setdefault(role, []).append(messages)
            expr = cycle[state["n"] % len(cycle)]
            state["n"] += 1
            return solution(expr)
        return respond
    return factory


# Written three ways, (1-p)^2 has four votes; the wrong 1 - p has three by its exact string.
POPULATION = ["1 - p", "(1 - p)**2", "1 - p", "1 - 2*p + p**2", "1 - p", "(1 - p)**2", "p**2 - 2*p + 1"]


async def test_rsa_votes_by_equivalence_by_default_and_by_exact_string_as_a_switch(tmp_path):
    assert RSAParams().vote == "equivalence"
    assert "exact" in RSAParams.model_fields["vote"].json_schema_extra["source"]
    ctx = make_ctx(tmp_path, _rsa_scenario(POPULATION, {}))
    attempt = await RSA.configured({"population": 7, "rounds": 1, "concurrency": 1}).run(ctx)
    assert "(1 - p)**2" in attempt.answer_code or "p**2" in attempt.answer_code

    ctx = make_ctx(tmp_path / "x", _rsa_scenario(POPULATION, {}))
    attempt = await RSA.configured({"population": 7, "rounds": 1, "concurrency": 1, "vote": "exact"}).run(ctx)
    assert "F = 1 - p\n" in attempt.answer_code + "\n"    # physics-intern's key: the exact code string


async def test_rsa_generates_under_critpts_system_prompt_and_aggregates_under_its_own(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _rsa_scenario(["(1 - p)**2"], log))
    await RSA.configured({"population": 2, "subset_size": 2, "rounds": 2, "concurrency": 1}).run(ctx)
    gen = " ".join(_system(log["generator"][0]).split())
    assert "Final Answer:" in gen and "at least 12 significant digits" in gen and "import no module" in gen
    agg = " ".join(_system(log["aggregator"][0]).split())
    assert "candidate solutions" in agg and "Final Answer:" in agg
    prompt = last_user_text(log["aggregator"][0])
    assert prompt.count("## Candidate ") == 2 and "def answer(p)" in prompt


# ---- SCALAR -------------------------------------------------------------------------------------

def test_scalar_persona_and_feedback_texts_are_the_seeds_quotes():
    assert EXPERTISE["expert"] == ("You are an expert in theoretical physics with deep knowledge of QFT and "
                                   "mathematical methods.")
    assert EXPERTISE["novice"] == ("You are a graduate student learning QFT, working through problems to build "
                                   "understanding.")
    assert STYLE["meticulous"] == ("Check every algebraic step carefully. Verify signs, prefactors, and limits before "
                                   "proceeding.")
    assert STYLE["physical"] == ("Prioritize physical intuition. Use dimensional analysis, limiting cases, and "
                                 "symmetry to guide your calculation.")
    assert STYLE["skeptical"] == ("Question every assumption. If a step seems unjustified, flag it and consider "
                                  "alternatives.")
    assert FEEDBACK["adversarial"] == "Aggressively challenge every claim. Demand explicit justification for each step."
    assert FEEDBACK["strict"] == "Flag every error precisely with the correct form."
    assert FEEDBACK["pedagogical"] == ("Guide through Socratic questioning. Ask leading questions rather than stating "
                                       "errors directly.")
    assert FEEDBACK["lenient"] == ("Focus on what the solver got right. Offer gentle suggestions. Accept partial "
                                   "progress.")
    assert EXPERTISE["default"] == STYLE["default"] == FEEDBACK["default"] == ""


async def test_the_scalar_transcript_names_the_judges_own_model(tmp_path):
    from physlab.problems.model import Problem
    from physlab.strategies.scalar.scenarios import scalar_demo

    register_scenario("scalar-demo-judge", scalar_demo)
    problem = Problem(id="decay", statement="Compute the lifetime of Phi to lowest order in mu.")
    await solve_async(problem, "scalar", "scripted:scalar-demo", workspace=tmp_path / "r",
                      role_models={"judge": "scripted:scalar-demo-judge"})
    transcript = json.loads((tmp_path / "r" / "scalar_transcript.json").read_text())
    assert transcript["model"] == "scripted:scalar-demo"
    assert transcript["judge_model"] == "scripted:scalar-demo-judge"

