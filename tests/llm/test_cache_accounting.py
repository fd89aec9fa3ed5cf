"""Prompt-cache accounting (issue #26): the cached tokens a server reports per request (vLLM and
OpenAI: ``prompt_tokens_details.cached_tokens``) are recorded per call in calls.jsonl, totalled per
role in metrics, and priced at genai-prices' cache prices."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse
from pydantic_ai.usage import RequestUsage

from physlab.llm.defaults import ModelDefaults, ModelRegistry
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.standin import Habits, ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

INSTRUCTIONS = "You are the reviewer of a theoretical-physics group. Check every step. " * 30


async def test_cached_tokens_are_recorded_totalled_per_role_and_priced(tmp_path):
    with StandinServer(ScriptedResponder(["VERIFIED"], repeat_last=True), model_name="gpt-4o",
                       habits=Habits(prefix_cache=True)) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = RunModels("openai:gpt-4o", meter=meter, api_base=srv.base_url)
        for role, n in (("reviewer", 3), ("critic", 2)):
            agent = Agent(models.for_role(role), instructions=INSTRUCTIONS)
            for i in range(n):
                await agent.run(f"claim number {i}")
        await models.aclose()
    served = [u["prompt_tokens_details"]["cached_tokens"] for u in srv.usages]
    recs = read_calls(tmp_path / "calls.jsonl")
    assert [r.cache_read_tokens for r in recs] == served
    assert served[0] == 0 and all(c > 0 for c in served[1:])  # the instructions are a repeated prefix
    summary = meter.summary()
    assert summary["per_role"]["reviewer"]["cache_read_tokens"] == sum(r.cache_read_tokens for r in recs[:3])
    assert summary["totals"]["cache_read_tokens"] == sum(served)
    from physlab.lab.show import usage_by_role  # what `physlab runs show` prints per role

    assert usage_by_role(tmp_path)["critic"]["cache_read_tokens"] == summary["per_role"]["critic"]["cache_read_tokens"]
    # priced at genai-prices' cache-read price: cheaper than the same tokens uncached
    second = recs[1]
    cached = ModelResponse(parts=[], model_name="gpt-4o", provider_name="openai", usage=RequestUsage(
        input_tokens=second.input_tokens, output_tokens=second.output_tokens,
        cache_read_tokens=second.cache_read_tokens)).cost().total_price
    uncached = ModelResponse(parts=[], model_name="gpt-4o", provider_name="openai", usage=RequestUsage(
        input_tokens=second.input_tokens, output_tokens=second.output_tokens)).cost().total_price
    assert second.cost_usd == pytest.approx(float(cached)) and cached < uncached


def test_registry_prices_cached_input_at_its_own_rate():
    d = ModelDefaults(input_usd_per_mtok=3.0, output_usd_per_mtok=15.0, cache_read_usd_per_mtok=0.3,
                      cache_write_usd_per_mtok=3.75)
    # 1M input of which 600k read from the cache and 100k written to it, 1M output
    assert d.price(1_000_000, 1_000_000, 600_000, 100_000) == pytest.approx(
        (300_000 * 3.0 + 600_000 * 0.3 + 100_000 * 3.75 + 1_000_000 * 15.0) / 1e6)


def test_anthropic_cache_points_are_a_registry_setting():
    reg = ModelRegistry(models={"anthropic:*": ModelDefaults(prompt_cache={"messages": False})})
    models = RunModels("anthropic:claude-sonnet-4-5", meter=RunMeter(), registry=reg,
                       api_base="http://127.0.0.1:9/v1", events=lambda *a, **k: None)
    assert models.for_role("reviewer").base_settings()["cache"] == {"messages": False}
