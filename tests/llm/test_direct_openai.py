"""DirectOpenAIModel (registry ``client: direct``): the lean aiohttp chat-completions client.

The strongest check is against the SDK path itself: the same Agent run goes once through
OpenAIChatModel + openai SDK and once through DirectOpenAIModel, each against its own stand-in
server with the same script, and the request bodies the servers recorded must be equal, as must
the message histories the runs produced. Reply mapping is compared the same way, with both clients
fed the same completion JSON through in-memory transports.
"""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import time
import warnings
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelRetry,
    NativeOutput,
    PromptedOutput,
)
from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelTimeoutError,
    UnexpectedModelBehavior,
)
from pydantic_ai.exceptions import UserError as PydanticAIUserError
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)

from physlab.errors import UserError
from physlab.llm.defaults import ModelDefaults, ModelRegistry
from physlab.llm.direct_openai import DirectOpenAIModel, parse_retry_after
from physlab.llm.errors import ModelFailure
from physlab.llm.meter import RunMeter
from physlab.llm.models import ProviderPool, RunModels, build_provider_model, close_provider_model
from physlab.llm.recording import RecordingModel, RetryPolicy, normalize_messages
from physlab.llm.standin import Reply, ScriptedResponder, StandinServer

# Keys the SDK puts in every body without being asked. The direct client sends "stream": false too, so
# nothing is left over; a key added here would be excluded from the body comparison.
SDK_DEFAULT_KEYS: frozenset[str] = frozenset()

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


class Sum(BaseModel):
    total: int


def _bodies(requests):
    return [{k: v for k, v in r.items() if k not in SDK_DEFAULT_KEYS} for r in requests]


def _history(messages):
    """A run's messages without what differs between two runs (timestamps, run ids, the server's port)."""
    dumped = normalize_messages(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))
    for m in dumped:
        m.pop("provider_url", None)
    return dumped


async def _run_both(script, run, *, spec="openai:standin"):
    """``run(model) -> messages`` once per client, each against a fresh stand-in with ``script``."""
    out = {}
    for client in ("sdk", "direct"):
        with StandinServer(ScriptedResponder(list(script))) as srv:
            model = build_provider_model(spec, api_base=srv.base_url, defaults=ModelDefaults(client=client))
            assert isinstance(model, DirectOpenAIModel) == (client == "direct")
            try:
                messages = await run(model)
            finally:
                await close_provider_model(model)
            out[client] = (srv.requests, messages)
    return out


def _assert_same(out):
    sdk_requests, sdk_messages = out["sdk"]
    direct_requests, direct_messages = out["direct"]
    assert _bodies(direct_requests) == _bodies(sdk_requests)
    assert _history(direct_messages) == _history(sdk_messages)


SETTINGS = {"temperature": 0.2, "top_p": 0.9, "seed": 7, "stop_sequences": ["STOP"], "presence_penalty": 0.1,
            "frequency_penalty": 0.2, "logit_bias": {"50256": -100}, "parallel_tool_calls": False, "max_tokens": 300,
            "extra_body": {"top_k": 5, "chat_template_kwargs": {"enable_thinking": False}},
            "extra_headers": {"X-Trace": "abc"}}


async def test_tools_returns_retries_instructions_and_settings_send_the_sdk_body():
    script = [Reply(tool_calls=[("add", {"a": 2, "b": 3}), ("flaky", {"x": 1})]),  # a ModelRetry from a tool
              Reply(tool_calls=[("flaky", {"x": 2}), ("add", {"a": "two"})]),  # bad args: a validation retry
              Reply(tool_calls=[("no_such_tool", {})]),  # an unknown tool: a retry prompt
              "not done yet",  # the output validator asks again (a retry prompt without a tool)
              "final: 5", "and again: 5"]

    async def run(model):
        failed: list[int] = []
        agent = Agent(model, instructions="Be brief.", system_prompt="You are a physicist.", retries=3,
                      model_settings=SETTINGS)

        @agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @agent.tool_plain
        def flaky(x: int) -> int:
            """Fails the first time."""
            if not failed:
                failed.append(x)
                raise ModelRetry("try again with another x")
            return x

        @agent.output_validator
        def final_only(out: str) -> str:
            if "final" not in out and "again" not in out:
                raise ModelRetry("answer with 'final: <n>'")
            return out

        first = await agent.run("add 2 and 3")
        second = await agent.run("once more", message_history=first.all_messages())
        assert second.output == "and again: 5"
        return second.all_messages()

    out = await _run_both(script, run)
    _assert_same(out)
    bodies = out["direct"][0]
    assert len(bodies) == 6
    first = bodies[0]
    assert [m["role"] for m in first["messages"]] == ["system", "system", "user"]
    assert first["messages"][1] == {"role": "system", "content": "Be brief."}
    assert first["tool_choice"] == "auto" and {t["function"]["name"] for t in first["tools"]} == {"add", "flaky"}
    assert first["max_completion_tokens"] == 300 and first["stop"] == ["STOP"] and first["top_k"] == 5
    assert first["parallel_tool_calls"] is False and first["logit_bias"] == {"50256": -100}
    roles = [m["role"] for m in bodies[3]["messages"]]
    assert roles.count("tool") == 5 and roles[3] == "assistant"
    tool_msgs = [m for m in bodies[3]["messages"] if m["role"] == "tool"]
    assert "try again with another x" in tool_msgs[1]["content"]
    assert any("no_such_tool" in m["content"] for m in tool_msgs)
    assert "answer with 'final: <n>'" in json.dumps(bodies[4]["messages"][-1])


@pytest.mark.parametrize("mode", ["tool", "native", "prompted"])
async def test_structured_output_sends_the_sdk_body(mode):
    output_type = {"tool": Sum, "native": NativeOutput(Sum), "prompted": PromptedOutput(Sum)}[mode]
    answer = Reply(tool_calls=[("final_result", {"total": 5})]) if mode == "tool" else '{"total": 5}'

    async def run(model):
        result = await Agent(model, output_type=output_type, instructions="Sum it.").run("2 + 3?")
        assert result.output == Sum(total=5)
        return result.all_messages()

    out = await _run_both([answer], run)
    _assert_same(out)
    body = out["direct"][0][0]
    if mode == "tool":
        assert body["tool_choice"] == "required" and body["tools"][0]["function"]["name"] == "final_result"
    elif mode == "native":
        assert body["response_format"]["type"] == "json_schema" and "tools" not in body
        assert body["response_format"]["json_schema"]["schema"]["properties"] == {"total": {"type": "integer"}}
    else:
        assert body["response_format"] == {"type": "json_object"}
        system = [m["content"] for m in body["messages"] if m["role"] == "system"]
        assert system[0] == "Sum it." and "total" in system[-1]  # the schema rides in the instructions


async def test_images_and_text_files_send_the_sdk_body():
    async def run(model):
        agent = Agent(model)

        @agent.tool_plain
        def plot() -> BinaryContent:
            """Returns a picture."""
            return BinaryContent(PNG, media_type="image/png")

        prompt = ["Look:", ImageUrl("https://example.com/a.png"), BinaryContent(PNG, media_type="image/png"),
                  BinaryContent(b"a,b\n1,2\n", media_type="text/csv")]
        return (await agent.run(prompt)).all_messages()

    out = await _run_both([Reply(tool_calls=[("plot", {})]), "a dot"], run)
    _assert_same(out)
    first, second = out["direct"][0]
    kinds = [p["type"] for p in first["messages"][-1]["content"]]
    assert kinds == ["text", "image_url", "image_url", "text"]
    assert first["messages"][-1]["content"][2]["image_url"]["url"].startswith("data:image/png;base64,")
    assert second["messages"][-1]["role"] == "user"  # the tool's image follows the tool message


async def test_reasoning_model_thinking_and_sampling_settings_send_the_sdk_body():
    async def run(model):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both paths warn that temperature is dropped while reasoning
            return (await Agent(model).run("hi", model_settings={"thinking": "low", "temperature": 0.3})).all_messages()

    out = await _run_both(["ok"], run, spec="openai:gpt-5")
    _assert_same(out)
    body = out["direct"][0][0]
    assert body["reasoning_effort"] == "low" and "temperature" not in body


async def test_thinking_parts_are_not_sent_back():
    """On purpose unlike the SDK path, which replays them (here as <think> text): see direct_openai_messages."""
    history = [ModelRequest(parts=[UserPromptPart("2+2?")]),
               ModelResponse(parts=[ThinkingPart("carry the one"), TextPart("4")])]

    async def run(model):
        return (await Agent(model).run("and 3+3?", message_history=history)).all_messages()

    out = await _run_both(["6"], run)
    direct_msgs, sdk_msgs = out["direct"][0][0]["messages"], out["sdk"][0][0]["messages"]
    assert direct_msgs[1] == {"role": "assistant", "content": "4"}
    assert "carry the one" in sdk_msgs[1]["content"]
    assert direct_msgs[2:] == sdk_msgs[2:]


# ---- replies: both clients fed the same completion ------------------------------------------------
def _completion(message, *, finish="stop", usage=True, **extra):
    body = {"id": "chatcmpl-9", "object": "chat.completion", "created": 1700000000, "model": "served-name",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish,
                         "logprobs": extra.pop("logprobs", None)}]}
    if usage:
        body["usage"] = usage if isinstance(usage, dict) else {"prompt_tokens": 11, "completion_tokens": 7,
                                                                "total_tokens": 18}
    return body | extra


def _fixed(status, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def transport(url, headers_out, payload, timeout_s):
        return status, headers or {"content-type": "application/json"}, data

    return transport


def _sdk_model_answering(status, body, headers=None):
    import httpx2
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    transport = httpx2.MockTransport(lambda request: httpx2.Response(
        status, content=data, headers=headers or {"content-type": "application/json"}))
    client = AsyncOpenAI(base_url="http://fake.invalid/v1", api_key="k", max_retries=0,
                         http_client=DefaultAsyncHttpxClient(transport=transport))
    return OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))


def _direct_model_answering(status, body, headers=None):
    return DirectOpenAIModel("m", base_url="http://fake.invalid/v1", api_key="k",
                             transport=_fixed(status, body, headers))


HI = [ModelRequest(parts=[UserPromptPart("hi")])]

REPLIES = {
    "text": _completion({"content": "hello"}),
    "tool calls": _completion({"content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}},
        {"id": "", "type": "function", "function": {"name": "sub", "arguments": "{}"}}]}, finish="tool_calls"),
    "reasoning field": _completion({"content": "4", "reasoning_content": "2+2 is 4"}),
    "think tags": _completion({"content": "<think>hmm</think>The answer is 4."}),
    "refusal": _completion({"content": None, "refusal": "I can't help with that."}),
    "length": _completion({"content": "cut"}, finish="length"),
    "unknown finish": _completion({"content": "x"}, finish="guardrail_intervened"),
    "no finish": _completion({"content": "x"}, finish=None),
    "no usage": _completion({"content": "x"}, usage=False),
    "cache details": _completion({"content": "x"}, usage={
        "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
        "prompt_tokens_details": {"cached_tokens": 64}, "completion_tokens_details": {"reasoning_tokens": 12}}),
    "logprobs": _completion({"content": "x"}, logprobs={"content": [
        {"token": "x", "bytes": [120], "logprob": -0.1,
         "top_logprobs": [{"token": "x", "bytes": [120], "logprob": -0.1}]}]}),
    "service tier": _completion({"content": "x"}, service_tier="default"),
}


@pytest.mark.parametrize("name", list(REPLIES))
async def test_replies_map_to_the_sdk_model_response(name):
    sdk = await model_request(_sdk_model_answering(200, REPLIES[name]), HI)
    direct = await model_request(_direct_model_answering(200, REPLIES[name]), HI)
    sdk_dump, direct_dump = _history([sdk]), _history([direct])
    if name == "tool calls":  # a missing id is generated, differently each time
        for dump in (sdk_dump, direct_dump):
            dump[0]["parts"][1].pop("tool_call_id")
    assert direct_dump == sdk_dump
    assert direct.provider_url == sdk.provider_url == "http://fake.invalid/v1/"


async def test_reply_mapping_details():
    r = await model_request(_direct_model_answering(200, REPLIES["cache details"]), HI)
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens) == (100, 20, 64)
    assert r.model_name == "served-name" and r.provider_response_id == "chatcmpl-9" and r.provider_name == "openai"
    r = await model_request(_direct_model_answering(200, REPLIES["tool calls"]), HI)
    assert [p.tool_name for p in r.parts] == ["add", "sub"] and r.parts[0].args == '{"a": 1}'
    assert r.parts[1].tool_call_id and r.finish_reason == "tool_call"
    r = await model_request(_direct_model_answering(200, REPLIES["refusal"]), HI)
    assert r.parts == [] and r.finish_reason == "content_filter"


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b"", b"\xff\xfe", b"[1, 2]",
                                  json.dumps(_completion({"content": "x"}) | {"choices": []}).encode()])
async def test_a_reply_that_is_not_a_completion_is_unexpected_model_behavior(body):
    with pytest.raises(UnexpectedModelBehavior, match="Invalid response"):
        await model_request(_direct_model_answering(200, body, {"content-type": "text/html"}), HI)


async def test_a_non_json_reply_is_retried_by_the_recording_model():
    replies = [(200, b"<html>oops</html>"), (200, json.dumps(_completion({"content": "fine"})).encode())]

    async def transport(url, headers, payload, timeout_s):
        status, data = replies.pop(0)
        return status, {}, data

    meter = RunMeter()
    model = RecordingModel(DirectOpenAIModel("m", base_url="http://fake.invalid/v1", api_key="k", transport=transport),
                           role="solver", spec="openai:m", meter=meter, retry=RetryPolicy(backoff_s=0.0))
    assert (await Agent(model).run("hi")).output == "fine"
    assert meter.records[0].error.startswith("UnexpectedModelBehavior") and "invalid_reply" in meter.records[0].note


# ---- errors ---------------------------------------------------------------------------------------
def test_retry_after_parsing():
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert parse_retry_after({"Retry-After": "3", "retry-after-ms": "300"}) == 0.3  # the exact one wins
    assert parse_retry_after({"retry-after-ms": "junk", "Retry-After": "4"}) == 4.0
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after({"Retry-After": later}) <= 30
    earlier = format_datetime(datetime.now(timezone.utc) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": earlier}) == 0.0
    for bad in ({"Retry-After": "-1"}, {"Retry-After": "soon"}, {"Retry-After": "nan"}, {}):
        assert parse_retry_after(bad) is None


async def test_http_errors_match_the_sdk_path():
    for status, headers, body in [
        (429, {"Retry-After": "1", "retry-after-ms": "250", "content-type": "application/json"},
         {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}),
        (500, {"content-type": "application/json"}, {"error": {"message": "boom", "type": "server_error"}}),
        (400, {"content-type": "application/json"},
         {"error": {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        (502, {"content-type": "text/html", "Retry-After": "7"}, b"<html>bad gateway</html>"),
    ]:
        errors = []
        for make in (_sdk_model_answering, _direct_model_answering):
            with pytest.raises(ModelHTTPError) as info:
                await model_request(make(status, body, headers), HI)
            errors.append(info.value)
        sdk, direct = errors
        assert type(direct).__name__ == type(sdk).__name__ and direct.status_code == sdk.status_code == status
        assert direct.body == sdk.body and direct.retry_after == sdk.retry_after
        assert (direct.provider_error_code, direct.provider_error_type) == (sdk.provider_error_code,
                                                                             sdk.provider_error_type)
    assert isinstance(errors[1], ModelHTTPError) and errors[1].retry_after == 7.0


async def test_rate_limit_from_the_standin_carries_retry_after():
    with StandinServer(ScriptedResponder(["ok"])) as srv:
        model = DirectOpenAIModel("standin", base_url=srv.base_url, api_key="k")
        srv.inject("rate_limit", retry_after=0.3)
        with pytest.raises(ModelRateLimitError) as info:
            await model_request(model, HI)
        assert isinstance(info.value, ModelHTTPError) and info.value.status_code == 429
        assert info.value.retry_after == 0.3
        assert (await model_request(model, HI)).parts == [TextPart("ok")]
        await model.aclose()


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def test_connection_refused_is_a_connection_error():
    model = DirectOpenAIModel("m", base_url=f"http://127.0.0.1:{_free_port()}/v1", api_key="k")
    with pytest.raises(ModelConnectionError, match="Connection error"):
        await model_request(model, HI)
    await model.aclose()


async def test_timeout_and_dropped_connection():
    with StandinServer(ScriptedResponder(["late", "never"])) as srv:
        model = DirectOpenAIModel("standin", base_url=srv.base_url, api_key="k", timeout_s=0.2)
        srv.inject("slow", delay_s=1.0)
        with pytest.raises(ModelTimeoutError):
            await model_request(model, HI)
        srv.inject("drop")
        with pytest.raises(ModelConnectionError):
            await model_request(model, HI, model_settings={"timeout": 5})
        await model.aclose()


async def test_unsupported_content_is_a_clear_user_error():
    model = _direct_model_answering(200, REPLIES["text"])
    for item in (AudioUrl("https://example.com/a.mp3"), DocumentUrl("https://example.com/a.pdf"),
                 ImageUrl("https://example.com/a.png", force_download=True)):
        with pytest.raises(PydanticAIUserError, match="not supported by the direct OpenAI client"):
            await model_request(model, [ModelRequest(parts=[UserPromptPart(["see", item])])])


async def test_request_details_without_a_server():
    seen = []

    async def transport(url, headers, payload, timeout_s):
        seen.append((url, dict(headers), json.loads(payload), timeout_s))
        return 200, {}, json.dumps(REPLIES["text"]).encode()

    model = DirectOpenAIModel("m", base_url="http://host:1/v1//", api_key="sk-test", timeout_s=42, transport=transport)
    await model_request(model, HI, model_settings={"timeout": 3.5, "parallel_tool_calls": True, "max_tokens": 9,
                                                   "extra_headers": {"X-A": "b"}})
    await model_request(model, HI)
    (url, headers, body, timeout), (_, _, _, default_timeout) = seen
    assert url == "http://host:1/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test" and headers["X-A"] == "b"
    assert timeout == 3.5 and default_timeout == 42
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False,
                    "max_completion_tokens": 9}  # parallel_tool_calls only goes with tools


# ---- session lifetime -----------------------------------------------------------------------------
def _wait_for(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


@pytest.mark.parametrize("http1", [True, False], ids=["http1", "aiohttp"])
def test_connections_are_remade_on_a_new_event_loop_and_the_old_ones_closed(http1):
    with StandinServer(ScriptedResponder(["a", "b", "c"])) as srv:
        model = DirectOpenAIModel("standin", base_url=srv.base_url, api_key="k", http1=http1)

        def client():
            return model._pool if http1 else model._session

        async def ask():
            await model_request(model, HI)
            return client()

        stopped = asyncio.new_event_loop()  # used, then stopped but not closed
        first = stopped.run_until_complete(ask())
        assert first is not None and srv.open_connections == 1
        second = asyncio.run(ask())  # a new loop: the stopped loop's connections are closed on it first
        assert first is not second
        assert first.sockets() == [] if http1 else first.closed
        # the previous loop is closed now: its sockets are shut down instead, and the server sees it
        third = asyncio.run(ask())
        assert third is not second and (http1 or second.closed)
        assert _wait_for(lambda: srv.open_connections == 1)
        stopped.close()

        async def close():
            await model.aclose()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            asyncio.run(close())
            gc.collect()
        assert client() is None and (http1 or third.closed)
        assert _wait_for(lambda: srv.open_connections == 0)  # its loop is closed: shut down, as above
        assert not [w for w in caught if "Unclosed client session" in str(w.message)]
        assert srv.stats.answered == 3


@pytest.mark.parametrize("http1", [True, False], ids=["http1", "aiohttp"])
async def test_aclose_closes_the_connections_and_the_streaming_fallback_and_the_model_stays_usable(http1):
    with StandinServer(ScriptedResponder(["one", "streamed reply", "two"])) as srv:
        model = DirectOpenAIModel("standin", base_url=srv.base_url, api_key="k", http1=http1)
        await model_request(model, HI)
        client = model._pool if http1 else model._session
        async with Agent(model).run_stream("go") as run:
            assert await run.get_output() == "streamed reply"
        fallback = model._stream_model
        assert srv.requests[1]["stream"] is True and fallback is not None
        await model.aclose()
        await model.aclose()  # twice is fine
        assert (client.sockets() == [] if http1 else client.closed)
        assert model._stream_model is None and fallback.client.is_closed()
        assert await asyncio.to_thread(_wait_for, lambda: srv.open_connections == 0)
        assert (await model_request(model, HI)).parts == [TextPart("two")]  # new connections
        await model.aclose()


# ---- wiring ---------------------------------------------------------------------------------------
def test_registry_client_key_builds_the_direct_model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    model = build_provider_model("openai:gpt-4o", defaults=ModelDefaults(client="direct", timeout_s=12))
    assert isinstance(model, DirectOpenAIModel) and model.base_url == "https://api.openai.com/v1/"
    assert model.timeout_s == 12 and model.model_name == "gpt-4o" and model.system == "openai"
    with pytest.raises(UserError, match="client: direct only applies to openai: models") as info:
        build_provider_model("anthropic:claude-x", defaults=ModelDefaults(client="direct"))
    assert info.value.field == "client" and "\n" not in str(info.value)
    reg = ModelRegistry.model_validate({"models": {"openai:*": {"client": "direct"}}})
    assert reg.defaults_for("openai:qwen").client == "direct" and ModelDefaults().client == "sdk"


async def test_provider_pool_keys_include_the_client_kind():
    pool = ProviderPool()
    base = "http://127.0.0.1:9/v1"
    sdk = pool.acquire("openai:m", api_base=base, api_key_env=None, defaults=ModelDefaults())
    direct = pool.acquire("openai:m", api_base=base, api_key_env=None, defaults=ModelDefaults(client="direct"))
    assert isinstance(direct, DirectOpenAIModel) and not isinstance(sdk, DirectOpenAIModel)
    assert pool.acquire("openai:m", api_base=base, api_key_env=None, defaults=ModelDefaults(client="direct")) is direct
    await pool.aclose()


async def test_run_models_records_direct_calls(tmp_path):
    with StandinServer(ScriptedResponder(["x" * 40])) as srv:
        meter = RunMeter(calls_path=tmp_path / "calls.jsonl")
        models = RunModels("openai:standin", meter=meter, api_base=srv.base_url,
                           registry=ModelRegistry(models={"openai:standin": ModelDefaults(client="direct")}))
        assert (await Agent(models.for_role("solver")).run("hi")).output == "x" * 40
        await models.aclose()
    meter.close()
    rec = meter.records[0]
    assert rec.output_tokens == srv.stats.completion_tokens == 10 and rec.finish_reason == "stop"


async def test_budget_failure_still_raises_model_failure_for_direct():
    meter = RunMeter()
    model = RecordingModel(DirectOpenAIModel("m", base_url=f"http://127.0.0.1:{_free_port()}/v1", api_key="k"),
                           role="solver", spec="openai:m", meter=meter, retry=RetryPolicy(max_attempts=2, backoff_s=0))
    t0 = time.monotonic()
    with pytest.raises(ModelFailure, match="after 2 attempts \\(connection\\)"):
        await Agent(model).run("x")
    assert time.monotonic() - t0 < 30
    await model.wrapped.aclose()
