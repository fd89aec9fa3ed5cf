"""The stand-in plays real servers' habits (what issue #23's findings were seen against): vLLM's
400 for tools without a tool parser, a default output limit and a largest accepted cap, a context
window, rpm limits with OpenAI- or proxy-style headers, a stated cost, vLLM's prefix-cache counts."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from physlab.llm.standin import Habits, ScriptedResponder, StandinServer
from physlab.llm.standin.habits import VLLM_TOOLS_REFUSED

TOOL = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}


def post(srv, body):
    req = urllib.request.Request(srv.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, json.load(e)


def chat(text="hi", **kw):
    return {"model": "standin", "messages": [{"role": "user", "content": text}], **kw}


def test_refuses_tools_as_vllm_without_a_tool_parser():
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits(refuse_tools=True)) as srv:
        status, _, body = post(srv, chat(tools=[TOOL]))
        assert status == 400 and body["message"] == VLLM_TOOLS_REFUSED
        assert post(srv, chat())[0] == 200  # the same server answers without tools


def test_default_output_limit_and_largest_cap():
    long = "word " * 400  # 500 tokens
    with StandinServer(ScriptedResponder([long], repeat_last=True),
                       habits=Habits(default_max_tokens=100, max_output_tokens=300)) as srv:
        _, _, cut = post(srv, chat())
        assert cut["choices"][0]["finish_reason"] == "length" and cut["usage"]["completion_tokens"] == 100
        status, _, refused = post(srv, chat(max_tokens=400))
        assert status == 400 and "supports at most 300 completion tokens" in refused["error"]["message"]
        _, _, capped = post(srv, chat(max_tokens=300))
        assert capped["usage"]["completion_tokens"] == 300
        # asked to go on, it continues the text it was cut in
        text = cut["choices"][0]["message"]["content"]
        _, _, rest = post(srv, {"model": "standin", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": text},
            {"role": "user", "content": "continue"}], "max_tokens": 300})
        assert text + rest["choices"][0]["message"]["content"] == long[:len(text) + 1200]


def test_context_window_refusal_says_the_numbers():
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits(context_window=100)) as srv:
        status, _, body = post(srv, chat("x" * 360, max_tokens=50))
        assert status == 400
        assert "maximum context length is 100 tokens" in body["message"]
        assert "(94 in the messages, 50 in the completion)" in body["message"]
        assert post(srv, chat("x" * 360, max_tokens=6))[0] == 200


@pytest.mark.parametrize("style, headers", [("openai", {"retry-after", "retry-after-ms"}),
                                            ("proxy", {"llm_provider-retry-after", "llm_provider-retry-after-ms"})])
def test_rpm_limit_with_the_headers_of_its_style(style, headers):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True),
                       habits=Habits(rpm=2, rpm_window_s=30, rate_limit_style=style)) as srv:
        assert [post(srv, chat())[0] for _ in range(2)] == [200, 200]
        status, hdrs, _ = post(srv, chat())
    assert status == 429 and headers <= set(hdrs)
    assert not ({"retry-after", "llm_provider-retry-after"} - headers) & set(hdrs)
    assert 25 <= float(hdrs[sorted(headers)[0]]) <= 30


def test_states_its_cost_and_counts_a_repeated_prefix_as_cached():
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True),
                       habits=Habits(usd_per_mtok=(2.0, 8.0), prefix_cache=True)) as srv:
        stable = "You are a careful physicist. " * 40
        _, h1, first = post(srv, chat(stable + "question one"))
        _, _, second = post(srv, chat(stable + "question two"))
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached % 16 == 0 and 0.8 * len(stable) / 4 <= cached <= second["usage"]["prompt_tokens"]
    u = first["usage"]
    assert float(h1["x-litellm-response-cost"]) == pytest.approx((u["prompt_tokens"] * 2 + u["completion_tokens"] * 8) / 1e6)
