"""Scripted scenarios, replay (bit for bit, clear errors), model names, registry YAML, pricing, prompts."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import BinaryContent, ModelResponse
from pydantic_ai.usage import RequestUsage

from physlab.errors import UserError
from physlab.llm.defaults import ModelDefaults, ModelRegistry
from physlab.llm.errors import ModelFailure, ReplayError
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels, parse_spec
from physlab.llm.pricing import Pricer
from physlab.llm.prompt import problem_prompt_parts
from physlab.llm.scripted import Turns, final_answer, register_scenario, scenario_names, tool_call
from physlab.llm.standin import random_instance
from physlab.problems.model import Problem


def _roles_scenario():
    seen: list[str] = []

    def respond(role, messages, info):
        seen.append(role)
        return f"{role} reply #{seen.count(role)} (total {len(seen)})"

    return respond


register_scenario("test-roles", _roles_scenario, description="test")


async def test_scripted_scenario_knows_the_role_and_is_fresh_per_run(tmp_path):
    for _ in range(2):
        meter = RunMeter(None, tmp_path / "c.jsonl")
        models = RunModels("scripted:test-roles", meter=meter)
        a = await Agent(models.for_role("planner")).run("x")
        b = await Agent(models.for_role("critic")).run("y")
        c = await Agent(models.for_role("planner")).run("z")
        assert [a.output, b.output, c.output] == [
            "planner reply #1 (total 1)", "critic reply #1 (total 2)", "planner reply #2 (total 3)"]
    assert "test-roles" in scenario_names() and "oneshot-qec-correct" in scenario_names()


async def test_turns_with_tools_and_structured_output():
    class Out(BaseModel):
        value: int

    turns = Turns({"solver": [tool_call("double", {"x": 21}), lambda m, info: final_answer(info, {"value": 42})]})
    register_scenario("test-turns", lambda: turns)
    models = RunModels("scripted:test-turns", meter=RunMeter())
    agent = Agent(models.for_role("solver"), output_type=Out)

    @agent.tool_plain
    def double(x: int) -> int:
        return 2 * x

    assert (await agent.run("go")).output == Out(value=42)
    with pytest.raises(ModelFailure, match="no reply #3 for role .solver."):
        await agent.run("again")


def test_unknown_scenario_and_bad_specs():
    with pytest.raises(UserError, match="unknown scripted scenario 'nope'"):
        RunModels("scripted:nope", meter=RunMeter())
    for bad in ("gpt-4o", ":x", "openai:"):
        with pytest.raises(UserError, match="provider:model"):
            parse_spec(bad)
    with pytest.raises(UserError, match="no API key"):
        RunModels("openai:gpt-4o", meter=RunMeter())
    with pytest.raises(UserError, match="MISSING_VAR is not set"):
        RunModels("openai:x", meter=RunMeter(), api_base="http://127.0.0.1:9/v1", api_key_env="MISSING_VAR")
    with pytest.raises(UserError, match="--api-base applies to openai:, anthropic:, google-gla:"):
        RunModels("groq:llama-x", meter=RunMeter(), api_base="http://127.0.0.1:9/v1")
    # a base URL the client cannot use is bad input, not four connection errors after retries
    for bad in ("localhost:8000/v1", "notaurl", "ftp://host/v1", "http:///v1", "http://127.0.0.1:99999/v1"):
        with pytest.raises(UserError, match="--api-base") as err:
            RunModels("openai:served", meter=RunMeter(), api_base=bad)
        assert repr(bad) in str(err.value)
    RunModels("openai:served", meter=RunMeter(), api_base="https://proxy.example:4000/v1")


async def _record(tmp_path, scenario="test-roles"):
    path = tmp_path / "rec" / "calls.jsonl"
    meter = RunMeter(None, path)
    models = RunModels(f"scripted:{scenario}", meter=meter)
    outs = [(await Agent(models.for_role(r)).run(f"q{i}")).output for i, r in enumerate(["a", "b", "a"])]
    meter.close()
    return path, outs


async def test_replay_reproduces_bit_for_bit(tmp_path):
    path, outs = await _record(tmp_path)
    meter = RunMeter(None, tmp_path / "replayed.jsonl")
    models = RunModels(f"replay:{path.parent}", meter=meter)  # the run dir works too
    again = [(await Agent(models.for_role(r)).run(f"q{i}")).output for i, r in enumerate(["a", "b", "a"])]
    meter.close()
    assert again == outs
    old, new = read_calls(path), read_calls(tmp_path / "replayed.jsonl")
    assert [r.response for r in old] == [r.response for r in new]
    assert [(r.role, r.model, r.input_tokens, r.output_tokens, r.cost_usd) for r in old] == \
           [(r.role, r.model, r.input_tokens, r.output_tokens, r.cost_usd) for r in new]


async def test_replay_errors_are_clear(tmp_path):
    path, _ = await _record(tmp_path)
    models = RunModels(f"replay:{path}", meter=RunMeter())
    with pytest.raises(ReplayError, match="diverged: request #1 of role 'a'"):
        await Agent(models.for_role("a")).run("something else")
    models = RunModels(f"replay:{path}", meter=RunMeter())
    await Agent(models.for_role("b")).run("q1")
    with pytest.raises(ReplayError, match="ran out: role 'b' asked for response #2"):
        await Agent(models.for_role("b")).run("q1")
    with pytest.raises(UserError, match="no calls.jsonl"):
        RunModels(f"replay:{tmp_path / 'nowhere'}", meter=RunMeter())
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(UserError, match="not a calls.jsonl"):
        RunModels(f"replay:{bad}", meter=RunMeter())


def test_registry_yaml(tmp_path):
    f = tmp_path / "models.yaml"
    f.write_text("models:\n  'openai:qwen*':\n    max_output_tokens: 4096\n    input_usd_per_mtok: 1.0\n"
                 "  gpt-4o:\n    reasoning_effort: high\n")
    reg = ModelRegistry.load(f)
    assert reg.defaults_for("openai:qwen3-32b").max_output_tokens == 4096
    assert reg.defaults_for("openai:gpt-4o").reasoning_effort == "high"
    assert reg.defaults_for("anthropic:other") == ModelDefaults()
    f.write_text("models:\n  x:\n    max_output_tokns: 3\n")
    with pytest.raises(UserError, match="x.max_output_tokns"):
        ModelRegistry.load(f)
    f.write_text("models: [1, 2]\n")
    with pytest.raises(UserError, match="field 'models'"):
        ModelRegistry.load(f)
    with pytest.raises(UserError, match="cannot read"):
        ModelRegistry.load(tmp_path / "missing.yaml")


def test_pricing_genai_prices_registry_free_and_unpriced():
    resp = ModelResponse(parts=[], usage=RequestUsage(input_tokens=1_000_000, output_tokens=1_000_000),
                         model_name="gpt-4o", provider_name="openai")
    known, source = Pricer("openai:gpt-4o", ModelDefaults()).price(resp, {})
    assert known > 1.0 and source == "genai-prices"  # several dollars per million tokens
    # behind a proxy (another base URL, a deployment name) it is still gpt-4o
    proxied = ModelResponse(parts=[], usage=resp.usage, model_name="openai/gpt-4o", provider_name="openai",
                            provider_url="http://127.0.0.1:4000/v1/")
    assert Pricer("openai:gpt-4o", ModelDefaults()).price(proxied, {}) == (known, "genai-prices")
    assert Pricer("openai:gpt-4o", ModelDefaults(free=True)).price(resp, {}) == (0.0, "free")
    priced = ModelDefaults(input_usd_per_mtok=0.5, output_usd_per_mtok=2.0)
    assert Pricer("openai:mine", priced).price(resp, {}) == (pytest.approx(2.5), "registry")
    assert Pricer("openai:mine", priced).price(resp, {"x-litellm-response-cost": "0.0068"}) == (0.0068, "proxy")
    unknown = ModelResponse(parts=[], usage=RequestUsage(input_tokens=10, output_tokens=10),
                            model_name="no-such-model-xyz", provider_name="openai")
    assert Pricer("openai:no-such-model-xyz", ModelDefaults()).price(unknown, {}) == (0.0, "unpriced")


def test_prompt_parts_are_public_and_carry_images(tmp_path):
    img = tmp_path / "fig.png"
    img.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    prob = Problem(id="p", statement="Find $x$.", answer_template="def answer():\n    x = ...\n    return x\n",
                   reference="SECRET_REFERENCE_42", solution="SECRET_SOLUTION", images=[img])
    parts = problem_prompt_parts(prob, after="Fill the template.")
    text = "\n".join(p for p in parts if isinstance(p, str))
    assert "Find $x$." in text and "def answer()" in text and "Fill the template." in text
    assert "SECRET" not in text
    images = [p for p in parts if isinstance(p, BinaryContent)]
    assert len(images) == 1 and images[0].media_type == "image/png" and images[0].data.startswith(b"\x89PNG")


def test_random_instance_is_schema_valid():
    import random
    from typing import Literal

    class Inner(BaseModel):
        name: str
        weight: float | None = None

    class Args(BaseModel):
        kind: Literal["a", "b"]
        count: int
        flags: list[bool]
        inner: Inner
        items: list[Inner] = []
        note: str | None = None

    schema = Args.model_json_schema()
    for seed in range(40):
        value = random_instance(schema, random.Random(seed), defs=schema.get("$defs", {}))
        Args.model_validate(json.loads(json.dumps(value)))


async def test_replay_matches_concurrent_same_role_requests_in_any_order(tmp_path, monkeypatch):
    def fanout():
        def respond(role, messages, info):
            from physlab.llm.scripted import last_user_text
            return "reply to " + last_user_text(messages)
        return respond

    register_scenario("test-fanout", fanout)
    path = tmp_path / "calls.jsonl"
    meter = RunMeter(None, path)
    models = RunModels("scripted:test-fanout", meter=meter)
    for q in ("q0", "q1", "q2"):
        await Agent(models.for_role("sampler")).run(q)
    meter.close()
    models = RunModels(f"replay:{path}", meter=RunMeter())
    outs = [(await Agent(models.for_role("sampler")).run(q)).output for q in ("q2", "q0", "q1")]
    assert outs == ["reply to q2", "reply to q0", "reply to q1"]
    monkeypatch.setenv("PHYSLAB_REPLAY_CHECK", "0")  # unchecked: recorded order, whatever was asked
    models = RunModels(f"replay:{path}", meter=RunMeter())
    assert (await Agent(models.for_role("sampler")).run("anything")).output == "reply to q0"


def test_registry_client_direct_is_accepted_for_now_with_one_warning_line(tmp_path, capsys):
    # The lean direct client is gone: a registry that still asks for it keeps working (requests go
    # through the openai SDK) and says so in one line naming the file and the entry.
    f = tmp_path / "models.yaml"
    f.write_text("models:\n  'openai:qwen3-32b':\n    client: direct\n    max_output_tokens: 100\n"
                 "  other:\n    client: sdk\n")
    reg = ModelRegistry.load(f)
    assert reg.defaults_for("openai:qwen3-32b").max_output_tokens == 100
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("warning: ") and str(f) in err[0] and "openai:qwen3-32b.client" in err[0]
    assert "openai SDK" in err[0]
    f.write_text("models:\n  x:\n    client: fast\n")
    with pytest.raises(UserError, match="x.client"):
        ModelRegistry.load(f)
