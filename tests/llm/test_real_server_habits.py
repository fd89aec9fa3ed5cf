"""Issue #23's findings, each reproduced against the stand-in playing the server's habit, through
the real ``openai:`` path (pydantic-ai + the openai SDK + HTTP): truncation and context limits,
servers without tool calling, rate limits behind a proxy, cost through a proxy, the tokens of an
unusable reply, base URLs for every provider, a model per role, errors that name the cause."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse
from pydantic_ai.usage import RequestUsage

from physlab.errors import UserError
from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.errors import BudgetExceeded, ContextTooLong, ModelFailure
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels, parse_role_models
from physlab.llm.output import structured_output
from physlab.llm.scripted import final_answer, register_scenario, tool_call
from physlab.llm.standin import Habits, ScenarioResponder, ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

FAST = RetryPolicy(max_attempts=4, backoff_s=0.01, max_backoff_s=0.05)


class Sum(BaseModel):
    total: int


def _adder():
    """A model that adds with the tool, then answers: one tool call, then the structured answer."""

    def respond(role, messages, info):
        returns = [p for m in messages for p in getattr(m, "parts", []) if getattr(p, "part_kind", "") == "tool-return"]
        if not returns:
            return tool_call("add", {"a": 2, "b": 3})
        return final_answer(info, {"total": int(returns[-1].model_response_str())})

    return respond


register_scenario("test-adder", _adder)


def _adder_agent(model):
    agent = Agent(model, output_type=structured_output(model, Sum, name="submit_sum"), retries=2)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


def _models(srv, meter, *, defaults=None, registry=None, **kw):
    reg = registry or ModelRegistry(models={"openai:standin": (defaults or ModelDefaults()).model_copy(
        update={"retry": (defaults.retry if defaults and defaults.retry else FAST)})})
    return RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg, **kw)


def _serve_adder(habits=None):
    return StandinServer(ScenarioResponder("test-adder", lambda body: "solver"), habits=habits)


# ---- 1. truncation and context limits --------------------------------------------------------

async def test_a_cut_reply_is_re_asked_higher_then_continued_never_above_what_the_server_allows(tmp_path):
    long = " ".join(f"w{i}" for i in range(2000))  # ~2,600 tokens: more than the server ever sends at once
    with StandinServer(ScriptedResponder([long], repeat_last=True),
                       habits=Habits(default_max_tokens=400, max_output_tokens=1200)) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter, defaults=ModelDefaults(continuations=4, max_output_tokens=400))
        out = (await Agent(models.for_role("writer")).run("write")).output
        await models.aclose()
    assert out == long  # the whole reply, not the first 400 tokens and not a failed run
    caps = [b.get("max_completion_tokens") or b.get("max_tokens") for b in srv.requests]
    assert caps[:4] == [400, 800, 1600, 1200]  # re-asked higher; 1600 refused; then the server's own maximum
    assert all(c == 1200 for c in caps[4:])
    recs = read_calls(tmp_path / "calls.jsonl")
    assert "the model allows at most 1200" in recs[2].note and recs[2].error
    assert "asking for the rest" in recs[3].note
    assert meter.total().output_tokens == srv.stats.completion_tokens


async def test_a_too_large_registry_cap_is_lowered_once_for_the_whole_run(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits(max_output_tokens=1200)) as srv:
        meter = RunMeter(Budget(), None)
        models = _models(srv, meter, defaults=ModelDefaults(max_output_tokens=8192))
        for role in ("a", "b", "c"):
            assert (await Agent(models.for_role(role)).run("hi")).output == "ok"
        await models.aclose()
    caps = [b.get("max_completion_tokens") or b.get("max_tokens") for b in srv.requests]
    assert caps == [8192, 1200, 1200, 1200] and srv.stats.faults["cap_refused"] == 1


async def test_a_context_refusal_lowers_the_cap_or_asks_the_caller_for_a_shorter_prompt(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits(context_window=600)) as srv:
        meter = RunMeter(Budget(), None)
        models = _models(srv, meter, defaults=ModelDefaults(max_output_tokens=1000, min_reply_tokens=50))
        assert (await Agent(models.for_role("a")).run("x" * 1200)).output == "ok"  # 300 + 1000 > 600: cap lowered
        assert (srv.requests[-1].get("max_completion_tokens") or srv.requests[-1]["max_tokens"]) <= 300
        with pytest.raises(ContextTooLong) as exc:  # no cap can make this prompt fit
            await Agent(models.for_role("a")).run("x" * 2600)
        await models.aclose()
    assert isinstance(exc.value, BudgetExceeded) and exc.value.limit == "context_window"
    assert exc.value.window == 600 and exc.value.prompt_tokens > 600


# ---- 2. servers without tool calling -----------------------------------------------------------

async def test_tool_mode_against_a_server_without_tool_calling_names_the_fix(tmp_path):
    with _serve_adder(Habits(refuse_tools=True)) as srv:
        models = _models(srv, RunMeter(Budget(), None))
        with pytest.raises(ModelFailure, match="refused tool calls.*--output-mode prompted"):
            await _adder_agent(models.for_role("solver")).run("add 2 and 3")
        await models.aclose()
    assert srv.stats.requests == 1  # not retried: sending it again would be refused again


@pytest.mark.parametrize("mode", ["prompted", "native"])
async def test_prompted_and_native_modes_carry_tools_and_answers_without_tools(tmp_path, mode):
    with _serve_adder(Habits(refuse_tools=True)) as srv:
        models = _models(srv, RunMeter(Budget(), tmp_path / "calls.jsonl"), output_mode=mode)
        result = await _adder_agent(models.for_role("solver")).run("add 2 and 3")
        await models.aclose()
    assert result.output == Sum(total=5)
    assert not any(b.get("tools") for b in srv.requests) and srv.stats.faults["tools_refused"] == 0
    assert srv.responder.modes == {"text_tools": 2}
    if mode == "native":
        assert all(b["response_format"]["type"] == "json_schema" for b in srv.requests)


async def test_auto_falls_back_to_prompted_once_for_the_rest_of_the_run_and_says_so(tmp_path):
    events = []
    with _serve_adder(Habits(refuse_tools=True)) as srv:
        models = _models(srv, RunMeter(Budget(), tmp_path / "calls.jsonl"), output_mode="auto",
                         events=lambda kind, **d: events.append((kind, d)))
        for role in ("solver", "checker"):
            assert (await _adder_agent(models.for_role(role)).run("add")).output == Sum(total=5)
        await models.aclose()
    assert srv.stats.faults["tools_refused"] == 1  # refused once; every later request went without tools
    said = [d["text"] for k, d in events if k == "output_mode"]
    assert len(said) == 1 and "auto -> prompted" in said[0] and "--enable-auto-tool-choice" in said[0]
    recs = read_calls(tmp_path / "calls.jsonl")
    assert "tools refused" in recs[0].note and recs[0].error
    assert models.output_modes()["openai:standin"].startswith("auto -> prompted")


async def test_auto_falls_back_when_the_model_ignores_the_tools(tmp_path):
    def ignores_tools(body):  # a canned model: answers in text whatever it is offered
        if body.get("tools"):
            return "The sum is five."
        return json.dumps({"calls": [{"tool": "submit_sum", "arguments": {"total": 5}}]})

    with StandinServer(ignores_tools) as srv:
        models = _models(srv, RunMeter(Budget(), tmp_path / "calls.jsonl"), output_mode="auto")
        model = models.for_role("solver")
        out = await Agent(model, output_type=structured_output(model, Sum, name="submit_sum")).run("sum?")
        await models.aclose()
    assert out.output == Sum(total=5) and len(srv.requests) == 2
    assert "tools ignored" in read_calls(tmp_path / "calls.jsonl")[0].note


# ---- 3. rate limits behind a proxy -------------------------------------------------------------

async def test_proxy_style_retry_after_is_waited_out_and_shown(tmp_path):
    events = []
    with StandinServer(ScriptedResponder(["ok"])) as srv:
        srv.inject("rate_limit", retry_after=1.2, style="proxy")  # only llm_provider-retry-after(-ms)
        models = _models(srv, RunMeter(Budget(), tmp_path / "calls.jsonl"), events=lambda k, **d: events.append((k, d)))
        assert (await Agent(models.for_role("solver")).run("hi")).output == "ok"
        await models.aclose()
    recs = read_calls(tmp_path / "calls.jsonl")
    assert recs[1].ts - recs[0].ts >= 1.2  # the server's wait, not our 10 ms backoff
    waits = [d for k, d in events if k == "rate_limited"]
    assert waits and waits[0]["text"].startswith("waiting for rate limit (") and waits[0]["wait_s"] >= 1.2


async def test_a_long_rate_limit_outlasts_the_attempt_count(tmp_path):
    with StandinServer(ScriptedResponder(["ok"])) as srv:
        srv.inject("rate_limit", times=9, retry_after=0.02, style="proxy")
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter)  # max_attempts=4: the old policy gave up after 4 tries
        assert (await Agent(models.for_role("solver")).run("hi")).output == "ok"
        await models.aclose()
    assert srv.stats.requests == 10 and meter.failed_requests == 9


async def test_the_total_wait_is_the_registrys_retry_policy(tmp_path):
    policy = RetryPolicy(max_attempts=4, backoff_s=0.01, max_wait_s=0.3)
    with StandinServer(ScriptedResponder(["ok"])) as srv:
        srv.inject("rate_limit", times=50, retry_after=0.1)
        models = _models(srv, RunMeter(Budget(), None), defaults=ModelDefaults(retry=policy))
        with pytest.raises(ModelFailure, match=r"still rate limited after waiting 0s in total|after waiting"):
            await Agent(models.for_role("solver")).run("hi")
        await models.aclose()
    assert 3 <= srv.stats.requests <= 6


# ---- 4. cost through a proxy, and 5. the tokens of an unusable reply ---------------------------

async def test_a_proxys_stated_cost_is_the_cost_and_says_where_it_came_from(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits(usd_per_mtok=(2.5, 10.0))) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter)
        for _ in range(3):
            await Agent(models.for_role("solver")).run("hi " * 50)
        await models.aclose()
    recs = read_calls(tmp_path / "calls.jsonl")
    assert [r.cost_usd for r in recs] == pytest.approx(srv.costs) and all(r.price_source == "proxy" for r in recs)
    assert sum(srv.costs) > 0 and meter.total().cost_usd == pytest.approx(sum(srv.costs))
    assert meter.summary()["price_sources"] == {"proxy": 3}


async def test_a_known_model_behind_a_base_url_is_priced_by_genai_prices(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), model_name="gpt-4o") as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = RunModels("openai:gpt-4o", meter=meter, api_base=srv.base_url, retry=FAST)
        await Agent(models.for_role("solver")).run("hi " * 400)
        free = RunModels("openai:gpt-4o", meter=meter, api_base=srv.base_url, retry=FAST,
                         registry=ModelRegistry(models={"gpt-4o": ModelDefaults(free=True)}))
        await Agent(free.for_role("solver")).run("hi")
        await models.aclose()
        await free.aclose()
    priced, marked_free = read_calls(tmp_path / "calls.jsonl")
    expected = ModelResponse(parts=[], model_name="gpt-4o", provider_name="openai",
                             usage=RequestUsage(input_tokens=priced.input_tokens,
                                                output_tokens=priced.output_tokens)).cost().total_price
    assert priced.price_source == "genai-prices" and expected > 0 and priced.cost_usd == pytest.approx(float(expected))
    assert (marked_free.price_source, marked_free.cost_usd) == ("free", 0.0)


async def test_the_tokens_of_an_unusable_reply_are_counted(tmp_path):
    with StandinServer(ScriptedResponder(["ok"])) as srv:
        srv.inject("empty_choices", times=3, usage=True, completion_tokens=11)  # 200, choices [], a usage block
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter)
        assert (await Agent(models.for_role("solver")).run("hi")).output == "ok"
        await models.aclose()
    t = meter.total()
    assert (t.input_tokens, t.output_tokens) == (srv.stats.prompt_tokens, srv.stats.completion_tokens)
    assert t.calls == 4 and meter.failed_requests == 3
    failed = [r for r in read_calls(tmp_path / "calls.jsonl") if r.error]
    assert [r.output_tokens for r in failed] == [11, 11, 11]


# ---- 6. base URLs for every provider -----------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [("anthropic:claude-sonnet-4-5", "http://127.0.0.1:4000"),
                                            ("google-gla:gemini-2.5-pro", "http://127.0.0.1:4000/v1")])
def test_api_base_points_anthropic_and_gemini_at_a_proxy(spec, expected):
    said = []
    models = RunModels(spec, meter=RunMeter(), api_base="http://127.0.0.1:4000/v1",
                       events=lambda k, **d: said.append(d["text"]))
    assert models.for_role("solver").wrapped.base_url.rstrip("/") == expected
    assert said and "no API key was sent" in said[0]  # named before any request


# ---- 7. a model per role -------------------------------------------------------------------------

async def test_each_role_talks_to_its_own_model(tmp_path):
    from physlab.problems.model import Problem
    from physlab.run.options import RunOptions
    from physlab.run.runner import Shared, run
    from physlab.strategies import registry as registry_of_strategies

    code = "Work.\n\n```python\ndef answer(x):\n    y = 2 * x\n    return y\n```\n"
    problem = Problem(id="double", statement="Return twice $x$.", answer_template="def answer(x):\n    y = ...\n    return y\n")
    with StandinServer(ScriptedResponder([code], repeat_last=True), model_name="small") as small, \
            StandinServer(ScriptedResponder([code], repeat_last=True), model_name="large") as large:
        registry = ModelRegistry(models={"openai:small": ModelDefaults(api_base=small.base_url),
                                         "openai:large": ModelDefaults(api_base=large.base_url)})
        options = RunOptions(strategy="two-step", model="openai:small",
                             role_models={"formatter": "openai:large", "critci": "openai:large"})
        await run(problem, registry_of_strategies.build("two-step"), options, Shared(registry=registry),
                  workspace=tmp_path / "w")
    assert len(small.requests) == 1 and len(large.requests) == 1  # the solver on one, the formatter on the other
    m = json.loads((tmp_path / "w" / "metrics.json").read_text())
    assert m["models_by_role"] == {"formatter": "openai:large", "solver": "openai:small"}
    assert "critci" in m["warnings"][0]  # a misspelt role is said, not silently ignored
    assert {r.role: r.model for r in read_calls(tmp_path / "w" / "calls.jsonl")} == m["models_by_role"]


def test_role_models_are_checked_on_the_command_line():
    assert parse_role_models(["reviewer=anthropic:claude-x", "computer=openai:qwen3"]) == {
        "reviewer": "anthropic:claude-x", "computer": "openai:qwen3"}
    for bad in ("reviewer", "=openai:x", "reviewer=gpt-4o"):
        with pytest.raises(UserError, match="--role-model|provider:model"):
            parse_role_models([bad])


# ---- 8. errors that name the cause ---------------------------------------------------------------

async def test_an_unreachable_server_is_named(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()
    models = RunModels("openai:standin", meter=RunMeter(), api_base=url, retry=FAST)
    with pytest.raises(ModelFailure, match=f"{url} could not be reached"):
        await Agent(models.for_role("solver")).run("x")
    await models.aclose()


async def test_a_missing_key_is_named_before_the_first_request_and_in_the_refusal(tmp_path):
    said = []
    with StandinServer(ScriptedResponder(["ok"]), habits=Habits(api_key="sk-master")) as srv:
        models = _models(srv, RunMeter(), events=lambda k, **d: said.append((k, d["text"])))
        assert said and said[0][0] == "notice" and "OPENAI_API_KEY is not set" in said[0][1]
        assert srv.stats.requests == 0
        with pytest.raises(ModelFailure, match="refused the credentials.*no API key was sent.*--api-key-env"):
            await Agent(models.for_role("solver")).run("x")
        await models.aclose()


async def test_a_model_without_structured_output_is_named_with_its_role_and_mode(tmp_path):
    from physlab.api import solve_async
    from tests.lab.mini import mini_problem

    with StandinServer(ScriptedResponder(["I would rather explain in prose."], repeat_last=True)) as srv:
        att = await solve_async(mini_problem(), "lab", "openai:standin", workspace=tmp_path / "w", api_base=srv.base_url,
                               params={"max_iterations": 1, "tool_retries": 1})
    m = json.loads((tmp_path / "w" / "metrics.json").read_text())
    assert att.status != "complete"
    text = json.dumps(m)
    assert "surveyor" in text and "'tool' output mode" in text and "--output-mode prompted" in text
