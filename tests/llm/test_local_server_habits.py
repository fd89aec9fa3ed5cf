"""Issue #47's findings against a local llama-cpp-python server, each reproduced with the stand-in
playing its habits (``Habits.llama_cpp_python()``) through the real ``openai:`` path (pydantic-ai,
the openai SDK, HTTP): the server-constrained output mode, an output cap the server honours, a
deterministic refusal sent once, failed requests counted as calls, ``auto`` falling back on an
empty 500, one string for the user turn, a reply cut by the window told from one cut by the cap,
a timed-out request on a single-slot server, and the wall cap cutting a request in flight."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.errors import BudgetExceeded, ContextTooLong, ModelFailure
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.output import structured_output
from physlab.llm.scripted import final_answer, register_scenario, tool_call
from physlab.llm.standin import Habits, ScenarioResponder, ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

FAST = RetryPolicy(max_attempts=4, backoff_s=0.01, max_backoff_s=0.05)


class Sum(BaseModel):
    total: int


def _adder():
    def respond(role, messages, info):
        returns = [p for m in messages for p in getattr(m, "parts", []) if getattr(p, "part_kind", "") == "tool-return"]
        if not returns:
            return tool_call("add", {"a": 2, "b": 3})
        return final_answer(info, {"total": int(returns[-1].model_response_str())})

    return respond


register_scenario("test-local-adder", _adder)


def _adder_agent(model):
    agent = Agent(model, output_type=structured_output(model, Sum, name="submit_sum"), retries=2)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


def _models(srv, meter, *, defaults=None, **kw):
    d = (defaults or ModelDefaults()).model_copy(update={"retry": (defaults.retry if defaults and defaults.retry
                                                                   else FAST)})
    return RunModels("openai:gemma", meter=meter, api_base=srv.base_url,
                     registry=ModelRegistry(models={"openai:gemma": d}), **kw)


# ---- 2. the server-constrained output mode ---------------------------------------------------------

async def test_a_small_model_gives_the_structured_answer_only_when_the_server_constrains_it(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits.llama_cpp_python()) as srv:
        answers = {}
        for mode in ("prompted", "constrained"):
            meter = RunMeter(Budget(), tmp_path / f"{mode}.jsonl")
            models = _models(srv, meter, output_mode=mode, defaults=ModelDefaults(max_output_tokens=64))
            model = models.for_role("solver")
            agent = Agent(model, output_type=structured_output(model, Sum, name="submit_sum"), retries=1)
            try:
                answers[mode] = (await agent.run("add 2 and 3")).output
            except Exception as exc:  # noqa: BLE001 - the small model's prompted answer is junk
                answers[mode] = exc
            await models.aclose()
    assert not isinstance(answers["prompted"], Sum)
    assert isinstance(answers["constrained"], Sum)
    sent = srv.requests[-1]
    assert sent["response_format"]["type"] == "json_object" and sent["response_format"]["schema"]["required"] == ["total"]
    recs = read_calls(tmp_path / "constrained.jsonl")
    assert [r.request["output_mode"] for r in recs] == ["constrained"]


async def test_tools_travel_in_a_constrained_envelope_for_a_role_that_calls_them(tmp_path):
    habits = Habits.llama_cpp_python(follows_instructions=True)
    with StandinServer(ScenarioResponder("test-local-adder", lambda body: "solver"), habits=habits) as srv:
        models = _models(srv, RunMeter(Budget(), None), output_mode="constrained")
        result = await _adder_agent(models.for_role("solver")).run("add 2 and 3")
        await models.aclose()
    assert result.output == Sum(total=5)
    assert srv.responder.modes == {"text_tools": 2}
    assert not any(b.get("tools") for b in srv.requests)
    assert all(b["response_format"]["type"] == "json_object" and "calls" in b["response_format"]["schema"]["properties"]
               for b in srv.requests)


def test_the_constrained_mode_is_for_openai_compatible_servers():
    from physlab.errors import UserError

    with pytest.raises(UserError, match="constrained.*openai:"):
        RunModels("anthropic:claude-x", meter=RunMeter(), api_base="http://127.0.0.1:9/v1", output_mode="constrained")


# ---- 3. an output cap the server honours -----------------------------------------------------------

async def test_every_request_to_a_local_server_carries_a_cap_it_honours(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits.llama_cpp_python()) as srv:
        meter = RunMeter(Budget(), None)
        models = _models(srv, meter, defaults=ModelDefaults(max_output_tokens=50, truncation_retries=0,
                                                            continuations=0))
        await Agent(models.for_role("solver")).run("hi")
        # no cap in the registry: the role's default, still under the name the server reads
        models2 = _models(srv, meter)
        await Agent(models2.for_role("formatter")).run("hi")
        await models.aclose()
        await models2.aclose()
    assert srv.requests[0].get("max_tokens") == 50
    assert srv.usages[0]["completion_tokens"] == 50  # honoured: it stopped there, not at the window's end
    assert srv.requests[1].get("max_tokens") == 8_192  # the formatter's default (physlab.llm.output_caps)
    assert all(b.get("max_tokens") and "max_completion_tokens" not in b for b in srv.requests)


def test_the_registry_can_name_the_cap_field_a_server_reads():
    d = ModelDefaults(output_cap_field="max_completion_tokens")
    assert d.output_cap_field == "max_completion_tokens"
    with pytest.raises(ValueError):
        ModelDefaults(output_cap_field="max_new_tokens")


# ---- 4. a deterministic refusal is sent once; failed requests are calls --------------------------

async def test_a_refusal_naming_the_request_shape_is_not_retried_and_counts_as_a_call(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits.llama_cpp_python()) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter, output_mode="native", defaults=ModelDefaults(max_output_tokens=32))
        model = models.for_role("solver")
        agent = Agent(model, output_type=structured_output(model, Sum, name="submit_sum"))
        with pytest.raises(ModelFailure) as exc:
            await agent.run("add 2 and 3")
        await models.aclose()
    assert srv.stats.requests == 1  # the same request would be refused the same way
    text = str(exc.value)
    assert "Input should be 'text' or 'json_object'" in text
    assert "--output-mode constrained" in text and "physlab models check" in text
    assert meter.total().calls == 1 and meter.failed_requests == 1


# ---- 12. auto falls back on the empty-bodied 500 ------------------------------------------------------

async def test_auto_falls_back_when_tools_get_an_empty_500(tmp_path):
    habits = Habits.llama_cpp_python(follows_instructions=True)
    with StandinServer(ScenarioResponder("test-local-adder", lambda body: "solver"), habits=habits) as srv:
        models = _models(srv, RunMeter(Budget(), None), output_mode="auto")
        result = await _adder_agent(models.for_role("solver")).run("add 2 and 3")
        await models.aclose()
    assert result.output == Sum(total=5)
    assert srv.stats.faults["tool_choice_refused"] == 1  # once, then the rest of the run without tools


# ---- 11. one string for the user turn -------------------------------------------------------------------

async def test_a_user_turn_in_parts_reaches_an_openai_compatible_server_as_one_string(tmp_path):
    from pydantic_ai.messages import CachePoint

    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits.llama_cpp_python()) as srv:
        models = _models(srv, RunMeter(Budget(), None), defaults=ModelDefaults(max_output_tokens=8))
        await Agent(models.for_role("solver")).run(["<survey>stable</survey>", CachePoint(), "<task>now</task>"])
        await models.aclose()
    user = [m for m in srv.requests[0]["messages"] if m["role"] == "user"][0]
    assert user["content"] == "<survey>stable</survey><task>now</task>"
    assert "&#x27;" not in srv.seen[0]


# ---- 10. a reply cut by the window is not taken for a short cap -------------------------------------

async def test_a_reply_cut_by_the_window_asks_for_a_shorter_prompt_not_a_larger_cap(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True),
                       habits=Habits.llama_cpp_python(context_window=800)) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter, defaults=ModelDefaults(max_output_tokens=4000, context_window=800,
                                                            min_reply_tokens=50))
        with pytest.raises(ContextTooLong):
            await Agent(models.for_role("orchestrator")).run("x " * 1000)  # ~500 tokens: the reply runs to 800
        await models.aclose()
    assert srv.stats.requests == 1  # not re-sent with a cap the window cannot hold
    assert all((b.get("max_tokens") or 0) <= 800 for b in srv.requests)


# ---- 7. a timeout on a single-slot server ------------------------------------------------------------------

async def test_a_timed_out_request_counts_what_the_server_spent_and_is_not_retried_on_one_slot(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=1.5,
                       habits=Habits.llama_cpp_python()) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        models = _models(srv, meter, defaults=ModelDefaults(max_output_tokens=100, timeout_s=0.5, slots=1))
        with pytest.raises(ModelFailure, match="one request at a time"):
            await Agent(models.for_role("solver")).run("hi")
        await models.aclose()
    assert srv.stats.requests == 1
    (rec,) = read_calls(tmp_path / "calls.jsonl")
    assert rec.error and rec.tokens_estimated and rec.input_tokens > 0 and rec.output_tokens == 100
    assert meter.total().output_tokens == 100 and meter.total().calls == 1


# ---- 6. the wall cap cuts a request in flight ------------------------------------------------------------

async def test_the_wall_cap_cuts_a_request_in_flight(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=30) as srv:
        meter = RunMeter(Budget(max_wall_s=1.0), None)
        models = _models(srv, meter)
        t0 = time.monotonic()
        with pytest.raises(BudgetExceeded) as exc:
            await Agent(models.for_role("solver")).run("hi")
        took = time.monotonic() - t0
        await models.aclose()
        srv.stop()
    assert exc.value.limit == "max_wall" and took < 3.0


async def test_a_single_slot_server_gets_one_request_at_a_time_from_a_run(tmp_path):
    import asyncio

    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=0.2,
                       habits=Habits.llama_cpp_python(rambles=False)) as srv:
        models = _models(srv, RunMeter(Budget(), None), defaults=ModelDefaults(max_output_tokens=64, slots=1))
        await asyncio.gather(*(Agent(models.for_role(r)).run("hi") for r in ("a", "b", "c")))
        await models.aclose()
    assert srv.stats.requests == 3 and srv.stats.max_in_flight == 1  # queued here, where a timeout does not run


async def test_the_schema_the_server_holds_a_reply_to_requires_every_field(tmp_path):
    """A schema whose fields all have defaults lets a grammar write ``{}``, and a small model does
    (the surveyor answered ``{}`` four times): the server is asked to hold the reply to every field."""

    class Survey(BaseModel):
        background: str = ""
        pitfalls: list[str] = []

    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits.llama_cpp_python()) as srv:
        models = _models(srv, RunMeter(Budget(), None), output_mode="constrained",
                         defaults=ModelDefaults(max_output_tokens=64))
        model = models.for_role("surveyor")
        out = (await Agent(model, output_type=structured_output(model, Survey, name="submit_survey")).run("go")).output
        await models.aclose()
    held = srv.requests[0]["response_format"]["schema"]
    assert held["required"] == ["background", "pitfalls"]
    assert isinstance(out, Survey)



async def test_a_long_request_shows_it_is_still_under_way(tmp_path, monkeypatch):
    from physlab.llm.seam import call_log

    monkeypatch.setattr(call_log, "WAIT_NOTICE_S", 0.3)
    seen = []
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=1.0) as srv:
        models = _models(srv, RunMeter(Budget(), None), events=lambda kind, **d: seen.append((kind, d)))
        await Agent(models.for_role("solver")).run("hi")
        await models.aclose()
    waits = [d["text"] for kind, d in seen if kind == "waiting"]
    assert waits and waits[0].startswith("solver: waiting for the model (")
