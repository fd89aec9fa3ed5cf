"""The one redaction of server-provided text: the keys in use and token-shaped strings go, the
physics and the ids a user needs stay."""

from __future__ import annotations

import json

import pytest

from physlab.llm.redact import REDACTED, redact, redact_reply, redact_text


@pytest.mark.parametrize("secret", [
    "sk-proj-Abcdefghijklmnopqrstuvwx0123456789", "sk-ant-api03-abcdefghijklmnopqrstu", "ghp_" + "a1" * 18,
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "AKIAIOSFODNN7EXAMPLE", "AIza" + "x" * 35,
    "xoxb-1234567890-abcdefghij", "hf_" + "Ab1" * 10, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlX2hlcmU",
])
def test_token_shaped_strings_are_redacted(secret):
    said = f'Incorrect API key provided: {secret}. See https://example.com.'
    assert redact_text(said) == f"Incorrect API key provided: {REDACTED}. See https://example.com."


def test_the_key_in_use_is_redacted_whatever_its_shape_and_bearer_values_too():
    said = "key proxy-Kq7Zr2Wm9Xv4Lp8Nt3Bd refused (Authorization: Bearer opaque.value-42xyz; api_key=hunter2hunter2)"
    out = redact_text(said, ("proxy-Kq7Zr2Wm9Xv4Lp8Nt3Bd",))
    assert out == f"key {REDACTED} refused (Authorization: Bearer {REDACTED}; api_key={REDACTED})"
    assert redact({"error": {"message": said}}, "proxy-Kq7Zr2Wm9Xv4Lp8Nt3Bd")["error"]["message"] == out


@pytest.mark.parametrize("text", [
    "HTTP 400: This model's maximum context length is 8192 tokens; sk-learn and the skew-symmetric tensor",
    "request id chatcmpl-9aZ3xYq7, arXiv:2101.01234v2, doi:10.1103/PhysRevLett.80.1",
    "sha256 3f786850e387550fdab836ed7e6dc881de23001b and the api_key_env MY_KEY",
    "E = mc^2 with a short key 'abc'",
])
def test_what_is_no_secret_is_kept(text):
    assert redact_text(text, ("abc",)) == text


def test_a_reply_loses_the_key_in_use_in_every_part_and_keeps_token_like_physics():
    from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart

    key = 'odd"key\\with-quotes-42'  # a key JSON escapes, inside a tool call's JSON arguments
    physics = "hf_hydrogenGroundStateSplittingInMegahertz = 1420.4; the bearer particles; sha256 " + "ab" * 32
    resp = ModelResponse(parts=[TextPart(f"{physics} {key}"), ThinkingPart(f"the key {key}"),
                                ToolCallPart("note", '{"text": ' + json.dumps(f"k={key}") + "}")],
                         model_name="gpt-4o", provider_details={"echo": "sk-proj-Abcdefghijklmnopqrstuvwx0123"})
    out = redact_reply(resp, (key,))
    assert [getattr(p, "content", None) or p.args for p in out.parts] == [
        f"{physics} {REDACTED}", f"the key {REDACTED}", '{"text": "k=' + REDACTED + '"}']
    assert out.provider_details == {"echo": REDACTED} and out.model_name == "gpt-4o"
    assert resp.parts[0].content.endswith(key)  # the reply the server gave is copied, not changed
    clean = ModelResponse(parts=[TextPart(physics)], model_name="gpt-4o")
    assert redact_reply(clean, (key,)) is clean
