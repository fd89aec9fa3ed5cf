"""Prompts a provider's cache can serve (issue #26): every role's context goes stable to volatile,
the stable part byte-identical between calls until the lab's foundations change, the problem a
prefix every request of a run shares, Anthropic's cache breakpoints where the stable part ends,
and against a server with a prefix cache (the stand-in playing vLLM) the cached tokens it reports
are what the run records."""

from __future__ import annotations

import json

import httpx2 as httpx
from anthropic import AsyncAnthropic
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from physlab.api import solve_async
from physlab.lab import context as C
from physlab.lab.roles import ROLES, reviewer
from physlab.lab.roles._base import LabEnv, system_prompt
from physlab.lab.state import transitions as T
from physlab.llm.defaults import ModelDefaults, ModelRegistry
from physlab.llm.meter import RunMeter
from physlab.llm.models import RunModels
from physlab.llm.standin import Habits, ScenarioResponder, StandinServer
from physlab.llm.usage import Budget
from physlab.llm.wire import load_response
from physlab.run.environment import RunEnvironment
from physlab.sandbox import default_sandbox
from tests.lab.helpers import calls, lab_role_of, qec_problem, solve
from tests.lab.mini import mini_problem
from tests.lab.test_prompts import rich_state

W = C.Windows()


def role_prompts(s, rq, wh, wh2, cr, cr2, *, iteration_events: list[str]) -> dict[str, C.RolePrompt]:
    p = mini_problem()
    return {
        "surveyor": C.for_surveyor(p),
        "planner": C.for_planner(p, s, [s.critique(cr2)], W),
        "orchestrator": C.for_orchestrator(p, s, W, new_evidence=s.evidence[-1:], new_reviews=[],
                                           events=iteration_events, human=[], gates=[], max_workers=3),
        "researcher": C.for_worker("researcher", p, s, W, target=rq, instructions="do", method_hints="", relevant=[]),
        "computer": C.for_worker("computer", p, s, W, target=wh2, instructions="do", method_hints="", relevant=[]),
        "reviewer": C.for_reviewer(p, s, W, wh2),
        "critic": C.for_critic(p, s, W, max_critiques=4),
        "adjudicator": C.for_adjudicator(p, s, W, s.critique(cr)),
        "formatter": C.for_formatter(p, s, W, forced=False),
    }


def test_the_stable_prefix_is_byte_identical_while_only_volatile_things_change():
    s, rq, wh, wh2, cr, cr2 = rich_state()
    before = role_prompts(s, rq, wh, wh2, cr, cr2, iteration_events=["[x] one"])
    # a turn later: a new iteration, a question, evidence, a hypothesis, notes, a dispatch, events
    s2 = T.begin_iteration(s)
    s2, rq2 = T.create_rq(s2, "A second question")
    s2, _ = T.record_dispatch(s2, "computer", rq2, "compute it")
    s2, ev = T.add_evidence(s2, target=rq2, role="computer", findings="43", code="print(43)", output="43")
    s2, _ = T.propose_wh(s2, claim="something else", value="43", evidence=[ev])
    s2, _ = T.add_note(s2, "a note")
    s2 = T.system_event(s2, "refused", "a refused action")
    after = role_prompts(s2, rq, wh, wh2, cr, cr2, iteration_events=["[x] one", "[y] two"])
    for role in ROLES:
        a, b = before[role], after[role]
        assert a.head == b.head, role
        assert a.stable == b.stable, f"{role}: the stable part changed with only volatile changes"
        assert system_prompt(role, a.head) == system_prompt(role, b.head), role
    assert before["orchestrator"].volatile != after["orchestrator"].volatile
    # a new established result is a change of the foundations: the roles that see it get a new stable part
    s3, rq3 = T.create_rq(s2, "third")
    s3, ev3 = T.add_evidence(s3, target=rq3, role="computer", findings="44")
    s3, wh3 = T.propose_wh(s3, claim="a third result", value="44", evidence=[ev3])
    s3, _ = T.record_review(s3, wh3, "VERIFIED")
    grown = role_prompts(s3, rq, wh, wh2, cr, cr2, iteration_events=[])
    assert grown["orchestrator"].stable != after["orchestrator"].stable
    assert grown["orchestrator"].stable.startswith(after["orchestrator"].stable.removesuffix("\n</established-results>"))
    assert grown["reviewer"].stable != after["reviewer"].stable          # the reviewer is shown the ERs too
    assert grown["surveyor"].stable == after["surveyor"].stable


def test_every_role_opens_with_the_same_problem_and_the_standards_come_before_the_role():
    s, rq, wh, wh2, cr, cr2 = rich_state()
    prompts = role_prompts(s, rq, wh, wh2, cr, cr2, iteration_events=[])
    systems = {role: system_prompt(role, prompts[role].head) for role in ROLES}
    head = prompts["surveyor"].head
    assert "Compute 6 times 7" in head and "<answer-template>" in head
    for role, text in systems.items():
        assert text.startswith(head + "\n\n"), role
    with_standards = [systems[r] for r in ("surveyor", "planner", "researcher", "computer", "reviewer", "critic",
                                           "adjudicator")]
    shared = len(with_standards[0].split("You are the")[0])
    assert shared > len(head) + 2000 and all(t[:shared] == with_standards[0][:shared] for t in with_standards)


async def test_the_demo_sends_each_role_the_same_instructions_and_a_cache_point_after_the_stable_part(tmp_path):
    out = await solve(tmp_path / "qec")
    assert out.verdict.verdict == "correct"
    firsts: dict[str, list] = {}
    for rec in calls(tmp_path / "qec"):
        msgs = rec["request"]["messages"]
        if len(msgs) == 1:
            firsts.setdefault(rec["role"], []).append(msgs[0])
    assert len(firsts["orchestrator"]) >= 4
    heads = set()
    for role, reqs in firsts.items():
        assert len({r["instructions"] for r in reqs}) == 1, f"{role}: instructions differ between calls"
        heads.add(reqs[0]["instructions"].split("## How this lab does physics")[0].split("You are the")[0])
        for r in reqs:
            content = r["parts"][0]["content"]
            if role == "surveyor":
                assert isinstance(content, str) or not any(isinstance(c, dict) for c in content)
                continue
            kinds = [c["kind"] if isinstance(c, dict) else "text" for c in content]
            assert kinds == ["text", "cache-point", "text"], role
            stable_sections = C.LAYOUT[role][0]
            assert content[0].rstrip().endswith(f"</{stable_sections[-1]}>"), role
    assert len(heads) == 1                                           # one problem prefix for the whole run


def anthropic_model(seen: list[dict]) -> AnthropicModel:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        n = len(seen)
        usage = {"input_tokens": 50, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        events = [
            ("message_start", {"type": "message_start", "message": {
                "id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"], "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": f"toolu_{n}", "name": "submit_review", "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps({"verdict": "VERIFIED", "reasoning": "ok"})}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                               "usage": {"output_tokens": 10}}),
            ("message_stop", {"type": "message_stop"})]
        sse = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events)
        return httpx.Response(200, content=sse.encode(), headers={"content-type": "text/event-stream"})

    client = AsyncAnthropic(api_key="test-key", base_url="http://anthropic.invalid",
                            http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)), max_retries=0)
    return AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider(anthropic_client=client))


def cached(block) -> bool:
    return isinstance(block, dict) and "cache_control" in block


async def test_anthropic_requests_carry_cache_breakpoints_on_tools_instructions_and_the_stable_part(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")                  # the SDK's own client, served offline
    seen: list[dict] = []
    s, rq, wh, wh2, cr, cr2 = rich_state()
    meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
    models = RunModels("anthropic:claude-sonnet-4-6", meter=meter, provider=anthropic_model(seen))
    ctx = RunEnvironment(problem=mini_problem().public(), workspace=tmp_path, models=models, usage=meter,
                     budget=Budget(), sandbox=default_sandbox(), grader=None, equivalence=None)
    env = LabEnv(ctx)
    first = C.for_reviewer(mini_problem(), s, W, wh2)
    s2, ev = T.add_evidence(s, target=rq, role="computer", findings="43")
    s2, wh3 = T.propose_wh(s2, claim="another claim", value="43", evidence=[ev])
    second = C.for_reviewer(mini_problem(), s2, W, wh3)
    for prompt in (first, second):
        assert (await reviewer.run(env, prompt)).verdict == "VERIFIED"
    meter.close()
    assert len(seen) == 2
    for body in seen:
        assert cached(body["tools"][-1])                                  # the tool definitions
        assert isinstance(body["system"], list) and cached(body["system"][-1])
        assert body["system"][-1]["text"].startswith("<problem-statement>")
        user = body["messages"][0]["content"]
        assert [b["type"] for b in user] == ["text", "text"]
        assert cached(user[0]) and not cached(user[1])                   # the cache point: after the stable part
        assert user[0]["text"] == first.stable
    assert seen[0]["system"] == seen[1]["system"] and seen[0]["tools"] == seen[1]["tools"]
    assert seen[0]["messages"][0]["content"][0] == seen[1]["messages"][0]["content"][0]
    assert seen[0]["messages"][0]["content"][1] != seen[1]["messages"][0]["content"][1]
    # what went out is what calls.jsonl says went out: the cache point is part of the recorded request
    recs = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    content = recs[0]["request"]["messages"][0]["parts"][0]["content"]
    assert content[1] == {"kind": "cache-point", "ttl": "5m"}
    assert load_response(recs[0]["response"]).parts


async def test_a_registry_that_turns_prompt_caching_off_wins_over_the_labs_cache_points(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    seen: list[dict] = []
    s, rq, wh, wh2, cr, cr2 = rich_state()
    meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
    registry = ModelRegistry(models={"anthropic:*": ModelDefaults(prompt_cache=False)})
    models = RunModels("anthropic:claude-sonnet-4-6", meter=meter, provider=anthropic_model(seen), registry=registry)
    ctx = RunEnvironment(problem=mini_problem().public(), workspace=tmp_path, models=models, usage=meter,
                     budget=Budget(), sandbox=default_sandbox(), grader=None, equivalence=None)
    assert (await reviewer.run(LabEnv(ctx), C.for_reviewer(mini_problem(), s, W, wh2))).verdict == "VERIFIED"
    meter.close()
    assert "cache_control" not in json.dumps(seen[0])


async def test_against_a_server_with_a_prefix_cache_every_repeat_call_reads_its_instructions_from_it(tmp_path):
    """The QEC demo against the stand-in playing vLLM's prefix cache: what calls.jsonl and metrics
    record is what the server reported, and each role's later calls find at least the role's tools
    and instructions (problem, standards, role text) already cached."""
    ws = tmp_path / "run"
    with StandinServer(ScenarioResponder("lab-qec", lab_role_of()), habits=Habits(prefix_cache=True)) as srv:
        attempt = await solve_async(qec_problem(), "lab", "openai:standin", workspace=ws, api_base=srv.base_url)
    assert attempt.status == "complete" and attempt.verdict.verdict == "correct"
    recs = calls(ws)
    served = sum(u["prompt_tokens_details"]["cached_tokens"] for u in srv.usages)
    assert sum(r["cache_read_tokens"] for r in recs) == served > 0
    per_role = json.loads((ws / "metrics.json").read_text())["per_role"]
    for role, totals in per_role.items():
        assert totals["cache_read_tokens"] == sum(r["cache_read_tokens"] for r in recs if r["role"] == role)
    seen: set[str] = set()
    for r in recs:
        if len(r["request"]["messages"]) != 1 or r["error"]:
            continue                                     # only each call's first request
        if r["role"] in seen:
            instructions = r["request"]["messages"][0]["instructions"]
            assert r["cache_read_tokens"] >= len(instructions) // 4 - 16, r["role"]
        seen.add(r["role"])
    assert served / sum(r["input_tokens"] for r in recs) > 0.55
