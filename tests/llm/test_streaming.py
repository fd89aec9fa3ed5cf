"""Streamed requests through the model seam, the way a Python API user streams with pydantic-ai
(``run_stream`` and its text, ``run_stream_events``, ``iter`` with a node's stream, an event
handler): the reply arrives, the request is recorded once in calls.jsonl with the tokens the server
reported, it is sent with a ``max_tokens`` within what the budget has left, a stream left early
is recorded and gives its reservation back, and nothing is sent once the budget is spent."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.errors import BudgetExceeded
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.standin import ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

REPLY = "streamed reply with several words"


def _models(srv, meter, **defaults):
    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=RetryPolicy(backoff_s=0.01), **defaults)})
    return RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg)


async def _stream_text(agent):
    async with agent.run_stream("go") as run:
        return "".join([t async for t in run.stream_text(delta=True)])


async def _get_output(agent):
    async with agent.run_stream("go") as run:
        return await run.get_output()


async def _events(agent):
    async with agent.run_stream_events("go") as events:
        out = None
        async for ev in events:
            out = getattr(ev, "result", None) or out
    return out.output


async def _iter_nodes(agent):
    async with agent.iter("go") as run:
        async for node in run:
            if Agent.is_model_request_node(node):
                async with node.stream(run.ctx) as stream:
                    async for _ in stream:
                        pass
    return run.result.output


async def _handler(agent):
    async def drain(ctx, events):
        async for _ in events:
            pass

    return (await agent.run("go", event_stream_handler=drain)).output


def _sent_cap(body):
    return body.get("max_completion_tokens") or body.get("max_tokens")


@pytest.mark.parametrize("way", [_stream_text, _get_output, _events, _iter_nodes, _handler],
                         ids=["stream_text", "get_output", "run_stream_events", "iter_node_stream", "event_handler"])
async def test_a_streamed_request_is_answered_recorded_once_and_within_the_budget(tmp_path, way):
    with StandinServer(ScriptedResponder([REPLY])) as srv:
        meter = RunMeter(Budget(max_tokens=5000), tmp_path / "calls.jsonl")
        async with _models(srv, meter) as models:
            out = await way(Agent(models.for_role("solver")))
        meter.close()
    assert out == REPLY
    assert srv.requests[0]["stream"] is True
    recs = read_calls(tmp_path / "calls.jsonl")
    assert len(recs) == 1 and recs[0].error is None and recs[0].finish_reason == "stop"
    assert (recs[0].input_tokens, recs[0].output_tokens) == (srv.stats.prompt_tokens, srv.stats.completion_tokens)
    assert recs[0].response["parts"][0]["content"] == REPLY
    cap = _sent_cap(srv.requests[0])
    assert cap is not None and cap <= 5000 - recs[0].input_tokens and recs[0].max_tokens == cap
    assert meter.total().total_tokens == srv.stats.total_tokens


async def test_streams_share_the_budget_and_stop_before_sending_when_it_is_spent(tmp_path):
    long = "word " * 1200  # 1,500 tokens
    with StandinServer(ScriptedResponder([long], repeat_last=True)) as srv:
        meter = RunMeter(Budget(max_tokens=4000), tmp_path / "calls.jsonl")
        async with _models(srv, meter) as models:
            agent = Agent(models.for_role("solver"))
            with pytest.raises(BudgetExceeded):
                for _ in range(10):
                    await _stream_text(agent)
        meter.close()
    assert meter.total().total_tokens == srv.stats.total_tokens <= 4000
    caps = [_sent_cap(b) for b in srv.requests]
    assert all(c is not None for c in caps) and caps == sorted(caps, reverse=True)
    assert len(read_calls(tmp_path / "calls.jsonl")) == len(srv.requests)  # one line per stream, none for the refused


async def test_a_stream_left_early_is_recorded_and_gives_its_reservation_back(tmp_path):
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    long = "word " * 400
    with StandinServer(ScriptedResponder([long, long, "ok"]), latency_s=0.01) as srv:
        meter = RunMeter(Budget(max_tokens=3000), tmp_path / "calls.jsonl")
        async with _models(srv, meter) as models:
            agent = Agent(models.for_role("solver"))
            async with agent.run_stream("go") as run:  # pydantic-ai reads the rest of the reply on the way out
                async for _ in run.stream_text(delta=True):
                    break
            model = models.for_role("solver")  # the model's own stream, left after its first event
            async with model.request_stream([ModelRequest(parts=[UserPromptPart("go")])], None,
                                            ModelRequestParameters()) as stream:
                async for _ in stream:
                    break
            assert meter.in_flight == 0
            assert (await _stream_text(agent)) == "ok"
        meter.close()
    drained, left, ok = read_calls(tmp_path / "calls.jsonl")
    assert drained.error is None and drained.output_tokens >= 400  # the whole reply, as the server reported it
    assert left.error is None and "closed before its end" in left.note  # its usage never arrived
    assert drained.output_tokens + left.output_tokens + ok.output_tokens <= srv.stats.completion_tokens
    assert ok.error is None and ok.response["parts"][0]["content"] == "ok"
    # the last stream was offered what the budget had left, not that minus what the others held
    assert _sent_cap(srv.requests[2]) > 3000 - drained.usage().total_tokens - left.max_tokens
