"""Scripted scenario ``scripted:scalar-demo``: plays Actor, Critic and Judge offline.

Turn 0 scores 62 (not equivalent), turn 1 scores 85 with an equivalent answer, so a run passes at
turn 1 (the Judge decides equivalence; the grader's verdict on the placeholder is stored beside it
and disagrees). The answer is a placeholder (template filled with zeros, or ``\\boxed{0}``); the
demo shows the mechanics, it solves nothing. The Judge gives its evaluation through its output
tool, as a real model does.
"""

from __future__ import annotations

from typing import Any

from physlab.llm.scripted import Reply, Scenario, final_answer, first_user_text, last_user_text, register_scenario
from physlab.strategies.minions.scenarios import _placeholder_answer


def judge_reply(total_high: bool) -> dict[str, Any]:
    scores = ({"correctness": 45, "rigor": 8, "logical_flow": 8, "justification": 8, "completeness": 8,
               "physical_consistency": 8} if total_high else
              {"correctness": 30, "rigor": 6, "logical_flow": 7, "justification": 6, "completeness": 6,
               "physical_consistency": 7})
    return {"final_answer": "0", "final_answer_equivalent": total_high, "scores": scores,
            "error_categories": [] if total_high else ["COMPUTATIONAL_ERROR"],
            "flags": {"SIGN_ERROR": not total_high}, "missing": [],
            "critic_scores": {"accuracy": 15, "clarity": 8}, "summary": "scripted judgement"}


def scalar_demo() -> Scenario:
    state = {"actor": 0, "judge": 0}

    def respond(role: str, messages: list[Any], info: Any) -> Reply:
        prompt = last_user_text(messages)
        if role == "actor":
            state["actor"] += 1
            return (f"Attempt {state['actor']} (scripted). Derivation: step 1, step 2.\n\n"
                    + _placeholder_answer(prompt if state["actor"] == 1 else first_user_text(messages)))
        if role == "critic":
            return "Check the sign in step 2 and the units of the result (scripted feedback)."
        if role == "judge":
            state["judge"] += 1
            return final_answer(info, judge_reply(state["judge"] >= 2))
        return f"[{role}] scripted scalar-demo has no reply for this role"

    return respond


register_scenario("scalar-demo", scalar_demo,
                  description="SCALAR roles: judge 62 then 85 (equivalent), critic asks for checks")
