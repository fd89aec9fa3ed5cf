"""What a reply may bring and what one line of calls.jsonl may hold (issue 32, "the host"): a server
answering with 2 MB replies (far past what any model writes at the largest output caps) must not
fill the disk through calls.jsonl - RSA once wrote 120 MB in 24 calls, each aggregation prompt
carrying earlier 2 MB replies. A reply over ``max_reply_bytes`` is refused with one clear line
(its tokens still counted: they were served), and no line of calls.jsonl grows past
``max_record_bytes``."""

from __future__ import annotations

import json

import pytest
from pydantic_ai import Agent

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.errors import ModelFailure
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.models import RunModels
from physlab.llm.standin import Habits, ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

# What a model's reply looks like, at 2 MB: reasoning that goes on and on, then the answer.
HUGE = ("Let me work through this carefully. " * 57_000)[:1_999_900] + \
    "\n\n```python\ndef answer(x):\n    y = 2 * x\n    return y\n```\n"
FAST = RetryPolicy(max_attempts=2, backoff_s=0.01)
DEAF = Habits(cap_fields=())  # a broken or hostile server: it honours no output cap


def _problem():
    from physlab.problems.model import Problem

    return Problem(id="double", statement="Return twice $x$.",
                   answer_template="def answer(x):\n    y = ...\n    return y\n")


async def test_rsa_served_2mb_replies_does_not_fill_calls_jsonl(tmp_path):
    from physlab.run.options import RunOptions
    from physlab.run.runner import Shared, run
    from physlab.strategies import registry

    ws = tmp_path / "run"
    params = {"population": 3, "subset_size": 2, "rounds": 2}
    with StandinServer(ScriptedResponder([HUGE], repeat_last=True), habits=DEAF) as srv:
        options = RunOptions(strategy="rsa", model="openai:standin", api_base=srv.base_url, params=params)
        att = await run(_problem(), registry.build("rsa", params), options, Shared(retry=FAST), workspace=ws)
    served = srv.stats.requests
    lines = (ws / "calls.jsonl").read_bytes().splitlines()
    default = ModelDefaults()
    assert served >= 3 and len(lines) == served
    assert max(len(x) for x in lines) <= default.max_record_bytes
    assert sum(len(x) for x in lines) < served * 50_000  # the replies' bodies were not stored
    recs = read_calls(ws / "calls.jsonl")
    assert all(r.error and "max_reply_bytes" in r.error and r.response is None for r in recs)
    assert sum(r.output_tokens for r in recs) == srv.stats.completion_tokens  # served tokens still counted
    assert att.status in ("no_answer", "error")  # nothing usable came back
    said = json.dumps(json.loads((ws / "metrics.json").read_text()))
    assert "max_reply_bytes" in said  # the run says why, in one line a user can act on


async def test_a_reply_over_the_cap_is_refused_with_a_clear_error_and_not_retried(tmp_path):
    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=FAST, max_reply_bytes=100_000)})
    with StandinServer(ScriptedResponder(["x" * 150_000, "fine"]), habits=DEAF) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg) as models:
            refused = r"solver: the reply .*150,000 bytes.*100,000 a reply may bring \(max_reply_bytes"
            with pytest.raises(ModelFailure, match=refused):
                await Agent(models.for_role("solver")).run("go")
            assert (await Agent(models.for_role("solver")).run("go")).output == "fine"  # the next one goes through
        meter.close()
    assert srv.stats.requests == 2
    refused, fine = read_calls(tmp_path / "calls.jsonl")
    assert refused.response is None and "max_reply_bytes" in refused.error and refused.output_tokens > 30_000
    assert fine.error is None and fine.response is not None


async def test_a_reply_just_under_the_cap_is_kept_whole(tmp_path):
    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=FAST, max_reply_bytes=100_000)})
    reply = "y" * 99_000
    with StandinServer(ScriptedResponder([reply]), habits=DEAF) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg) as models:
            assert (await Agent(models.for_role("solver")).run("go")).output == reply
        meter.close()
    (rec,) = read_calls(tmp_path / "calls.jsonl")
    assert rec.error is None and rec.response["parts"][0]["content"] == reply


async def test_a_line_over_the_record_cap_keeps_its_numbers_and_says_what_it_left_out(tmp_path):
    """A prompt far longer than the line cap (a long context carried turn after turn): the line keeps
    the tokens, cost and reply, and says it left the request's messages out."""
    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=FAST, max_record_bytes=50_000)})
    with StandinServer(ScriptedResponder(["short answer"])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg) as models:
            assert (await Agent(models.for_role("solver")).run("context " * 20_000)).output == "short answer"
        meter.close()
    (line,) = (tmp_path / "calls.jsonl").read_bytes().splitlines()
    assert len(line) <= 50_000
    (rec,) = read_calls(tmp_path / "calls.jsonl")
    assert (rec.input_tokens, rec.output_tokens) == (srv.stats.prompt_tokens, srv.stats.completion_tokens)
    assert rec.response["parts"][0]["content"] == "short answer"
    assert "messages" not in rec.request and "max_record_bytes" in rec.note


async def test_a_streamed_reply_over_the_cap_is_refused_when_its_stream_closes(tmp_path):
    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=FAST, max_reply_bytes=100_000)})
    with StandinServer(ScriptedResponder(["z" * 150_000]), habits=DEAF) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg) as models:
            with pytest.raises(ModelFailure, match="max_reply_bytes"):
                async with Agent(models.for_role("solver")).run_stream("go") as run:
                    await run.get_output()
        meter.close()
    (rec,) = read_calls(tmp_path / "calls.jsonl")
    assert rec.response is None and "max_reply_bytes" in rec.error and rec.output_tokens > 30_000
    assert len((tmp_path / "calls.jsonl").read_bytes()) < 20_000
