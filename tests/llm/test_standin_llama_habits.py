"""The stand-in plays the habits a real llama-cpp-python server showed (issue #47, Gemma 3 270M
behind ``python -m llama_cpp.server``), so the default test run meets them without the real model:
``max_tokens`` honoured and ``max_completion_tokens`` ignored, ``json_schema`` refused with a 500,
``json_object`` with a ``schema`` held to it, tools only with ``tool_choice: "auto"``, the system
message dropped, a list of text parts mangled, one request served at a time, no usage in streams,
a prompt only (not the cap) held against the window, and its tokenizer endpoint."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

from pydantic import BaseModel, ValidationError

from physlab.llm.standin import Habits, ScriptedResponder, StandinServer


class Named(BaseModel):
    value: int
    name: str


SCHEMA = Named.model_json_schema()
TOOL = {"type": "function", "function": {"name": "multiply", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}


def post(srv, body, path="/chat/completions"):
    req = urllib.request.Request(srv.base_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if not body.get("stream") else raw.decode())
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def chat(text="Say hello.", system="You are terse.", **kw):
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return {"model": "gemma", "messages": msgs, **kw}


def small_model(**kw):
    """Gemma 3 270M behind llama-cpp-python: it rambles and does not follow instructions."""
    return StandinServer(ScriptedResponder(["ok"], repeat_last=True), habits=Habits.llama_cpp_python(**kw))


def test_max_tokens_is_honoured_and_max_completion_tokens_ignored_the_reply_runs_to_the_window():
    with small_model(context_window=600) as srv:
        _, capped = post(srv, chat(max_tokens=12))
        assert capped["choices"][0]["finish_reason"] == "length" and capped["usage"]["completion_tokens"] == 12
        _, ignored = post(srv, chat(max_completion_tokens=12))
        u = ignored["usage"]
        assert ignored["choices"][0]["finish_reason"] == "length"
        assert u["prompt_tokens"] + u["completion_tokens"] == 600  # generated to the end of the context


def test_json_schema_is_refused_as_a_500_and_json_object_with_a_schema_is_held_to_it():
    with small_model() as srv:
        status, body = post(srv, chat(max_tokens=64, response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}))
        assert status == 500 and "Input should be 'text' or 'json_object'" in body["error"]["message"]
        status, body = post(srv, chat(max_tokens=64, response_format={"type": "json_object", "schema": SCHEMA}))
        assert status == 200
        Named.model_validate_json(body["choices"][0]["message"]["content"])
        # unconstrained, the small model does not write what it was asked
        _, free = post(srv, chat("Reply with the JSON object {\"value\": 1, \"name\": \"a\"}", max_tokens=64))
        try:
            Named.model_validate_json(free["choices"][0]["message"]["content"])
            followed = True
        except ValidationError:
            followed = False
        assert not followed
    with small_model(json_schema_refusal="empty") as srv:
        status, body = post(srv, chat(response_format={"type": "json_schema", "json_schema": {"schema": SCHEMA}}))
        assert status == 500 and body["error"]["message"] == ""


def test_tools_only_with_tool_choice_auto():
    with small_model() as srv:
        assert post(srv, chat(max_tokens=20, tools=[TOOL], tool_choice="auto"))[0] == 200
        status, body = post(srv, chat(max_tokens=20, tools=[TOOL], tool_choice="required"))
        assert status == 500 and body["error"]["message"] == ""


def test_the_gemma_format_drops_the_system_message_and_chatml_mangles_a_list_of_parts():
    parts = [{"type": "text", "text": "Say "}, {"type": "text", "text": "the word banana."}]
    with small_model(chat_format="gemma") as srv:
        _, with_system = post(srv, chat(max_tokens=4))
        _, without = post(srv, chat(system=None, max_tokens=4))
        assert with_system["usage"]["prompt_tokens"] == without["usage"]["prompt_tokens"]
    with small_model() as srv:  # chatml-function-calling keeps the system message, mangles parts
        _, with_system = post(srv, chat(max_tokens=4))
        _, without = post(srv, chat(system=None, max_tokens=4))
        assert with_system["usage"]["prompt_tokens"] > without["usage"]["prompt_tokens"]
        _, as_parts = post(srv, chat(parts, system=None, max_tokens=4))
        _, as_text = post(srv, chat("Say the word banana.", system=None, max_tokens=4))
        assert as_parts["usage"]["prompt_tokens"] > 2 * as_text["usage"]["prompt_tokens"]
        assert "&#x27;type&#x27;: &#x27;text&#x27;" in srv.seen[-2]


def test_one_request_at_a_time_and_no_usage_in_streams():
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=0.3,
                       habits=Habits.llama_cpp_python()) as srv:
        threads = [threading.Thread(target=post, args=(srv, chat(max_tokens=4))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.stats.max_in_flight == 3 and srv.stats.max_serving == 1
        _, events = post(srv, chat(max_tokens=4, stream=True, stream_options={"include_usage": True}))
        assert "data: [DONE]" in events and '"usage"' not in events


def test_the_window_holds_the_prompt_only_and_its_refusal_says_the_window():
    with small_model(context_window=200) as srv:
        status, body = post(srv, chat("word " * 400, max_tokens=5))
        assert status == 400 and "maximum context length is 200 tokens" in body["error"]["message"]
        status, body = post(srv, chat("word " * 100, max_tokens=5000))  # prompt fits: cut at the window
        u = body["usage"]
        assert status == 200 and u["prompt_tokens"] + u["completion_tokens"] == 200


def test_its_tokenizer_counts_as_its_usage_does():
    with small_model() as srv:
        root = srv.base_url.removesuffix("/v1")
        req = urllib.request.Request(root + "/extras/tokenize", data=json.dumps({"input": "hello world " * 10}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            tokens = json.load(r)["tokens"]
        _, body = post(srv, chat("hello world " * 10, system=None, max_tokens=1))
        assert len(tokens) == body["usage"]["prompt_tokens"] - 4  # the message's overhead beside its text
