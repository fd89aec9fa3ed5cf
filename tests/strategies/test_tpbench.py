"""TPBench study (§3): N candidates, functional distinctness at M points, then vote / best-of-N /
weak verifier / SymPy-augmented verifier with pairwise tie-break."""

from __future__ import annotations

import re

import pytest
from sampling_ctx import make_ctx, make_problem, solution

from physlab.errors import UserError
from physlab.llm.scripted import final_answer, first_user_text, last_user_text, text, tool_call
from physlab.strategies.tpbench.best_of_n import TPBenchBestOfN
from physlab.strategies.tpbench.sympy_check import TPBenchSympy
from physlab.strategies.tpbench.vote import TPBenchVote
from physlab.strategies.tpbench.weak import VARIANTS, TPBenchWeak

# By string the wrong "1 - 2*p" is the most common answer; by function (1-p)^2 wins 4 to 3.
VOTE_CYCLE = ["1 - 2*p", "(1 - p)**2", "1 - 2*p", "1 - 2*p + p**2", "1 - 2*p", "(1 - p)**2",
              "p**2 - 2*p + 1"]


def _generator(cycle, log=None, judge=None):
    def factory():
        state = {"n": 0}

        def respond(role, messages, info):
            if role == "generator":
                expr = cycle[state["n"] % len(cycle)]
                state["n"] += 1
                return solution(expr, reasoning=f"Derivation #{state['n']}.")
            assert judge is not None, role
            return judge(role, messages, info)
        return respond
    return factory


async def test_vote_groups_equivalent_answers_written_differently(tmp_path):
    ctx = make_ctx(tmp_path, _generator(VOTE_CYCLE))
    attempt = await TPBenchVote.configured({"n_samples": 7, "concurrency": 1}).run(ctx)
    assert attempt.status == "complete"
    assert attempt.details["group_sizes"] == [4, 3], attempt.details["candidates"]
    assert attempt.details["n_points"] == 5
    final = re.findall(r"Final Answer: F = (.*)", attempt.answer_text)[-1]
    assert final in {"(1 - p)**2", "1 - 2*p + p**2", "p**2 - 2*p + 1"}
    assert final in attempt.answer_code
    assert attempt.usage.calls == 7
    # checkpoints: after sample 1 the vote is "1 - 2*p"; it stays ahead (ties go to the earlier
    # answer) until sample 7 puts (1-p)^2 ahead, 4 to 3
    steps = [(c.step, c.calls) for c in ctx.checkpoints]
    assert steps == [("sample 1", 1), ("sample 7", 7)]
    assert "1 - 2*p" in ctx.checkpoints[0].answer_code and ctx.checkpoints[1].answer_code == attempt.answer_code


async def test_vote_leaves_out_candidates_that_do_not_evaluate(tmp_path):
    cycle = ["1 - 2*p", "undefined_name + p", "1 - 2*p"]
    ctx = make_ctx(tmp_path, _generator(cycle))
    attempt = await TPBenchVote.configured({"n_samples": 3}).run(ctx)
    assert attempt.details["group_sizes"] == [2]
    (bad,) = [c for c in attempt.details["candidates"] if "undefined_name" in c["code"]]
    assert bad["group"] is None and bad["eval_error"]


async def test_best_of_n_uses_the_grader_as_oracle(tmp_path):
    cycle = ["1 - 2*p", "1 - 2*p", "1 - p", "p**2 - 2*p + 1"]
    ctx = make_ctx(tmp_path, _generator(cycle))
    attempt = await TPBenchBestOfN.configured({"n_samples": 4}).run(ctx)
    assert attempt.details["oracle_found"] is True
    assert "p**2 - 2*p + 1" in attempt.answer_code
    verdicts = attempt.details["oracle_verdicts"]
    # graded largest class first, stopping at the first correct one
    assert verdicts[0]["verdict"] == "incorrect" and verdicts[-1]["verdict"] == "correct"
    assert all(v["verdict"] == "incorrect" for v in verdicts[:-1])


async def test_best_of_n_refuses_a_problem_without_reference(tmp_path):
    ctx = make_ctx(tmp_path, _generator(["1 - p"]), problem=make_problem(reference=None))
    with pytest.raises(UserError, match="no reference answer"):
        await TPBenchBestOfN.configured({"n_samples": 2}).run(ctx)
    assert ctx.usage.total().calls == 0


def _weak_judge(log):
    """Verifier: yes to (1-p)^2 and 1-p, no to 1-2p. Tie-breaker: prefers (1-p)^2."""
    def judge(role, messages, info):
        prompt = last_user_text(messages)
        log.setdefault(role, []).append(prompt)
        if role == "verifier":
            final = re.findall(r"Final Answer: F = (.*)", prompt)[-1]
            verdict = "no" if final == "1 - 2*p" else "yes"
            return final_answer(info, {"reasoning": "Checked each step.", "is_solution_correct": verdict})
        a1 = prompt.split("Attempt 1:")[1].split("Attempt 2:")[0]
        choice = 1 if "F = (1 - p)**2" in a1 else 2
        return final_answer(info, {"analysis": "Reasoning...", "correct_attempt": choice})
    return judge


async def test_weak_verifier_scores_and_tie_break_picks_pairwise_winner(tmp_path):
    log: dict = {}
    cycle = ["1 - p", "1 - 2*p", "(1 - p)**2", "1 - 2*p"]
    ctx = make_ctx(tmp_path, _generator(cycle, judge=_weak_judge(log)))
    attempt = await TPBenchWeak.configured({"n_samples": 4, "k_verif": 6, "k_tie": 3}).run(ctx)
    assert attempt.status == "complete" and attempt.stop_reason == "tie_break"
    scores = attempt.details["scores"]
    sizes = attempt.details["group_sizes"]
    assert sizes == [2, 1, 1] and sorted(scores.values()) == [0.0, 1.0, 1.0]
    assert len(log["verifier"]) == 3 * 6
    # the three prompt variants of the paper are all used
    phrases = {"Decide whether the student solved it": 1, "Check that every necessary step": 2,
               "two big mistakes happen to cancel": 3}
    used = {v for p in log["verifier"] for k, v in phrases.items() if k in p}
    assert used == {1, 2, 3}
    assert len(log["tiebreaker"]) == 3  # one pair x k_tie
    assert "F = (1 - p)**2" in attempt.answer_text
    (matchup,) = attempt.details["tie_break"]["matchups"]
    assert {matchup["votes_a"], matchup["votes_b"]} == {3, 0}
    # checkpoints: the majority as samples came back (1-p, then 1-2p once it had two), then the
    # best-scored class as the checks came back (1-p, the first verified); the tie-break's pick is the cell's
    best = [(c.step.split()[0], re.findall(r"F = (.*)", c.answer_text)[-1]) for c in ctx.checkpoints]
    assert best == [("sample", "1 - p"), ("sample", "1 - 2*p"), ("verification", "1 - p")]


async def test_weak_single_top_score_needs_no_tie_break(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _generator(["1 - 2*p", "(1 - p)**2"], judge=_weak_judge(log)))
    attempt = await TPBenchWeak.configured({"n_samples": 2, "k_verif": 2}).run(ctx)
    assert attempt.stop_reason == "verified" and "tiebreaker" not in log
    assert "F = (1 - p)**2" in attempt.answer_text


def _steps(expr: str, wrong: bool) -> str:
    second = "-2*p" if wrong else "-2*(1 - p)"
    return (f"Step 1: the survival probability is a square. CHECK: (1 - p)*(1 - p) == (1 - p)**2\n"
            f"Step 2: its derivative. CHECK: sp.diff((1 - p)**2, p) == {second}\n")


def _script(check: str) -> str:
    lhs, rhs = check.split("==")
    return f"import sympy as sp\np = sp.symbols('p')\nprint(sp.simplify(({lhs}) - ({rhs})) == 0)\n"


def _sympy_agent(log):
    """A grading agent that checks each CHECK line with a script it runs through its tool, and
    grades from what the sandbox printed (not from anything it knows)."""
    def judge(role, messages, info):
        assert role == "verifier"
        assert [t.name for t in info.function_tools] == ["run_sympy_script"]
        task = last_user_text(messages)
        checks = re.findall(r"CHECK: (.*)", task)
        returns = [p.content for m in messages for p in getattr(m, "parts", [])
                   if getattr(p, "part_kind", "") == "tool-return"]
        if len(returns) < len(checks):
            script = _script(checks[len(returns)])
            log.setdefault("scripts", []).append(script)
            return tool_call("run_sympy_script", {"script": script})
        steps = []
        for i, out in enumerate(returns):
            stdout = out.split("STDOUT:\n")[1].split("\nSTDERR")[0].strip()
            steps.append({"step_number": i + 1, "calculation_description": checks[i],
                          "sympy_script_content": _script(checks[i]),
                          "script_stdout": stdout, "script_stderr": "",
                          "is_correct": stdout == "True", "error_explanation": ""})
        return final_answer(info, {"sympy_verification": steps,
                                   "overall_score": int(all(s["is_correct"] for s in steps)),
                                   "general_feedback": "checked"})
    return judge


def _sympy_generator(log):
    def factory():
        state = {"n": 0}
        agent = _sympy_agent(log)

        def respond(role, messages, info):
            if role == "generator":
                i = state["n"]
                state["n"] += 1
                wrong = i % 2 == 1  # the second candidate has a wrong step 2
                expr = "1 - 2*p" if wrong else "(1 - p)**2"
                return solution(expr, reasoning=_steps(expr, wrong))
            return agent(role, messages, info)
        return respond
    return factory


async def test_sympy_verifier_runs_step_scripts_and_a_wrong_step_fails(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _sympy_generator(log))
    attempt = await TPBenchSympy.configured({"n_samples": 2, "k_verif": 1}).run(ctx)
    assert attempt.status == "complete"
    scores = attempt.details["scores"]
    group_of = {("wrong" if "F = 1 - 2*p" in c["code"] else "right"): c["group"]
                for c in attempt.details["candidates"]}
    assert scores[str(group_of["right"])] == 1.0 and scores[str(group_of["wrong"])] == 0.0
    bad = attempt.details["checks"][str(group_of["wrong"])][0]
    assert bad["passed"] is False and bad["wrong_steps"] == [2]
    step2 = bad["report"]["sympy_verification"][1]
    assert step2["script_stdout"].strip() == "False"  # printed by the sandbox run
    assert bad["scripts_run"] == 2 and all(s["script_ran"] for s in bad["report"]["sympy_verification"])
    assert "F = (1 - p)**2" in attempt.answer_text


async def test_malformed_verdicts_are_retried_and_a_verifier_without_one_says_no(tmp_path):
    """A verifier whose verdict is outside its schema is sent the validation error by pydantic-ai
    and asked again; one that only ever answers in prose (never through its output tool) is asked
    1 + OUTPUT_RETRIES times and then counts as "no": it did not endorse the solution."""
    from physlab.strategies.sampling import OUTPUT_RETRIES

    requests: dict[str, list[int]] = {"wrong": [], "right": []}

    def judge(role, messages, info):
        assert role == "verifier"
        which = "wrong" if "F = 1 - 2*p" in first_user_text(messages) else "right"
        requests[which].append(len(messages))
        if which == "wrong":
            return text('{"is_solution_correct": "yes"}')  # prose that looks right, never the tool
        if len(messages) == 1:
            return final_answer(info, {"reasoning": "hm", "is_solution_correct": "maybe"})  # not a verdict: retried
        return final_answer(info, {"reasoning": "Each step holds.", "is_solution_correct": "yes"})

    ctx = make_ctx(tmp_path, _generator(["1 - 2*p", "(1 - p)**2"], judge=judge))
    attempt = await TPBenchWeak.configured({"n_samples": 2, "k_verif": 1, "concurrency": 1}).run(ctx)
    assert "F = (1 - p)**2" in attempt.answer_text and attempt.stop_reason == "verified"
    assert sorted(attempt.details["scores"].values()) == [0.0, 1.0]
    votes = {r["vote"] for recs in attempt.details["checks"].values() for r in recs}
    assert votes == {1, None}  # None: no valid verdict, scored as "no"
    assert requests["right"] == [1, 3]  # the retry carries the invalid call and the error
    assert len(requests["wrong"]) == 1 + OUTPUT_RETRIES
    assert attempt.usage.calls == 2 + 2 + 1 + OUTPUT_RETRIES  # generators, then every verifier request


def test_the_weak_verifier_has_the_papers_three_prompts():
    assert VARIANTS == ("weak_verify_1", "weak_verify_2", "weak_verify_3")


async def test_answers_that_cannot_be_evaluated_never_form_one_class(tmp_path):
    """The issue's case: three different answers holding a constant the template does not define
    (1 - gamma p, 1 - eta p^2/3, exp(-kappa p)) give no number at the test points. Compared by
    their values there, all three "agreed" (no value = no value), became one class of 3, outvoted the
    two correct answers and won. With the grader's equivalence they are three classes."""
    cycle = ["1 - sp.Symbol('gamma')*p", "(1 - p)**2",
             "1 - sp.Symbol('eta')*p**2/3", "sp.exp(-sp.Symbol('kappa')*p)", "1 - 2*p + p**2"]
    ctx = make_ctx(tmp_path, _generator(cycle))
    attempt = await TPBenchVote.configured({"n_samples": 5}).run(ctx)
    assert attempt.details["group_sizes"] == [2, 1, 1, 1], attempt.details["candidates"]
    by_index = {c["index"]: c["group"] for c in attempt.details["candidates"]}
    assert by_index[1] == by_index[4] == 0  # the two correct answers, written differently, vote together
    assert len({by_index[0], by_index[2], by_index[3]}) == 3  # gamma, eta, kappa: three classes
    assert attempt.verdict is None and "(1 - p)**2" in attempt.answer_code
    assert (await ctx.grader.grade(attempt.answer_code)).correct


async def test_samples_run_concurrently_within_the_bound():
    import asyncio

    from physlab.llm.errors import BudgetExceeded
    from physlab.strategies.sampling import gather_bounded

    live = {"now": 0, "max": 0}

    def job(i):
        async def run():
            live["now"] += 1
            live["max"] = max(live["max"], live["now"])
            await asyncio.sleep(0.01)
            live["now"] -= 1
            if i == 5:
                raise BudgetExceeded("max_calls")
            return i
        return run

    outcomes = await gather_bounded([job(i) for i in range(12)], 3)
    assert live["max"] == 3
    assert [o.value for o in outcomes[:5]] == [0, 1, 2, 3, 4]
    assert outcomes[5].budget
    # jobs not started once the budget is hit are skipped, not sent
    assert sum(o.ok for o in outcomes) < 12


async def test_open_question_groups_by_final_answer_line(tmp_path):
    """No template, nothing to evaluate: candidates agreeing on their "Final Answer:" line (up to
    case and spacing) form one class, and the verifiers still work on the text."""
    texts = ["Work.\nFinal Answer: the gap closes at  g = 1", "Other work.\nFinal Answer: no gap",
             "More.\nfinal answer: The gap closes at g = 1"]

    def factory():
        state = {"n": 0}

        def respond(role, messages, info):
            if role == "generator":
                state["n"] += 1
                return texts[(state["n"] - 1) % 3]
            yes = "no gap" not in last_user_text(messages)
            return final_answer(info, {"reasoning": "Read it through.", "is_solution_correct": "yes" if yes else "no"})
        return respond

    ctx = make_ctx(tmp_path, factory, problem=make_problem(template=False))
    vote = await TPBenchVote.configured({"n_samples": 3}).run(ctx)
    assert vote.details["group_sizes"] == [2, 1]
    assert "gap closes" in vote.answer_text and vote.answer_code is None
    ctx = make_ctx(tmp_path / "weak", factory, problem=make_problem(template=False))
    weak = await TPBenchWeak.configured({"n_samples": 3, "k_verif": 2}).run(ctx)
    assert weak.status == "complete" and "gap closes" in weak.answer_text


async def test_budget_cuts_verification_and_keeps_the_best_so_far(tmp_path):
    from physlab.llm.usage import Budget

    def factory():
        state = {"n": 0}

        def respond(role, messages, info):
            if role == "generator":
                state["n"] += 1
                return f"Work.\nFinal Answer: answer {state['n'] % 2}"
            return final_answer(info, {"reasoning": "Fine.", "is_solution_correct": "yes"})
        return respond

    ctx = make_ctx(tmp_path, factory, problem=make_problem(template=False),
                   budget=Budget(max_calls=6))
    attempt = await TPBenchWeak.configured({"n_samples": 4, "k_verif": 3, "concurrency": 1}).run(ctx)
    assert attempt.status == "partially_complete"
    assert attempt.stop_reason == "budget:max_calls"
    assert attempt.answer_text and attempt.usage.calls == 6
    # only the first class got its (two) checks in before the budget ran out
    assert attempt.details["scores"] == {"0": 1.0}

    ctx = make_ctx(tmp_path / "gen", factory, problem=make_problem(template=False), budget=Budget(max_calls=2))
    vote = await TPBenchVote.configured({"n_samples": 4, "concurrency": 1}).run(ctx)
    assert vote.status == "partially_complete" and vote.details["n_generated"] == 2

    # the budget ends with the samples: no verification ran, the "verifier" was a majority vote
    ctx = make_ctx(tmp_path / "none", factory, problem=make_problem(template=False), budget=Budget(max_calls=4))
    weak = await TPBenchWeak.configured({"n_samples": 4, "k_verif": 3, "concurrency": 1}).run(ctx)
    assert weak.details["fallback"] and weak.ran_as == "majority vote (no verification finished)"
    assert attempt.ran_as is None  # some checks finished: still the weak verifier


async def test_with_check_pass_steps_ran_a_step_whose_script_never_ran_cannot_pass(tmp_path):
    """(PhysLab's stricter switch.) A grading agent that says "correct" for a step it never checked -- it
    reports a script and its "output" without running it, or runs one that crashes -- verified nothing:
    the check fails."""
    ran_ok = _script("(1 - p)*(1 - p) == (1 - p)**2")
    crashes = "import sympy as sp\nraise SystemExit(3)\n"
    never_ran = _script("sp.diff((1 - p)**2, p) == -2*(1 - p)")

    def agent(role, messages, info):
        returns = [p for m in messages for p in getattr(m, "parts", []) if getattr(p, "part_kind", "") == "tool-return"]
        if not returns:
            return tool_call("run_sympy_script", {"script": ran_ok})
        if len(returns) == 1:
            return tool_call("run_sympy_script", {"script": crashes})
        steps = [{"step_number": i + 1, "calculation_description": d, "sympy_script_content": sc,
                  "script_stdout": "True", "script_stderr": "", "is_correct": True, "error_explanation": ""}
                 for i, (d, sc) in enumerate([("square", ran_ok), ("crash", crashes), ("derivative", never_ran)])]
        return final_answer(info, {"sympy_verification": steps, "overall_score": 1, "general_feedback": "all good"})

    ctx = make_ctx(tmp_path, _generator(["(1 - p)**2"], judge=agent))
    attempt = await TPBenchSympy.configured({"n_samples": 1, "k_verif": 1, "check_pass": "steps_ran"}).run(ctx)
    (check,) = attempt.details["checks"]["0"]
    assert check["passed"] is False and check["wrong_steps"] == [2, 3]
    square, crash, derivative = check["report"]["sympy_verification"]
    assert square["is_correct"] and square["script_stdout"].strip() == "True"  # printed by the sandbox
    assert not crash["is_correct"] and "exit code 3" in crash["error_explanation"]
    assert not derivative["is_correct"] and not derivative["script_ran"]
    assert derivative["script_stdout"] == ""  # the claimed output is not kept as if it were real
    assert attempt.details["scores"] == {"0": 0.0}


FORM_TRACE = ("Indices mu, nu, rho, sigma;\nLocal T = g_(1, mu, nu, rho, sigma);\nTrace4, 1;\nPrint;\n.end\n")


@pytest.mark.slow
async def test_the_sympy_verifier_checks_a_dirac_trace_step_in_form_with_param_cas(tmp_path):
    """--param cas=form: the verifier also gets run_cas_script; a trace step checked in FORM passes on
    what FORM really printed (Tr γ^μγ^νγ^ργ^σ = 4(g^{μν}g^{ρσ} − g^{μρ}g^{νσ} + g^{μσ}g^{νρ}))."""
    from physlab.tools import cas

    if not cas.system_status("form").available:
        pytest.skip(cas.system_status("form").reason)
    seen: dict = {}

    def agent(role, messages, info):
        seen["tools"] = [t.name for t in info.function_tools]
        seen["instructions"] = "\n".join(getattr(m, "instructions", None) or "" for m in messages)
        returns = [p.content for m in messages for p in getattr(m, "parts", []) if getattr(p, "part_kind", "") == "tool-return"]
        if not returns:
            return tool_call("run_cas_script", {"script": FORM_TRACE})
        out = returns[0].split("STDOUT:\n")[1].split("\nSTDERR")[0]
        flat = "".join(out.split())
        right = "4*d_(mu,nu)*d_(rho,sigma)-4*d_(mu,rho)*d_(nu,sigma)+4*d_(mu,sigma)*d_(nu,rho)" in flat
        steps = [{"step_number": 1, "calculation_description": "the trace of four gamma matrices",
                  "sympy_script_content": FORM_TRACE, "script_stdout": out, "script_stderr": "",
                  "is_correct": right, "error_explanation": ""}]
        return final_answer(info, {"sympy_verification": steps, "overall_score": int(right), "general_feedback": "ok"})

    ctx = make_ctx(tmp_path, _generator(["(1 - p)**2"], judge=agent))
    attempt = await TPBenchSympy.configured({"n_samples": 1, "k_verif": 1, "cas": "form"}).run(ctx)
    assert seen["tools"] == ["run_sympy_script", "run_cas_script"] and "Trace4" in seen["instructions"]
    (check,) = attempt.details["checks"]["0"]
    (step,) = check["report"]["sympy_verification"]
    assert check["passed"] is True and step["language"] == "form" and step["script_ran"]
    assert "d_(mu,nu)" in step["script_stdout"]       # printed by FORM in the sandbox


def test_param_cas_names_the_system_and_a_missing_one_is_one_line(monkeypatch):
    from physlab.tools import cas
    from physlab.tools.cas.detect import SystemStatus

    assert TPBenchSympy.configured({}).params.cas == "none"      # the paper's verifier: SymPy only
    with pytest.raises(UserError):
        TPBenchSympy.configured({"cas": "mathematica"})
    missing = SystemStatus(language="form", name="FORM", available=False, reason="FORM: no 'form' on the sandbox's PATH")
    monkeypatch.setattr(cas, "system_status", lambda language: missing)
    with pytest.raises(UserError, match="no 'form'"):
        TPBenchSympy.configured({"cas": "form"}).params.cas_status()
