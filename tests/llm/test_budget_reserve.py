"""Budgets that hold (issue #25): a request is sent with ``max_tokens`` no larger than what the
token or cost budget has left after the requests in flight set aside theirs (the last one with what
is left, issue #34), so a run ends within its cap even with long replies and many
requests in flight."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.errors import BudgetExceeded
from physlab.llm.meter import RunMeter
from physlab.llm.models import RunModels
from physlab.llm.standin import ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

LONG = "word " * 4000  # 5,000 tokens when nothing cuts it


def _models(srv, meter, **defaults):
    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=RetryPolicy(backoff_s=0.01), **defaults)})
    return RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg)


def _caps(srv):
    return [b.get("max_completion_tokens") or b.get("max_tokens") for b in srv.requests]


async def test_each_request_is_capped_by_what_the_token_budget_has_left():
    with StandinServer(ScriptedResponder([LONG], repeat_last=True)) as srv:
        meter = RunMeter(Budget(max_tokens=6000))
        models = _models(srv, meter)
        agent = Agent(models.for_role("solver"))
        with pytest.raises(BudgetExceeded) as exc:
            for _ in range(10):
                await agent.run("write at length")
        await models.aclose()
    assert exc.value.limit == "max_tokens" and "no output tokens left" in str(exc.value)
    used = meter.total().total_tokens
    assert used == srv.stats.total_tokens <= 6000  # never past the cap, not even by one reply
    caps = _caps(srv)
    assert all(c is not None for c in caps) and caps == sorted(caps, reverse=True)
    assert 6000 - used < 100  # the last request went out with what was left (issue #34)


async def test_requests_in_flight_share_the_budget_and_the_cap_holds():
    reply = "word " * 1200  # 1,500 tokens
    with StandinServer(ScriptedResponder([reply], repeat_last=True), latency_s=0.05) as srv:
        meter = RunMeter(Budget(max_tokens=12000))
        models = _models(srv, meter, max_output_tokens=2000)
        agent = Agent(models.for_role("sampler"))

        async def sample(i):
            try:
                return (await agent.run(f"sample {i}")).output
            except BudgetExceeded:
                return None

        outs = await asyncio.gather(*(sample(i) for i in range(8)))
        await models.aclose()
    assert meter.total().total_tokens <= 12000
    assert srv.stats.max_in_flight >= 2  # they really ran side by side
    # while caps were held by requests in flight, the others waited instead of being refused: as many
    # whole replies as the budget holds came back, and only what could not fit was not sent
    assert sum(o == reply for o in outs) >= 6
    assert len(srv.requests) <= 8


async def test_a_cost_cap_reserves_by_the_price_of_the_cap():
    with StandinServer(ScriptedResponder([LONG], repeat_last=True)) as srv:
        meter = RunMeter(Budget(max_cost_usd=0.05))
        models = _models(srv, meter, input_usd_per_mtok=2.0, output_usd_per_mtok=8.0)
        agent = Agent(models.for_role("solver"))
        with pytest.raises(BudgetExceeded) as exc:
            for _ in range(20):
                await agent.run("write")
        await models.aclose()
    assert exc.value.limit == "max_cost"
    assert 0.04 < meter.total().cost_usd <= 0.05


async def test_a_cancelled_request_gives_its_reservation_back_and_is_recorded(tmp_path):
    """A request whose answer is no longer wanted (the lab cancels an early review it set aside)
    frees what it set aside of the budget, and calls.jsonl says it was cancelled."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    from physlab.llm.meter import read_calls
    from physlab.llm.seam import seam_model

    began, caps = asyncio.Event(), []

    async def never(messages, info):
        began.set()
        await asyncio.wait_for(asyncio.Event().wait(), 60)   # only ever cancelled

    def answer(messages, info):
        caps.append(info.model_settings["max_tokens"])
        return ModelResponse(parts=[TextPart("ok")])

    meter = RunMeter(Budget(max_tokens=3000), tmp_path / "calls.jsonl")

    def agent(fn, role):
        return Agent(seam_model(FunctionModel(fn), role=role, spec="function:test", meter=meter))

    held = asyncio.create_task(agent(never, "reviewer").run("review", model_settings={"max_tokens": 2000}))
    await asyncio.wait_for(began.wait(), 60)
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    await agent(answer, "orchestrator").run("decide", model_settings={"max_tokens": 2000})
    meter.close()
    assert caps == [2000]          # the whole budget was there again, not what the cancelled one held back
    recs = read_calls(tmp_path / "calls.jsonl")
    assert [(r.role, (r.error or "").split(":")[0]) for r in recs] == [("reviewer", "cancelled"), ("orchestrator", "")]
