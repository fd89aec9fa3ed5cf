"""Equal budgets that are equal (issue #34, findings 4 and 5): no strategy gets a request past a cap
(the lab's and the manager's old grace calls), the last request goes out with what is left as its
output cap, and a request that fits the budget is sent."""

from __future__ import annotations

import json

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from sampling_ctx import filled, make_problem

from physlab.api import solve_async
from physlab.llm.errors import BudgetExceeded
from physlab.llm.meter import RunMeter
from physlab.llm.scripted import final_answer, register_scenario
from physlab.llm.seam import seam_model
from physlab.llm.usage import Budget, CallRecord


def _calls(ws):
    return [json.loads(line) for line in (ws / "calls.jsonl").read_text().splitlines() if line.strip()]


async def test_grace_grants_no_request_past_a_cap():
    meter = RunMeter(Budget(max_calls=1))
    meter.record(CallRecord(role="solver", model="m", input_tokens=10, output_tokens=10))
    with meter.grace(2), pytest.raises(BudgetExceeded):
        await meter.reserve(input_tokens=10, want_output=100, min_reply=1)


async def test_the_lab_at_max_calls_5_makes_at_most_5_requests_and_keeps_one_for_its_formatter(tmp_path):
    from tests.lab.mini import mini_problem, register

    model = register("lab-mini-budget5")
    attempt = await solve_async(mini_problem(), "lab", model, workspace=tmp_path / "r", budget=Budget(max_calls=5))
    recs = _calls(tmp_path / "r")
    assert len(recs) <= 5                       # was 6: two formatter calls granted past the cap
    assert recs[-1]["role"] == "formatter"      # the lab kept room for it within the budget
    assert attempt.stop_reason == "budget:max_calls"


async def test_the_manager_past_its_budget_gives_no_answer_rather_than_a_one_shot(tmp_path):
    """At --max-tokens 2000 the manager could not run an iteration; it used to answer anyway from an
    empty memory with one request granted past the budget. The public code writes no answer when the
    manager never submits."""
    def factory():
        def respond(role, messages, info):
            if info.allow_text_output:  # an iteration: the manager ends it with a status line
                return "Nothing verified yet; next iteration: derive F."
            return final_answer(info, {"answer_text": "F = 1", "answer_code": filled("1")})
        return respond

    register_scenario("manager-tiny-budget", factory)
    problem = make_problem()
    attempt = await solve_async(problem, "manager", "scripted:manager-tiny-budget", workspace=tmp_path / "r",
                                budget=Budget(max_tokens=2000))
    used = sum(r["input_tokens"] + r["output_tokens"] for r in _calls(tmp_path / "r"))
    assert used <= 2000
    assert attempt.status == "no_answer" and attempt.answer_text is None and attempt.answer_code is None


async def test_the_last_request_is_sent_with_what_is_left(tmp_path):
    """Less than the old 256-token 'useful reply' is left, nothing else is in flight: the request goes
    out with the rest of the budget as its output cap instead of being refused."""
    caps: list[int] = []

    def answer(messages, info):
        caps.append(info.model_settings["max_tokens"])
        return ModelResponse(parts=[TextPart("ok")])

    meter = RunMeter(Budget(max_tokens=200), tmp_path / "calls.jsonl")
    agent = Agent(seam_model(FunctionModel(answer), role="solver", spec="function:test", meter=meter))
    result = await agent.run("hi")
    assert result.output == "ok"
    assert len(caps) == 1 and 0 < caps[0] < 200
    assert meter.total().total_tokens <= 200


async def test_a_request_that_fits_the_budget_is_sent(tmp_path):
    """oneshot at a cap between what its request needs and that plus 256 tokens: it used to send
    nothing (at --max-tokens 554 it needs 238); now it answers within the cap."""
    sent: list[int | None] = []

    def factory():
        def respond(role, messages, info):
            sent.append((info.model_settings or {}).get("max_tokens"))
            return f"F = (1-p)^2.\n\nFinal Answer: $(1-p)^2$\n\n```python\n{filled('(1 - p)**2')}```"
        return respond

    register_scenario("oneshot-fits", factory)
    problem = make_problem()
    big = 100_000
    await solve_async(problem, "oneshot", "scripted:oneshot-fits", workspace=tmp_path / "a",
                      budget=Budget(max_tokens=big))
    estimate = big - sent[0]                     # what the request's input was reckoned at
    output = _calls(tmp_path / "a")[0]["output_tokens"]
    cap = estimate + output + 20                 # fits, with less than 256 tokens to spare for the reply
    attempt = await solve_async(problem, "oneshot", "scripted:oneshot-fits", workspace=tmp_path / "b",
                                budget=Budget(max_tokens=cap))
    assert attempt.status == "complete" and attempt.verdict is not None and attempt.verdict.verdict == "correct"
    assert sum(r["input_tokens"] + r["output_tokens"] for r in _calls(tmp_path / "b")) <= cap
