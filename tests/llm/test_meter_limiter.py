"""Budgets (enforced before a request is sent), grace, and the in-flight caps."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic_ai import Agent
from pydantic_ai.concurrency import ConcurrencyLimiter
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from physlab.llm.errors import BudgetExceeded
from physlab.llm.meter import RunMeter, read_calls
from physlab.llm.seam import seam_model
from physlab.llm.usage import Budget, CallRecord


def _model(meter, sent, role="solver"):
    def fn(messages, info: AgentInfo):
        sent.append(role)
        return ModelResponse(parts=[TextPart("ok")])

    return seam_model(FunctionModel(fn), role=role, spec="test:fn", meter=meter)


async def test_max_calls_raises_before_the_request_is_sent(tmp_path):
    meter = RunMeter(Budget(max_calls=2), tmp_path / "calls.jsonl")
    sent: list[str] = []
    agent = Agent(_model(meter, sent))
    await agent.run("a")
    await agent.run("b")
    with pytest.raises(BudgetExceeded) as exc:
        await agent.run("c")
    assert exc.value.limit == "max_calls"
    assert len(sent) == 2  # the third request never reached the model
    assert meter.total().calls == 2
    assert len(read_calls(tmp_path / "calls.jsonl")) == 2


async def test_token_budget_and_per_role_totals(tmp_path):
    meter = RunMeter(Budget(max_tokens=1500), tmp_path / "calls.jsonl")
    sent: list[str] = []
    a, b = Agent(_model(meter, sent, "planner")), Agent(_model(meter, sent, "critic"))
    with pytest.raises(BudgetExceeded) as exc:
        for _ in range(100):
            await a.run("hello")
            await b.run("hello")
    assert exc.value.limit == "max_tokens"
    recs = read_calls(tmp_path / "calls.jsonl")
    by_role = meter.by_role()
    for role in ("planner", "critic"):
        mine = [r for r in recs if r.role == role]
        assert by_role[role].calls == len(mine)
        assert by_role[role].input_tokens == sum(r.input_tokens for r in mine)
    assert meter.total().total_tokens == sum(r.input_tokens + r.output_tokens for r in recs)
    # refused before sending once less than a useful reply was left: the cap holds
    assert len(recs) >= 2 and meter.total().total_tokens <= 1500


async def test_a_last_step_spends_only_the_calls_kept_for_it(tmp_path):
    """No request goes past a cap (issue #34): a scaffold keeps room for its last step within the
    budget (set_aside) and spends it inside finishing(); the old grace() grants nothing more."""
    meter = RunMeter(Budget(max_calls=3), None)
    sent: list[str] = []
    agent = Agent(_model(meter, sent))
    meter.set_aside(calls=1)
    await agent.run("a")
    await agent.run("b")
    with pytest.raises(BudgetExceeded):       # the third call is kept for the last step
        await agent.run("c")
    with meter.finishing():
        await agent.run("formatter")
        with pytest.raises(BudgetExceeded):   # and nothing past the cap, not even there
            await agent.run("one too many")
    with meter.grace(calls=3), pytest.raises(BudgetExceeded):
        await agent.run("after")
    assert len(sent) == 3 and meter.graced_calls == 0


async def test_wall_budget():
    meter = RunMeter(Budget(max_wall_s=0.05), None)
    meter.check()
    await asyncio.sleep(0.08)
    with pytest.raises(BudgetExceeded) as exc:
        meter.check()
    assert exc.value.limit == "max_wall"


async def test_cost_budget_and_resume_counts_previous_calls(tmp_path):
    prev = [CallRecord(role="solver", model="m", input_tokens=10, output_tokens=5, cost_usd=0.6,
                       response={"parts": []})]
    meter = RunMeter(Budget(max_cost_usd=0.5), tmp_path / "calls.jsonl", previous=prev)
    assert meter.total().calls == 1 and meter.total().cost_usd == pytest.approx(0.6)
    with pytest.raises(BudgetExceeded) as exc:   # the next request is not let through
        await meter.reserve(input_tokens=1, want_output=None, min_reply=1)
    assert exc.value.limit == "max_cost"


def test_failed_requests_are_recorded_and_counted_as_calls(tmp_path):
    """Issue #47: "calls 0, tokens 0" although four requests went out; every request sent is a call."""
    meter = RunMeter(Budget(), tmp_path / "calls.jsonl")
    meter.record(CallRecord(role="r", model="m", error="ModelServerError: 500"))
    meter.record(CallRecord(role="r", model="m", input_tokens=3, output_tokens=4, response={"parts": []},
                            retries=1))
    s = meter.summary()
    assert s["totals"]["calls"] == 2 and s["failed_requests"] == 1 and s["retried_requests"] == 1
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [0, 1]


def _held_model(meter, limiters, active, key, gate=None):
    """A model whose requests count themselves in ``active`` while they are out."""

    async def fn(messages, info: AgentInfo):
        active["all"] += 1
        active[key] += 1
        active["max_all"] = max(active["max_all"], active["all"])
        active[f"max_{key}"] = max(active[f"max_{key}"], active[key])
        try:
            if gate is not None:
                await gate.wait()
            else:
                await asyncio.sleep(0.01)
        finally:
            active["all"] -= 1
            active[key] -= 1
        return ModelResponse(parts=[TextPart("ok")])

    return seam_model(FunctionModel(fn), role="solver", spec="test:fn", meter=meter, limiters=limiters)


async def test_in_flight_caps_per_run_and_shared():
    shared = ConcurrencyLimiter(3)  # one cap for every run (a sweep's), each run also capped at 2
    meters = [RunMeter(), RunMeter()]
    active = {"all": 0, "max_all": 0, 0: 0, 1: 0, "max_0": 0, "max_1": 0}
    models = [_held_model(meters[i], (ConcurrencyLimiter(2), shared), active, i) for i in (0, 1)]
    await asyncio.gather(*(Agent(models[i % 2]).run(f"q{i}") for i in range(20)))
    assert active["max_all"] == 3  # the shared cap holds (and is reached)
    assert active["max_0"] <= 2 and active["max_1"] <= 2
    # what each run reports in metrics.json as max_in_flight_seen
    assert [m.max_in_flight_seen for m in meters] == [active["max_0"], active["max_1"]]
    assert all(m.in_flight == 0 for m in meters) and shared.running_count == 0


async def test_a_request_cancelled_while_waiting_gives_its_slots_back():
    shared = ConcurrencyLimiter(1)
    own = ConcurrencyLimiter(1)
    active = {"all": 0, "max_all": 0, "held": 0, "max_held": 0, "run": 0, "max_run": 0}
    release = asyncio.Event()
    other = _held_model(RunMeter(), (shared,), active, "held", gate=release)
    holder = asyncio.create_task(Agent(other).run("hold"))
    while active["held"] == 0:  # the other run's request is out, holding the shared slot
        await asyncio.sleep(0)
    meter = RunMeter()
    mine = _held_model(meter, (own, shared), active, "run", gate=asyncio.Event())
    waiter = asyncio.create_task(Agent(mine).run("wait"))  # takes its own slot, waits for the shared one
    while own.running_count == 0:
        await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert (own.running_count, shared.running_count, meter.in_flight) == (0, 1, 0)
    release.set()
    await holder
    assert shared.running_count == 0 and active["max_run"] == 0  # it never reached the model


async def test_a_calls_file_cut_short_by_a_kill_still_reads_and_resumes(tmp_path):
    """kill -9 in the middle of a write leaves half a line: reading the file (to resume or replay
    the run, or to copy it into a sweep's database) keeps every complete record and no more."""
    path = tmp_path / "calls.jsonl"
    meter = RunMeter(Budget(max_calls=3), path)
    agent = Agent(_model(meter, []))
    await agent.run("a")
    await agent.run("b")
    meter.close()
    whole = path.read_text()
    path.write_text(whole + whole.splitlines()[0][:40])  # the third record, cut mid-write
    recs = read_calls(path)
    assert [r.seq for r in recs] == [0, 1]
    assert all(r.request is not None and r.response is not None for r in recs)
    slim = read_calls(path, bodies=False)
    assert [(r.role, r.input_tokens, r.output_tokens) for r in slim] == \
        [(r.role, r.input_tokens, r.output_tokens) for r in recs]
    assert all(r.request is None and r.response is None for r in slim)
    # resuming counts the two recorded calls against the budget: one more is allowed, not two
    resumed = RunMeter(Budget(max_calls=3), path, previous=recs)
    sent: list[str] = []
    agent = Agent(_model(resumed, sent))
    await agent.run("c")
    with pytest.raises(BudgetExceeded):
        await agent.run("d")
    assert sent == ["solver"]
    resumed.close()
    assert [r.seq for r in read_calls(path)] == [0, 1, 2]  # the new record is a line of its own
