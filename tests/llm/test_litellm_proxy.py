"""The real LiteLLM proxy in front of two stand-in deployments, as users run vLLM replicas behind
it: a master key, usage-based routing, and deployments whose rate limits provoke 429s (the proxy
passes an upstream's wait on as ``llm_provider-retry-after(-ms)``, and answers ``retry-after``
itself while every deployment cools down). The lab completes through it, waits the limits out,
and its tokens and cost equal what the proxy reported; an ``anthropic:`` model reaches the same
proxy's Messages API through ``--api-base``.

The proxy's own per-deployment ``rpm`` works in one-minute windows (its 429 says
``llm_provider-retry-after: 60``; the unit tests play that shape with the stand-in): the upstream
limits here use a two-second window so the test takes seconds, not minutes.

The proxy runs offline: ``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps it from fetching its model cost
map from the internet at start; prices come from the deployments' own ``input_cost_per_token``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from physlab.api import solve_async
from physlab.llm.standin import EchoResponder, Habits, ScenarioResponder, StandinServer
from tests.lab.helpers import calls, lab_role_of, qec_problem
from tests.llm.litellm_env import litellm_executable

pytestmark = pytest.mark.slow

KEY = "sk-physlab-test-master"
USD_IN, USD_OUT = 2e-6, 8e-6


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _deployment(name: str, base: str) -> dict:
    # hosted_vllm: LiteLLM's client for vLLM (chat completions, also behind its /v1/messages)
    return {"model_name": name, "litellm_params": {"model": "hosted_vllm/standin", "api_base": base, "api_key": "none",
                                                   "input_cost_per_token": USD_IN, "output_cost_per_token": USD_OUT}}


class Proxy:
    def __init__(self, tmp: Path, deployments: list[dict]) -> None:
        self.port = _free_port()
        config = {"model_list": deployments,
                  "router_settings": {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
                  "litellm_settings": {"num_retries": 0},
                  "general_settings": {"master_key": KEY}}
        (tmp / "litellm.yaml").write_text(yaml.safe_dump(config))
        self.log = open(tmp / "litellm.log", "w")  # closed in stop()
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1,localhost"}
        self.proc = subprocess.Popen([str(litellm_executable()), "--config", str(tmp / "litellm.yaml"),
                                      "--host", "127.0.0.1", "--port", str(self.port), "--num_workers", "1"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health/liveliness", timeout=2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the LiteLLM proxy did not start: see {tmp / 'litellm.log'}") from None
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the proxy and its own workers: the group we started
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


async def test_the_lab_through_a_real_litellm_proxy(tmp_path, monkeypatch):
    monkeypatch.setenv("LITELLM_TEST_KEY", KEY)
    scenario = ScenarioResponder("lab-qec", lab_role_of())  # one model behind both replicas
    limited = Habits(rpm=3, rpm_window_s=2.0)  # each replica: 3 requests per 2 s, then 429 + Retry-After
    with StandinServer(scenario, habits=limited) as a, StandinServer(scenario, habits=limited) as b, \
            StandinServer(EchoResponder()) as echo:
        proxy = Proxy(tmp_path, [_deployment("qwen3-32b", a.base_url), _deployment("qwen3-32b", b.base_url),
                                 _deployment("echo", echo.base_url)])
        try:
            events: list[tuple[str, dict]] = []
            ws = tmp_path / "run"
            attempt = await solve_async(qec_problem(), "lab", "openai:qwen3-32b", workspace=ws, api_base=proxy.base,
                                       api_key_env="LITELLM_TEST_KEY", events=lambda k, **d: events.append((k, d)))
            # the Messages API of the same proxy, for an anthropic: model
            oneshot = await solve_async(qec_problem(), "oneshot", "anthropic:echo", workspace=tmp_path / "anthropic",
                                       api_base=proxy.base, api_key_env="LITELLM_TEST_KEY")
        finally:
            proxy.stop()

    assert attempt.status == "complete", attempt.details
    assert attempt.verdict.verdict == "correct"
    recs = calls(ws)
    limited_calls = [r for r in recs if r["error"] and "429" in r["error"]]
    assert limited_calls and all("rate_limited: waiting" in r["note"] for r in limited_calls)
    assert a.stats.faults["rpm"] + b.stats.faults["rpm"] >= 1  # the replicas' limits were hit...
    assert [k for k, _ in events].count("rate_limited") == len(limited_calls)  # ...and waited out, visibly
    assert a.stats.answered and b.stats.answered  # the proxy spread the work over both replicas

    m = json.loads((ws / "metrics.json").read_text())
    served_in = a.stats.prompt_tokens + b.stats.prompt_tokens
    served_out = a.stats.completion_tokens + b.stats.completion_tokens
    assert (m["totals"]["input_tokens"], m["totals"]["output_tokens"]) == (served_in, served_out)
    # every request sent is a call, the refused ones too; the proxy states a cost for each answered one,
    # and that cost is what the deployments' prices give for what they served
    assert m["totals"]["calls"] == len(recs)
    assert m["price_sources"] == {"proxy": len([r for r in recs if not r["error"]])}
    assert m["totals"]["cost_usd"] == pytest.approx(served_in * USD_IN + served_out * USD_OUT, rel=1e-6)

    assert oneshot.status in ("complete", "partially_complete", "no_answer") and oneshot.status != "error"
    assert echo.stats.answered == 1 and "/v1/chat/completions" not in (oneshot.details.get("error") or "")
    reply = (tmp_path / "anthropic" / "calls.jsonl").read_text()
    assert "echo:" in reply


async def test_a_streamed_request_through_the_proxy_is_recorded_within_the_budget(tmp_path, monkeypatch):
    """A Python API user streaming a role's reply (pydantic-ai ``run_stream``) through the proxy: the
    text arrives, calls.jsonl holds one line with the tokens the deployment served, and the request
    went out with a ``max_tokens`` within what the budget had left."""
    from pydantic_ai import Agent

    from physlab.llm.meter import RunMeter, read_calls
    from physlab.llm.models import RunModels
    from physlab.llm.standin import ScriptedResponder
    from physlab.llm.usage import Budget

    monkeypatch.setenv("LITELLM_TEST_KEY", KEY)
    reply = "a streamed answer in several words " * 20
    with StandinServer(ScriptedResponder([reply])) as upstream:
        proxy = Proxy(tmp_path, [_deployment("qwen3-32b", upstream.base_url)])
        try:
            meter = RunMeter(Budget(max_tokens=5000), tmp_path / "calls.jsonl")
            async with RunModels("openai:qwen3-32b", meter=meter, api_base=proxy.base,
                                 api_key_env="LITELLM_TEST_KEY") as models:
                async with Agent(models.for_role("solver")).run_stream("go") as run:
                    text = "".join([t async for t in run.stream_text(delta=True)])
            meter.close()
        finally:
            proxy.stop()

    assert text == reply
    recs = read_calls(tmp_path / "calls.jsonl")
    assert len(recs) == 1 and recs[0].error is None and recs[0].finish_reason == "stop"
    assert (recs[0].input_tokens, recs[0].output_tokens) == (upstream.stats.prompt_tokens,
                                                             upstream.stats.completion_tokens)
    sent = upstream.requests[0]
    cap = sent.get("max_completion_tokens") or sent.get("max_tokens")
    assert cap is not None and cap <= 5000 - recs[0].input_tokens and recs[0].max_tokens == cap
