"""ask_text: one plain-text request through the recording seam -- instructions and prompt reach the
model as a system/user pair, follow-ups carry the earlier turns, every request is recorded."""

from __future__ import annotations

import json

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.seam import seam_model
from physlab.llm.text import ask_text


class Scribe:
    """A FunctionModel body that remembers what each request looked like and replies with a text
    derived from it; its usage is the number of user prompts in / the reply's length out."""

    def __init__(self, reply_parts=None):
        self.seen: list[dict] = []
        self.reply_parts = reply_parts

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        users = [p.content for m in messages if isinstance(m, ModelRequest)
                 for p in m.parts if isinstance(p, UserPromptPart)]
        earlier = [p.content for m in messages if isinstance(m, ModelResponse)
                   for p in m.parts if isinstance(p, TextPart)]
        self.seen.append({"instructions": info.instructions, "users": users, "earlier_replies": earlier,
                          "tools": info.function_tools})
        parts = self.reply_parts if self.reply_parts is not None else [TextPart(f"re: {users[-1]}")]
        return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=len(users),
                                                             output_tokens=len(str(users[-1]))))


def _model(tmp_path, scribe: Scribe, role: str = "solver") -> tuple[Model, RunMeter]:
    meter = RunMeter(calls_path=tmp_path / "calls.jsonl")
    return seam_model(FunctionModel(scribe), role=role, spec="function:scribe", meter=meter), meter


async def test_system_is_the_instructions_and_prompt_the_user_part(tmp_path):
    scribe = Scribe()
    model, meter = _model(tmp_path, scribe)
    text, messages = await ask_text(model, "What is 2+2?", system="You are a careful physicist.")
    assert text == "re: What is 2+2?"
    assert scribe.seen == [{"instructions": "You are a careful physicist.", "users": ["What is 2+2?"],
                            "earlier_replies": [], "tools": []}]
    assert len(messages) == 2 and isinstance(messages[-1], ModelResponse)
    assert messages[-1].text == text
    meter.close()


async def test_no_system_means_no_instructions(tmp_path):
    scribe = Scribe()
    model, meter = _model(tmp_path, scribe)
    await ask_text(model, "hello")
    assert scribe.seen[0]["instructions"] is None
    meter.close()


async def test_follow_ups_send_the_earlier_turns(tmp_path):
    scribe = Scribe()
    model, meter = _model(tmp_path, scribe)
    t1, m1 = await ask_text(model, "first", system="sys")
    t2, m2 = await ask_text(model, "second", system="sys", history=m1)
    t3, m3 = await ask_text(model, "third", system="sys", history=m2)
    assert scribe.seen[1]["users"] == ["first", "second"] and scribe.seen[1]["earlier_replies"] == [t1]
    assert scribe.seen[2]["users"] == ["first", "second", "third"]
    assert scribe.seen[2]["earlier_replies"] == [t1, t2]
    assert all(s["instructions"] == "sys" for s in scribe.seen)
    assert t3 == "re: third"
    assert len(m3) == 6 and m3[:4] == m2
    assert len(m1) == 2  # the history passed in is not modified
    meter.close()


async def test_every_request_is_one_calls_jsonl_line_with_role_and_tokens(tmp_path):
    scribe = Scribe()
    model, meter = _model(tmp_path, scribe, role="judge")
    _, m1 = await ask_text(model, "one", system="s")
    _, m2 = await ask_text(model, "two two", system="s", history=m1)
    meter.close()
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert len(lines) == 2
    recs = read_calls(tmp_path / "calls.jsonl")
    assert [r.role for r in recs] == ["judge", "judge"]
    # the usage each response reported: user prompts in, length of the last prompt out
    assert [(r.input_tokens, r.output_tokens) for r in recs] == [(1, len("one")), (2, len("two two"))]
    assert meter.total().calls == 2
    assert meter.total().total_tokens == sum(r.input_tokens + r.output_tokens for r in recs)
    # the request recorded is the conversation that was sent (what replay: compares against)
    sent = json.loads(lines[1])["request"]["messages"]
    user_texts = [p["content"] for m in sent for p in m["parts"] if p.get("part_kind") == "user-prompt"]
    assert user_texts == ["one", "two two"]
    assert json.loads(lines[1])["response"]["parts"][0]["content"] == "re: two two"


async def test_a_reply_without_text_gives_an_empty_string(tmp_path):
    scribe = Scribe(reply_parts=[ThinkingPart("hmm, I am not sure")])
    model, meter = _model(tmp_path, scribe)
    text, messages = await ask_text(model, "anything?", system="s")
    assert text == ""
    assert isinstance(messages[-1], ModelResponse) and messages[-1].parts[0].content == "hmm, I am not sure"
    assert len(read_calls(tmp_path / "calls.jsonl")) == 1  # still recorded
    meter.close()
