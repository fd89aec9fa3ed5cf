"""Random lab runs with every tool enabled (issue 37): the fuzz model (and chaos on top) calls
execute in any language, searches, reads and cites at random; the literature is the arXiv/INSPIRE
stand-in (with faults) and a corpus the test writes. No run ends with a traceback, the state stays
sound, and no tool reaches an address that is not loopback (a socket-level guard refuses and
records any attempt)."""

from __future__ import annotations

import collections
import json

import pytest

from physlab.lab.state.invariants import check
from physlab.lab.state.models import ResearchState
from physlab.llm.standin import StandinServer
from physlab.llm.standin.chaos import ChaosResponder
from physlab.llm.usage import Budget
from physlab.run.options import RunOptions
from physlab.run.runner import Shared, run
from physlab.strategies import registry
from physlab.tools.choice import ToolChoice
from physlab.tools.literature.standin import LiteratureStandin
from tests.lab.mini import mini_problem
from tests.lab.test_fuzz_runs import FAST_RETRY, PARAMS, fuzz
from tests.tools.literature.conftest import NetworkGuard

NOTES = "# Products\n\nThe product of six and seven is forty-two; multiplication is commutative.\n"


@pytest.fixture
def network_guard(monkeypatch):
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield guard
    assert not guard.attempts, f"a tool tried to reach the network: {guard.attempts}"


async def tooled_run(tmp_path, seed: int, chaos: bool, literature: LiteratureStandin) -> dict:
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    (corpus / "products.md").write_text(NOTES)
    ws = tmp_path / f"{'chaos' if chaos else 'fuzz'}-{seed}"
    responder = fuzz(seed)
    if chaos:
        responder = ChaosResponder(responder, seed=seed, rate=0.15)
    tools = ToolChoice(cas=True, literature=True, literature_url=literature.base_url, corpus=str(corpus), web=True)
    with StandinServer(responder) as srv:
        if chaos:
            responder.attach(srv)
        options = RunOptions(strategy="lab", model="openai:standin", api_base=srv.base_url,
                             budget=Budget(max_calls=120), params=PARAMS, tools=tools)
        attempt = await run(mini_problem(), registry.build("lab", PARAMS), options, Shared(retry=FAST_RETRY),
                            workspace=ws)
    s = ResearchState.model_validate_json((ws / "state.json").read_text())
    calls = [json.loads(line) for line in (ws / "calls.jsonl").read_text().splitlines()]
    asked = collections.Counter(p["tool_name"] for c in calls for p in (c.get("response") or {}).get("parts", [])
                                if p.get("part_kind") == "tool-call")
    return {"ws": ws, "attempt": attempt, "state": s, "tools_called": asked}


@pytest.mark.slow
async def test_random_runs_with_every_tool_end_cleanly_and_stay_on_loopback(tmp_path, network_guard):
    with LiteratureStandin() as literature:
        literature.inject("server_error", times=2)
        literature.inject("not_json", times=1)
        runs = [await tooled_run(tmp_path, seed, chaos, literature) for seed in range(3) for chaos in (False, True)]
        served = len(literature.served)
    called = sum((r["tools_called"] for r in runs), collections.Counter())
    print(f"\ntools the fuzz model called: {dict(called)}; literature stand-in requests: {served}")
    for r in runs:
        assert not (r["ws"] / "error.log").exists(), (r["ws"] / "error.log").read_text()[-3000:]
        assert r["attempt"].status != "error", r["attempt"].stop_reason
        assert check(r["state"]) == []
        recorded = json.loads((r["ws"] / "run.json").read_text())["options"]["tools"]
        assert recorded["corpus"] and recorded["web"] and recorded["literature"]
    # the tools were really offered and used (the fuzz model picks among the tools a request lists)
    assert called["execute"] and called["search_literature"] + called["search_corpus"] + called["read_paper"]
