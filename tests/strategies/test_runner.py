"""The runner (`physlab.run.runner.run`) and `physlab solve`: workspace contract, exit codes, budgets, the stand-in path
(token totals equal the server's count, faults, in-flight cap), replay bit for bit."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from pydantic_ai import Agent
from pydantic_ai.concurrency import ConcurrencyLimiter

from physlab.api import solve_async
from physlab.cli import main
from physlab.errors import UserError
from physlab.llm.recording import RetryPolicy
from physlab.llm.scripted import register_scenario
from physlab.llm.standin import ScriptedResponder, StandinServer
from physlab.llm.usage import Budget
from physlab.problems.model import Problem
from physlab.run.options import RunOptions
from physlab.run.runner import Shared, run
from physlab.strategies import registry
from physlab.strategies.base import Attempt, Strategy
from physlab.strategies.params import StrategyParams

TEMPLATE = "def answer(x):\n    y = ...\n    return y\n"
CODE_REPLY = "Work.\n\n```python\ndef answer(x):\n    y = 2 * x\n    return y\n```\n"


def problem(**kw) -> Problem:
    """Ungraded by default (grading runs the sandbox: seconds per run); keyed=True adds the key."""
    keyed = kw.pop("keyed", False)
    base = dict(id="double", statement="Return twice $x$.", answer_template=TEMPLATE)
    if keyed:
        base.update(reference="2*x", reference_format="python", solution="SECRET_SOLUTION_TEXT")
    base.update(kw)
    return Problem(**base)


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code


class TwoCalls(Strategy):
    """Test strategy: two sequential solver calls (budget tests)."""
    name = "test-two-calls"

    async def run(self, ctx):
        agent = Agent(ctx.models.for_role("solver"))
        first = (await agent.run("one")).output
        second = (await agent.run("two")).output
        return Attempt(strategy=self.name, model=ctx.models.name, problem_id=ctx.problem.id,
                       status="complete", answer_text=first + second)


class Parallel(Strategy):
    """Test strategy: eight concurrent requests (in-flight cap tests)."""
    name = "test-parallel"

    async def run(self, ctx):
        agents = [Agent(ctx.models.for_role(f"worker{i % 2}")) for i in range(8)]
        outs = await asyncio.gather(*(a.run(f"q{i}") for i, a in enumerate(agents)))
        return Attempt(strategy=self.name, model=ctx.models.name, problem_id=ctx.problem.id,
                       status="complete", answer_text="\n".join(o.output for o in outs))


class Buggy(Strategy):
    name = "test-buggy"

    async def run(self, ctx):
        raise ZeroDivisionError("strategy bug")


class SeesParams(StrategyParams):
    k: int = 0


class SeesContext(Strategy[SeesParams]):
    name = "test-sees"
    Params = SeesParams
    seen: dict = {}

    async def run(self, ctx):
        SeesContext.seen = {"problem": ctx.problem, "workspace": ctx.workspace, "params": self.params,
                            "reference": ctx.reference_solution}
        return Attempt(strategy=self.name, model="", problem_id="", status="complete", answer_text="x")


registry.register_strategy("test-two-calls", TwoCalls)
registry.register_strategy("test-parallel", Parallel)
registry.register_strategy("test-buggy", Buggy)
registry.register_strategy("test-sees", SeesContext)
register_scenario("test-code", lambda: (lambda role, m, i: CODE_REPLY))
register_scenario("test-nocode", lambda: (lambda role, m, i: "I could not solve it."))


async def test_workspace_contract_and_public_context(tmp_path):
    ws = tmp_path / "run"
    att = await solve_async(problem(keyed=True), "test-sees", "scripted:echo", workspace=ws, params={"k": 1})
    seen = SeesContext.seen
    assert seen["problem"].reference is None and seen["problem"].solution is None
    assert seen["workspace"] == ws and seen["params"] == SeesParams(k=1) and seen["reference"] is None
    pm = (ws / "PROBLEM.md").read_text()
    assert "Return twice" in pm and "def answer(x)" in pm
    assert "2*x" not in pm and "SECRET" not in pm
    for f in ws.iterdir():  # the answer key is nowhere in the workspace
        assert "SECRET_SOLUTION_TEXT" not in f.read_text()
    m = json.loads((ws / "metrics.json").read_text())
    for key in ("totals", "per_role", "status", "stop_reason", "strategy", "model", "problem_id", "wall_s",
                "verdict"):
        assert key in m
    assert m["strategy"] == "test-sees" and m["problem_id"] == "double" and att.has_answer
    assert m["verdict"]["verdict"] == "invalid"  # "x" is no answer to a templated problem: really graded


async def test_oneshot_run_writes_answer_files(tmp_path):
    ws = tmp_path / "run"
    att = await solve_async(problem(), "oneshot", "scripted:test-code", workspace=ws)
    assert att.status == "complete"
    assert (ws / "answer.py").read_text() == "def answer(x):\n    y = 2 * x\n    return y\n"
    assert (ws / "ANSWER.md").read_text().startswith("Work.")
    m = json.loads((ws / "metrics.json").read_text())
    assert m["totals"]["calls"] == 1 and m["per_role"]["solver"]["calls"] == 1
    recs = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines()]
    assert len(recs) == 1 and recs[0]["role"] == "solver"


def test_cli_exit_codes(tmp_path, capsys):
    yml = tmp_path / "p.yaml"
    yml.write_text("id: double\nproblem: Return twice x.\nanswer_template: |\n  def answer(x):\n"
                   "      y = ...\n      return y\n")
    assert cli("solve", str(yml), "-s", "oneshot", "-m", "scripted:test-code", "--workspace",
               str(tmp_path / "a"), "--quiet") == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "a")
    assert cli("solve", str(yml), "-s", "oneshot", "-m", "scripted:test-nocode", "--workspace",
               str(tmp_path / "b"), "--json") == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "no_answer" and out["stop_reason"] == "no_code_in_reply"
    for bad in (["-s", "nosuch"], ["-s", "oneshot", "--param", "novalue"], ["-s", "oneshot", "-p", "zzz=1"],
                ["-s", "oneshot", "--workspace", str(tmp_path / "a")], ["-s", "oneshot", "-m", "gpt4"],
                ["-s", "oneshot", "-m", "openai:served", "--api-base", "localhost:8000/v1"]):
        args = ["solve", str(yml), "-m", "scripted:test-code", "--workspace", str(tmp_path / "c")] + bad
        assert cli(*args) == 2, bad
        assert not (tmp_path / "c").exists()  # no half-made workspace left behind
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1].startswith("error: ") and "Traceback" not in err
    assert cli("solve", str(tmp_path / "missing.yaml"), "-s", "oneshot", "-m", "scripted:echo") == 2
    (tmp_path / "afile").write_text("x")  # --workspace naming a file: one clear line, the file untouched
    assert cli("solve", str(yml), "-s", "oneshot", "-m", "scripted:test-code", "--workspace",
               str(tmp_path / "afile")) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and "Traceback" not in err and (tmp_path / "afile").read_text() == "x"


def test_budget_ends_the_run_cleanly(tmp_path, capsys):
    yml = tmp_path / "q.md"
    yml.write_text("# An open question\n\nWhy is the sky blue?\n")
    code = cli("solve", str(yml), "-s", "test-two-calls", "-m", "scripted:echo", "--max-calls", "1",
               "--workspace", str(tmp_path / "w"), "--json")
    assert code == 1
    m = json.loads(capsys.readouterr().out)
    assert m["status"] == "no_answer" and m["stop_reason"] == "budget:max_calls"
    assert m["totals"]["calls"] == 1 and m["budget"] == {"max_calls": 1}
    assert not (tmp_path / "w" / "ANSWER.md").exists()


async def test_strategy_bug_is_an_error_status_not_a_traceback(tmp_path):
    att = await solve_async(problem(), "test-buggy", "scripted:echo", workspace=tmp_path / "w")
    assert att.status == "error" and att.stop_reason == "exception:ZeroDivisionError"
    assert "ZeroDivisionError" in (tmp_path / "w" / "error.log").read_text()
    assert json.loads((tmp_path / "w" / "metrics.json").read_text())["status"] == "error"


async def test_open_question_is_answered_in_answer_md_only(tmp_path):
    q = Problem(id="q", statement="Why is the sky blue?")
    att = await solve_async(q, "oneshot", "scripted:test-nocode", workspace=tmp_path / "w")
    assert att.status == "complete" and att.verdict is None
    assert (tmp_path / "w" / "ANSWER.md").read_text() == "I could not solve it.\n"
    assert not (tmp_path / "w" / "answer.py").exists()


async def test_standin_token_totals_match_metrics(tmp_path):
    with StandinServer(ScriptedResponder([CODE_REPLY])) as srv:
        srv.inject("rate_limit", retry_after=0.05)
        srv.inject("drop")
        att = await run(problem(), registry.build("oneshot"),
                        RunOptions(strategy="oneshot", model="openai:standin", api_base=srv.base_url),
                        Shared(retry=RetryPolicy(backoff_s=0.01)), workspace=tmp_path / "w")
    m = json.loads((tmp_path / "w" / "metrics.json").read_text())
    assert att.status == "complete" and m["failed_requests"] == 2
    assert m["totals"]["input_tokens"] == srv.stats.prompt_tokens > 0
    assert m["totals"]["output_tokens"] == srv.stats.completion_tokens > 0
    assert m["totals"]["calls"] == srv.stats.requests == 3  # every request that went out is a call
    # the prompt the server received is the public problem, never the key
    sent = json.dumps(srv.requests)
    assert "Return twice" in sent and "SECRET" not in sent


async def test_standin_persistent_failure_ends_with_error_status(tmp_path):
    with StandinServer(ScriptedResponder([CODE_REPLY])) as srv:
        srv.inject("server_error", times=20)
        att = await run(problem(keyed=True), registry.build("oneshot"),
                        RunOptions(strategy="oneshot", model="openai:standin", api_base=srv.base_url),
                        Shared(retry=RetryPolicy(max_attempts=3, backoff_s=0.01)), workspace=tmp_path / "w")
    assert att.verdict.verdict == "invalid" and srv.stats.requests == 3
    m = json.loads((tmp_path / "w" / "metrics.json").read_text())
    assert m["status"] == "error" and m["stop_reason"] == "model_failure" and m["failed_requests"] >= 2
    assert "after" in m["details"]["error"] and m["totals"]["calls"] == 3  # the three requests that went out


async def test_in_flight_cap_holds_through_the_runner(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=0.05) as srv:
        shared = ConcurrencyLimiter(8)
        att = await run(problem(), registry.build("test-parallel"),
                        RunOptions(strategy="test-parallel", model="openai:standin", api_base=srv.base_url,
                                   max_in_flight=3), Shared(limiter=shared), workspace=tmp_path / "w")
    m = json.loads((tmp_path / "w" / "metrics.json").read_text())
    assert att.usage.calls == 8 and srv.stats.max_in_flight <= 3
    assert m["max_in_flight_seen"] <= 3 and srv.stats.max_in_flight >= 2


async def test_wall_budget(tmp_path):
    with StandinServer(ScriptedResponder(["ok"], repeat_last=True), latency_s=0.2) as srv:
        t = time.monotonic()
        att = await solve_async(problem(), "test-two-calls", "openai:standin", api_base=srv.base_url,
                               workspace=tmp_path / "w", budget=Budget(max_wall_s=0.1))
    assert att.stop_reason == "budget:max_wall" and time.monotonic() - t < 5


def test_replay_of_a_recorded_run_is_bit_for_bit(tmp_path, capsys):
    yml = tmp_path / "p.yaml"
    yml.write_text("id: double\nproblem: Return twice x.\nanswer_template: |\n  def answer(x):\n"
                   "      y = ...\n      return y\n")
    with StandinServer(ScriptedResponder([CODE_REPLY])) as srv:
        assert cli("solve", str(yml), "-s", "oneshot", "-m", "openai:standin", "--api-base", srv.base_url,
                   "--workspace", str(tmp_path / "orig"), "-q") == 0
    # offline now: the server is gone
    assert cli("solve", str(yml), "-s", "oneshot", "-m", f"replay:{tmp_path / 'orig' / 'calls.jsonl'}",
               "--workspace", str(tmp_path / "again"), "-q") == 0
    for name in ("answer.py", "ANSWER.md", "PROBLEM.md"):
        assert (tmp_path / "orig" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    a = [json.loads(x) for x in (tmp_path / "orig" / "calls.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "again" / "calls.jsonl").read_text().splitlines()]
    keep = ("role", "model", "input_tokens", "output_tokens", "cost_usd", "finish_reason", "response")
    assert [{k: r[k] for k in keep} for r in a] == [{k: r[k] for k in keep} for r in b]
    ma, mb = (json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("orig", "again"))
    assert {k: v for k, v in ma["totals"].items() if k != "latency_s"} == \
           {k: v for k, v in mb["totals"].items() if k != "latency_s"}


def test_registry_lists_every_contract_strategy():
    for name in ("lab", "oneshot", "two-step", "rsa", "manager", "tpbench-vote", "tpbench-bon", "tpbench-weak",
                 "tpbench-sympy", "multi-round", "minions", "scalar"):
        assert name in registry.names()
        assert issubclass(registry.get(name), Strategy) and registry.get(name).name == name


class GroupedBudget(Strategy):
    name = "test-grouped"

    async def run(self, ctx):
        async def one(i):
            return (await Agent(ctx.models.for_role("w")).run(f"q{i}")).output

        async with asyncio.TaskGroup() as tg:  # failures arrive wrapped in an ExceptionGroup
            for i in range(4):
                tg.create_task(one(i))


registry.register_strategy("test-grouped", GroupedBudget)


async def test_budget_inside_an_exception_group_is_still_a_budget_stop(tmp_path):
    att = await solve_async(problem(), "test-grouped", "scripted:echo", workspace=tmp_path / "w",
                           budget=Budget(max_calls=2))
    assert att.status == "no_answer" and att.stop_reason == "budget:max_calls"
    assert not (tmp_path / "w" / "error.log").exists()


async def test_replace_restarts_an_unfinished_workspace_and_plain_runs_refuse_it(tmp_path):
    ws = tmp_path / "run"
    ws.mkdir()
    (ws / "calls.jsonl").write_text('{"half a record\n')
    (ws / "scratch.txt").write_text("left by a killed try")
    with pytest.raises(UserError, match="not empty"):
        await solve_async(problem(), "oneshot", "scripted:test-code", workspace=ws)
    att = await solve_async(problem(), "oneshot", "scripted:test-code", workspace=ws, replace=True)
    assert att.status == "complete" and not (ws / "scratch.txt").exists()
    assert len((ws / "calls.jsonl").read_text().splitlines()) == 1
