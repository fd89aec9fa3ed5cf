"""The real `openai:` path (pydantic-ai OpenAIChatModel + openai SDK + HTTP) against the stand-in
server. Token totals equal what the server served, every fault kind is survived (or ends with a
clear ModelFailure), the in-flight caps hold, streaming usage is counted."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.concurrency import ConcurrencyLimiter

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.errors import BudgetExceeded, ModelFailure
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.standin import FAULT_KINDS, RandomToolResponder, Reply, ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

FAST = RetryPolicy(max_attempts=4, backoff_s=0.01, max_backoff_s=0.05)


def _registry(defaults=None):
    return ModelRegistry(models={"openai:standin": defaults or ModelDefaults()})


async def models_for(srv, meter, *, limiters=(), defaults=None, retry=FAST):
    return await RunModels("openai:standin", meter=meter, api_base=srv.base_url, limiters=limiters,
                           registry=_registry(defaults), retry=retry).open()


def assert_totals_match(meter, srv):
    t = meter.total()
    assert t.input_tokens == srv.stats.prompt_tokens
    assert t.output_tokens == srv.stats.completion_tokens
    assert t.calls == srv.stats.requests  # every request sent is a call, answered or not


async def test_token_totals_equal_what_the_server_served(tmp_path):
    replies = [f"answer number {i} " * (i + 1) for i in range(6)]
    with StandinServer(ScriptedResponder(replies)) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = await models_for(srv, meter)
        planner, solver = Agent(models.for_role("planner")), Agent(models.for_role("solver"))
        outs = []
        for i in range(3):
            outs.append((await planner.run(f"plan {i}")).output)
            outs.append((await solver.run(f"solve {i} " * 20)).output)
        await models.aclose()
    assert outs == replies
    assert_totals_match(meter, srv)
    assert srv.stats.prompt_tokens > 0 and srv.stats.completion_tokens > 0
    recs = read_calls(tmp_path / "calls.jsonl")
    assert [r.role for r in recs] == ["planner", "solver"] * 3
    assert all(r.finish_reason == "stop" and r.model == "openai:standin" and r.cost_usd == 0.0 for r in recs)
    assert recs[0].request["messages"][0]["parts"][0]["content"] == "plan 0"
    assert recs[0].response["parts"][0]["content"] == replies[0]


async def test_streaming_usage_is_counted(tmp_path):
    with StandinServer(ScriptedResponder(["streamed reply with several words"])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = await models_for(srv, meter)
        async with Agent(models.for_role("solver")).run_stream("go") as run:
            out = await run.get_output()
        await models.aclose()
    assert out == "streamed reply with several words"
    assert srv.requests[0]["stream"] is True and srv.requests[0]["stream_options"]["include_usage"]
    assert_totals_match(meter, srv)


class Sum(BaseModel):
    total: int


def _tool_agent(model):
    agent = Agent(model, output_type=str, retries=3)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_every_fault_kind_is_survived_and_recorded(tmp_path, kind):
    script = [Reply(tool_calls=[("add", {"a": 2, "b": 3})]), Reply(tool_calls=[("add", {"a": 2, "b": 3})]),
              "the sum is 5", "the sum is 5"]
    defaults = ModelDefaults(timeout_s=0.5) if kind == "slow" else None
    with StandinServer(ScriptedResponder(script)) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = await models_for(srv, meter, defaults=defaults)
        srv.inject(kind, retry_after=0.3, delay_s=1.5)
        result = await _tool_agent(models.for_role("solver")).run("add 2 and 3")
        await models.aclose()
    assert result.output == "the sum is 5"
    assert srv.stats.faults[kind] == 1
    recs = read_calls(tmp_path / "calls.jsonl")
    first = recs[0]
    if kind in ("rate_limit", "server_error", "drop", "empty_choices", "slow"):
        assert first.error is not None and first.response is None and "will retry" in first.note
        assert recs[1].retries == 1 and recs[1].error is None
        assert meter.failed_requests == 1
    if kind == "rate_limit":  # Retry-After honoured (our own backoff is 10 ms)
        assert recs[1].ts - first.ts >= 0.25
        assert "429" in first.error
    if kind == "length":
        assert first.finish_reason == "length" and "retrying with max_tokens" in first.note
        assert meter.truncated_replies == 1
    if kind in ("malformed_tool_json", "unknown_tool"):
        # pydantic-ai answered the bad call with a corrective message, through our wrapper
        feedback = json.dumps(recs[1].request["messages"][-1])
        assert ("Unknown tool name" if kind == "unknown_tool" else "json_invalid") in feedback
        assert first.response["parts"][-1]["part_kind"] == "tool-call"
        assert [r.error for r in recs] == [None, None, None]  # nothing failed at the HTTP level
    if kind != "slow":  # a timed-out request was still served (and counted) by the server
        assert_totals_match(meter, srv)


async def test_retries_are_bounded_and_end_with_model_failure(tmp_path):
    with StandinServer(ScriptedResponder(["never"])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = await models_for(srv, meter, retry=RetryPolicy(max_attempts=3, backoff_s=0.01))
        srv.inject("server_error", times=10)
        with pytest.raises(ModelFailure, match="after 3 attempts"):
            await Agent(models.for_role("solver")).run("x")
        await models.aclose()
    assert srv.stats.requests == 3
    recs = read_calls(tmp_path / "calls.jsonl")
    assert len(recs) == 3 and all(r.error for r in recs) and meter.total().calls == 3


async def test_truncated_reply_retried_with_registry_cap(tmp_path):
    long = "word " * 200  # 250 tokens
    with StandinServer(ScriptedResponder([long, long, long])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        d = ModelDefaults(max_output_tokens=100, truncation_retries=2, truncation_max_output_tokens=400)
        models = await models_for(srv, meter, defaults=d)
        out = (await Agent(models.for_role("solver")).run("write")).output
        await models.aclose()
    assert out == long
    caps = [r.get("max_completion_tokens") or r.get("max_tokens") for r in srv.requests]
    assert caps == [100, 200, 400]
    recs = read_calls(tmp_path / "calls.jsonl")
    assert [r.finish_reason for r in recs] == ["length", "length", "stop"]
    assert meter.truncated_replies == 2 and meter.total().calls == 3


async def test_truncation_retries_are_bounded(tmp_path):
    long = "word " * 200
    with StandinServer(ScriptedResponder([long] * 5)) as srv:
        meter = RunMeter(Budget(), None)
        d = ModelDefaults(max_output_tokens=50, truncation_retries=1, continuations=0)
        models = await models_for(srv, meter, defaults=d)
        out = (await Agent(models.for_role("solver")).run("write")).output
        await models.aclose()
    assert srv.stats.requests == 2 and len(out) < len(long)  # reported, not looped
    assert meter.records[-1].note.startswith("truncated") and meter.records[-1].finish_reason == "length"
    assert_totals_match(meter, srv)


async def test_in_flight_cap_holds_at_the_server(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=0.1) as srv:
        shared = ConcurrencyLimiter(3)
        metas = [RunMeter(Budget(), None) for _ in range(2)]
        sources = [await models_for(srv, m, limiters=(ConcurrencyLimiter(2), shared)) for m in metas]
        agents = [Agent(s.for_role("solver")) for s in sources]
        await asyncio.gather(*(agents[i % 2].run(f"q{i}") for i in range(12)))
        for s in sources:
            await s.aclose()
    assert srv.stats.max_in_flight <= 3
    assert srv.stats.max_in_flight >= 2  # the requests really overlapped
    assert all(1 <= m.max_in_flight_seen <= 2 for m in metas)
    assert sum(m.total().calls for m in metas) == 12


async def test_budget_stops_before_sending(tmp_path):
    with StandinServer(ScriptedResponder(["a", "b", "c"])) as srv:
        meter = RunMeter(Budget(max_calls=2), tmp_path / "calls.jsonl")
        models = await models_for(srv, meter)
        agent = Agent(models.for_role("solver"))
        await agent.run("1")
        await agent.run("2")
        with pytest.raises(BudgetExceeded):
            await agent.run("3")
        await models.aclose()
    assert srv.stats.requests == 2


async def test_random_tool_responder_produces_schema_valid_calls(tmp_path):
    with StandinServer(RandomToolResponder(seed=7)) as srv:
        meter = RunMeter(Budget(), None)
        models = await models_for(srv, meter)
        for _ in range(5):
            result = await Agent(models.for_role("solver"), output_type=Sum).run("sum?")
            assert isinstance(result.output, Sum)
        await models.aclose()
    assert srv.stats.answered == 5  # every call was valid first time (no corrective retries)


async def test_models_endpoint_and_api_key_env(tmp_path, monkeypatch):
    from urllib.request import urlopen

    with StandinServer() as srv:
        with urlopen(srv.base_url + "/models", timeout=10) as r:
            assert json.load(r)["data"][0]["id"] == "standin"
        monkeypatch.setenv("MY_KEY", "secret")
        models = await RunModels("openai:standin", meter=RunMeter(), api_base=srv.base_url,
                                 api_key_env="MY_KEY").open()
        assert (await Agent(models.for_role("x")).run("hi")).output.startswith("echo: hi")
        await models.aclose()


async def test_unreachable_server_fails_cleanly_after_bounded_retries(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
    models = await RunModels("openai:standin", meter=meter, api_base=f"http://127.0.0.1:{port}/v1",
                             retry=RetryPolicy(max_attempts=2, backoff_s=0.01)).open()
    with pytest.raises(ModelFailure, match="after 2 attempts \\(connection\\)"):
        await Agent(models.for_role("solver")).run("x")
    await models.aclose()
    assert [r.error.split(":")[0] for r in read_calls(tmp_path / "calls.jsonl")] == ["ModelConnectionError"] * 2


@pytest.mark.parametrize("spec, effort, sent", [
    ("openai:qwen3-32b", "high", "high"),  # a served name pydantic-ai's profiles do not know to reason
    ("openai:qwen3-32b", False, None),
    ("openai:o3", "low", "low"),  # a known reasoning model: pydantic-ai's own mapping, unchanged
])
async def test_the_registry_reasoning_effort_reaches_the_server(tmp_path, spec, effort, sent):
    with StandinServer(ScriptedResponder(["ok"])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        registry = ModelRegistry(models={spec: ModelDefaults(reasoning_effort=effort)})
        models = await RunModels(spec, meter=meter, api_base=srv.base_url, registry=registry, retry=FAST).open()
        out = (await Agent(models.for_role("solver")).run("go")).output
        await models.aclose()
    assert out == "ok"
    assert srv.requests[0].get("reasoning_effort") == sent
