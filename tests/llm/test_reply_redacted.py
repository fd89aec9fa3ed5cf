"""A key a server puts in a *reply* is not kept either (issue #45, item 5). A careless proxy that
writes the bearer token it was sent into a reply's text, a tool call's arguments or a streamed
chunk: calls.jsonl and what the caller gets back say "[redacted]" in its place, while what a
physics answer legitimately holds (hex digests, long identifiers, "bearer", code reading an
``api_key``, token-like variable names) stays word for word."""

from __future__ import annotations

import json

import pytest
from pydantic_ai import Agent

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
from physlab.llm.meter import RunMeter
from physlab.llm.redact import REDACTED
from physlab.llm.standin import Reply, ScriptedResponder, StandinServer
from physlab.llm.usage import Budget

KEY_ENV, KEY = "PHYSLAB_TEST_REPLY_KEY", "proxy-Kq7Zr2Wm9Xv4Lp8Nt3Bd"

# What a physics reply may hold that merely looks like a secret: none of it may change.
PHYSICS = ("The two-loop coefficient b_1 = 102 - 38 n_f / 3 follows; sha256 of the table "
           "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, commit 3f786850e387550fdab836ed7e6dc881de23001b. "
           "Call compute_two_loop_beta_function_coefficient_for_su3_with_nf_flavours(nf=5). "
           "The charge bearer particles_and_fields carry it; in code: api_key = os.environ['OPENAI_API_KEY']. "
           "hf_hydrogenGroundStateSplittingInMegahertz = 1420.405751768; sk-learn; arXiv:2101.01234v2.")


def _models(srv, meter):
    from physlab.llm.models import RunModels

    reg = ModelRegistry(models={"openai:standin": ModelDefaults(retry=RetryPolicy(backoff_s=0.01))})
    return RunModels("openai:standin", meter=meter, api_base=srv.base_url, registry=reg, api_key_env=KEY_ENV)


def _lines(path) -> str:
    return path.read_text()


async def test_the_key_in_a_replys_text_is_redacted_and_physics_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    said = f"Echo of your request (Authorization: Bearer {KEY}). {PHYSICS}"
    with StandinServer(ScriptedResponder([said])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with _models(srv, meter) as models:
            out = (await Agent(models.for_role("solver")).run("go")).output
        meter.close()
    assert KEY not in out and f"Bearer {REDACTED}" in out
    assert PHYSICS in out  # the physics, word for word
    kept = _lines(tmp_path / "calls.jsonl")
    assert KEY not in kept and REDACTED in kept
    assert json.loads(kept.splitlines()[0])["response"]["parts"][0]["content"] == out


async def test_the_key_in_a_tool_calls_arguments_never_reaches_the_tool_or_the_record(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    got: list[str] = []
    script = ScriptedResponder([Reply(tool_calls=[("note", {"text": f"token {KEY} then {PHYSICS}"})]),
                                Reply(tool_calls=[("note", json.dumps({"text": f"again {KEY}"}))]), "done"])
    with StandinServer(script) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with _models(srv, meter) as models:
            agent = Agent(models.for_role("solver"))

            @agent.tool_plain
            def note(text: str) -> str:
                got.append(text)
                return "noted"

            assert (await agent.run("go")).output == "done"
        meter.close()
    assert got == [f"token {REDACTED} then {PHYSICS}", f"again {REDACTED}"]
    kept = _lines(tmp_path / "calls.jsonl")
    assert KEY not in kept and kept.count(REDACTED) >= 2
    # the next request carried the redacted history: the server never saw its echo come back either
    assert KEY not in json.dumps(srv.requests[1]["messages"])


async def test_the_key_in_a_streamed_reply_is_not_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with StandinServer(ScriptedResponder([f"streamed {KEY} and {PHYSICS}"])) as srv:
        meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
        async with _models(srv, meter) as models:
            async with Agent(models.for_role("solver")).run_stream("go") as run:
                await run.get_output()
        meter.close()
    assert srv.requests[0]["stream"] is True
    rec = json.loads(_lines(tmp_path / "calls.jsonl").splitlines()[0])
    assert rec["response"]["parts"][0]["content"] == f"streamed {REDACTED} and {PHYSICS}"


DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def _echoing_lab():
    """The mini lab scenario played by a proxy that writes the key it was sent into the text of its
    replies: the computer's findings, the reviewer's reasoning, the answer's Markdown."""
    from physlab.llm.scripted import final_answer
    from tests.lab.mini import Mini, register

    class Echoing(Mini):
        def computer(self, messages, info, prompt):
            reply = super().computer(messages, info, prompt)
            for part in reply.parts:
                if isinstance(part.args, dict) and "findings" in part.args:
                    part.args["findings"] += f" (proxy {KEY}; table sha256 {DIGEST})"
            return reply

        def reviewer(self, messages, info, prompt):
            return final_answer(info, {"verdict": "VERIFIED", "reasoning": f"recomputed with {KEY}"})

        def formatter(self, messages, info, prompt):
            reply = super().formatter(messages, info, prompt)
            for part in reply.parts:
                if isinstance(part.args, dict) and "answer_markdown" in part.args:
                    part.args["answer_markdown"] += f" (the proxy's {KEY})"
            return reply

    return register("test-mini-echoing-key", Echoing)


@pytest.mark.slow
async def test_a_lab_run_keeps_no_key_its_server_wrote_into_replies(tmp_path, monkeypatch):
    import subprocess

    from physlab.api import solve_async
    from physlab.llm.standin import ScenarioResponder
    from tests.lab.helpers import lab_role_of
    from tests.lab.mini import mini_problem

    monkeypatch.setenv(KEY_ENV, KEY)
    ws = tmp_path / "run"
    scenario = _echoing_lab().split(":", 1)[1]
    with StandinServer(ScenarioResponder(scenario, lab_role_of())) as srv:
        attempt = await solve_async(mini_problem("42"), "lab", "openai:standin", workspace=ws,
                                   api_base=srv.base_url, api_key_env=KEY_ENV, params={"max_iterations": 4})
    assert attempt.status == "complete", attempt.details
    assert attempt.verdict.verdict == "correct"  # redaction took nothing the physics needed
    kept = {str(p.relative_to(ws)): p.read_text(errors="replace") for p in ws.rglob("*")
            if p.is_file() and ".git" not in p.parts}
    kept["git history"] = subprocess.run(["git", "-C", str(ws), "log", "--all", "-p", "--format=%B"],
                                         capture_output=True, text=True, check=True).stdout
    assert {"calls.jsonl", "state.json", "LOG.md", "ANSWER.md"} <= set(kept)
    for where, text in kept.items():
        assert KEY not in text, where
    for where in ("state.json", "git history"):
        assert REDACTED in kept[where] and DIGEST in kept[where], where
    assert REDACTED in kept["ANSWER.md"]
