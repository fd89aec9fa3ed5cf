"""What a lab run costs with providers' prompt caches, how much parallel research saves in wall
time, and how the orchestrator's prompt grows — on the QEC demo and on a long run.

Each scenario is run twice through the real engine and model seam (RecordingModel), the scripted
roles answering after a stand-in latency per call (``--latency``): once as the lab runs (parallel
workers, reviews and audits), once with one call at a time (an in-flight limit of 1 on every
request). Every request is captured as the provider would serialize it and measured:

- reusable prefix: the longest common prefix of a request with any earlier request whose answer had
  arrived before it was sent (a cache only serves what it has finished computing), in the order an
  OpenAI-style chat template renders it (instructions, tool definitions, messages). Tokens are
  counted as characters / 4: no tokenizer of the providers' is installable offline, so this is a
  stated proxy (the share is the same in characters);
- cost with genai-prices' prices for one Anthropic and one OpenAI model, with and without caching.
  Anthropic (tools, system, messages) reads the longest prefix written at a cache breakpoint by an
  earlier request (pydantic-ai places them: tools, instructions, the lab's cache point after the
  stable sections, the conversation for roles with tool loops) and pays the write price for what
  it adds up to its last breakpoint; entries under 1024 tokens are not cached, the 20-block
  lookback is not modelled. OpenAI caches implicitly: a prefix of at least 1024 tokens, in
  128-token steps, at the cached-input price;
- wall time of the run as it is against the run with one call at a time;
- the orchestrator's prompt (its first request of an iteration: instructions, tools, context).

    python benchmarks/lab_cost.py [--latency 0.3] [--rounds 40] [--only qec|long]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genai_prices import Usage as PriceUsage, calc_price
from pydantic_ai.concurrency import ConcurrencyLimiter
from pydantic_ai.messages import (
    CachePoint,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel

from physlab.lab.engine import LabEngine, LabSettings
from physlab.lab.scenarios import _parse as P
from physlab.lab.scenarios.long import PROBLEM as LONG_PROBLEM, LongScenario
from physlab.lab.scenarios.qec import QECScenario
from physlab.llm.meter import RunMeter
from physlab.llm.recording import RecordingModel
from physlab.llm.scripted import scripted_model
from physlab.llm.standin.habits import common_prefix
from physlab.llm.usage import Budget
from physlab.problems import resolve_problem
from physlab.run.environment import RunEnvironment
from physlab.sandbox import default_sandbox

MODELS = [("anthropic", "claude-sonnet-4-6"), ("openai", "gpt-5.1")]
MIN_CACHED_TOKENS = 1024


def tokens(chars: int) -> int:
    return math.ceil(chars / 4)


# ------------------------------------------------------------------ what went out, as blocks
@dataclass
class Block:
    text: str
    breakpoint: bool = False      # Anthropic: a cache_control on this block


@dataclass
class Call:
    role: str
    tools: Block
    system: Block
    messages: list[Block]
    sent: float
    done: float
    output_chars: int
    iteration: int | None

    def blocks(self, provider: str) -> list[Block]:
        head = [self.tools, self.system] if provider == "anthropic" else [self.system, self.tools]
        return head + self.messages

    def chars(self) -> int:
        return sum(len(b.text) for b in self.blocks("openai"))


def message_blocks(messages: list[ModelMessage], cache_messages: bool) -> list[Block]:
    out: list[Block] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, UserPromptPart):
                for item in [p.content] if isinstance(p.content, str) else p.content:
                    if isinstance(item, CachePoint):
                        out[-1].breakpoint = True
                    elif isinstance(item, str):
                        out.append(Block("user:" + item))
            elif isinstance(p, ToolReturnPart):
                out.append(Block(f"tool-return {p.tool_name}:" + p.model_response_str()))
            elif isinstance(p, RetryPromptPart):
                out.append(Block("retry:" + p.model_response()))
            elif isinstance(p, TextPart):
                out.append(Block("assistant:" + p.content))
            elif isinstance(p, ToolCallPart):
                out.append(Block(f"call {p.tool_name}:" + p.args_as_json_str()))
    if cache_messages and out:
        out[-1].breakpoint = True          # pydantic-ai's automatic breakpoint on the conversation
    return out


def output_chars(resp: ModelResponse) -> int:
    return sum(len(p.content) if isinstance(p, TextPart) else len(p.tool_name + p.args_as_json_str())
               for p in resp.parts if isinstance(p, (TextPart, ToolCallPart)))


class Probe(WrapperModel):
    """Answers after the stand-in latency and captures each request as it would be sent."""

    def __init__(self, wrapped: Any, role: str, log: list[Call], latency: float) -> None:
        super().__init__(wrapped)
        self.role, self.log, self.latency = role, log, latency

    async def request(self, messages: list[ModelMessage], model_settings: Any,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        sent = time.monotonic()
        await asyncio.sleep(self.latency)
        resp = await self.wrapped.request(messages, model_settings, model_request_parameters)
        params = model_request_parameters
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
                 for t in [*params.function_tools, *params.output_tools]]
        instructions = next((m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)
                             and m.instructions), "")
        cache = (model_settings or {}).get("cache")
        first = next((m for m in messages if isinstance(m, ModelRequest)), None)
        it = P.iteration(P.prompt(messages)) if first is not None else None
        self.log.append(Call(self.role, Block("tools:" + json.dumps(tools, sort_keys=True), breakpoint=cache is not None),
                             Block("system:" + instructions, breakpoint=cache is not None),
                             message_blocks(messages, isinstance(cache, dict) and cache.get("messages", True)),
                             sent, time.monotonic(), output_chars(resp), it))
        return resp


class Source:
    """The run's models: each role's scripted player behind the probe, inside the real seam."""

    def __init__(self, scenario: Any, name: str, meter: RunMeter, log: list[Call], latency: float,
                 one_at_a_time: bool) -> None:
        self.name = f"scripted:{name}"
        self.scenario, self.meter, self.log, self.latency = scenario, meter, log, latency
        self.limiters = [ConcurrencyLimiter(max_running=1)] if one_at_a_time else []
        self.models: dict[str, RecordingModel] = {}

    def for_role(self, role: str) -> RecordingModel:
        if role not in self.models:
            probe = Probe(scripted_model(self.scenario, role, self.name), role, self.log, self.latency)
            self.models[role] = RecordingModel(probe, role=role, spec=self.name, meter=self.meter,
                                               limiters=self.limiters)
        return self.models[role]


async def run_once(problem: Any, scenario: Any, name: str, settings: LabSettings, latency: float,
                   one_at_a_time: bool) -> tuple[list[Call], float, str]:
    log: list[Call] = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "run"
        meter = RunMeter(Budget(), ws / "calls.jsonl")
        ctx = RunEnvironment(problem=problem.public(), workspace=ws, usage=meter, budget=Budget(),
                         models=Source(scenario, name, meter, log, latency, one_at_a_time),
                         sandbox=default_sandbox(), grader=None, equivalence=None)
        t0 = time.perf_counter()
        out = await LabEngine(ctx, settings).run()
        wall = time.perf_counter() - t0
        meter.close()
    return log, wall, f"{out.status}, {out.state.iteration} iterations, {len(out.state.ers)} ERs"


# ------------------------------------------------------------------ prefix caches
class PrefixIndex:
    """Requests seen so far, as chains of blocks: the longest common prefix of a new request with
    any of them (block by block, then characters within the first block that differs)."""

    def __init__(self) -> None:
        self.after: dict[int, set[str]] = {}

    def add(self, blocks: list[Block]) -> None:
        key = 0
        for b in blocks:
            self.after.setdefault(key, set()).add(b.text)
            key = hash((key, b.text))

    def lcp(self, blocks: list[Block]) -> int:
        key, n = 0, 0
        for b in blocks:
            seen = self.after.get(key)
            if not seen:
                return n
            if b.text not in seen:
                return n + max(common_prefix(b.text, other) for other in seen)
            n += len(b.text)
            key = hash((key, b.text))
        return n


def in_time_order(calls: list[Call]):
    """Each call with the calls whose answers had arrived before it was sent (added as it goes)."""
    done = sorted(calls, key=lambda c: c.done)
    j = 0
    for c in sorted(calls, key=lambda c: c.sent):
        arrived = []
        while j < len(done) and done[j].done <= c.sent:
            arrived.append(done[j])
            j += 1
        yield c, arrived


def reusable_share(calls: list[Call], *, arrived_only: bool = True) -> tuple[int, int]:
    """(reusable, total) input tokens. ``arrived_only``: an earlier request counts once its answer
    has arrived (what a cache can serve); otherwise every request sent before does."""
    index, total, reused = PrefixIndex(), 0, 0
    for c, arrived in in_time_order(calls):
        for a in (arrived if arrived_only else []):
            index.add(a.blocks("openai"))
        blocks = c.blocks("openai")
        total += sum(len(b.text) for b in blocks)
        reused += index.lcp(blocks)
        if not arrived_only:
            index.add(blocks)
    return tokens(reused), tokens(total)


def cached_usage(calls: list[Call], provider: str) -> list[tuple[int, int, int, int]]:
    """(input, cache read, cache write, output) tokens of each request with the provider's cache."""
    out = []
    if provider == "openai":
        index = PrefixIndex()
        for c, arrived in in_time_order(calls):
            for a in arrived:
                index.add(a.blocks(provider))
            hit = tokens(index.lcp(c.blocks(provider)))
            read = 0 if hit < MIN_CACHED_TOKENS else MIN_CACHED_TOKENS + (hit - MIN_CACHED_TOKENS) // 128 * 128
            out.append((tokens(c.chars()), read, 0, tokens(c.output_chars)))
        return out
    written: set[int] = set()

    def points(blocks: list[Block]):
        key, n = 0, 0
        for b in blocks:
            key, n = hash((key, b.text)), n + len(b.text)
            yield key, n, b.breakpoint

    for c, arrived in in_time_order(calls):
        for a in arrived:
            written |= {k for k, n, bp in points(a.blocks(provider)) if bp and tokens(n) >= MIN_CACHED_TOKENS}
        marks = list(points(c.blocks(provider)))
        read = max((tokens(n) for k, n, _ in marks if k in written), default=0)
        last_bp = max((tokens(n) for _, n, bp in marks if bp), default=0)
        write = last_bp - read if last_bp >= MIN_CACHED_TOKENS and last_bp > read else 0
        out.append((tokens(c.chars()), read, write, tokens(c.output_chars)))
    return out


def price(usage: list[tuple[int, int, int, int]], provider: str, model: str, cached: bool) -> float:
    total = 0.0
    for inp, read, write, outp in usage:          # per request: prices can depend on a request's size
        u = PriceUsage(input_tokens=inp, cache_read_tokens=read if cached else 0,
                       cache_write_tokens=write if cached else 0, output_tokens=outp)
        total += float(calc_price(u, model, provider_id=provider).total_price)
    return total


def model_time(calls: list[Call]) -> float:
    """Seconds during which at least one request was out: the run's wall time less what the lab
    spends between requests (engine, git, sandbox), which does not shrink with parallel calls."""
    total, end = 0.0, float("-inf")
    for c in sorted(calls, key=lambda c: c.sent):
        if c.done > end:
            total += c.done - max(c.sent, end)
            end = c.done
    return total


def critical_path(calls: list[Call]) -> int:
    """The longest chain of requests each sent after the one before it was answered: what the wall
    time is made of once the lab's own work is small against a request."""
    ordered = sorted(calls, key=lambda c: c.sent)
    depth: list[int] = []
    for i, c in enumerate(ordered):
        depth.append(1 + max((depth[j] for j in range(i) if ordered[j].done <= c.sent), default=0))
    return max(depth, default=0)


def orchestrator_sizes(calls: list[Call]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for c in sorted(calls, key=lambda c: c.sent):
        if c.role == "orchestrator" and c.iteration and c.iteration not in sizes:
            sizes[c.iteration] = tokens(c.chars())
    return sizes


# ------------------------------------------------------------------ the report
async def scenario_report(title: str, problem: Any, make: Any, name: str, settings: LabSettings,
                          latency: float, marks: list[int]) -> None:
    print(f"\n== {title}")
    calls, wall, outcome = await run_once(problem, make(), name, settings, latency, one_at_a_time=False)
    seq_calls, seq_wall, seq_outcome = await run_once(problem, make(), name, settings, latency, one_at_a_time=True)
    reused, total = reusable_share(calls)
    print(f"run: {outcome}; {len(calls)} requests, {total:,} input tokens (one at a time: {seq_outcome}, "
          f"{len(seq_calls)} requests)")
    loose, _ = reusable_share(calls, arrived_only=False)
    print(f"reusable prefix: {reused / total:.1%} of input tokens ({reused:,} of {total:,}; characters/4); "
          f"{loose / total:.1%} counting every request sent before, answered or not")
    for provider, model in MODELS:
        usage = cached_usage(calls, provider)
        with_cache, without = price(usage, provider, model, True), price(usage, provider, model, False)
        read = sum(u[1] for u in usage)
        write = sum(u[2] for u in usage)
        print(f"cost on {provider}:{model}: ${with_cache:.3f} with its cache, ${without:.3f} without "
              f"({1 - with_cache / without:.0%} cheaper; {read:,} tokens read from cache, {write:,} written)")
    print(f"wall time: {wall:.1f}s as the lab runs, {seq_wall:.1f}s one call at a time "
          f"({wall / seq_wall:.2f}x; {latency}s stand-in latency per request)")
    busy, seq_busy = model_time(calls), model_time(seq_calls)
    print(f"  of which a request was out: {busy:.1f}s against {seq_busy:.1f}s ({busy / seq_busy:.2f}x); the rest "
          f"({wall - busy:.1f}s, {seq_wall - seq_busy:.1f}s) is the lab's own work between requests")
    print(f"  critical path: {critical_path(calls)} of {len(calls)} requests, each sent after the one before it "
          "was answered")
    sizes = orchestrator_sizes(calls)
    shown = [i for i in marks if i in sizes] or sorted(sizes)
    line = ", ".join(f"iteration {i}: {sizes[i]:,}" for i in shown)
    ratio = (f" ({sizes[shown[-1]] / sizes[shown[0]]:.2f}x from {shown[0]} to {shown[-1]})"
             if len(shown) > 1 else "")
    print(f"orchestrator prompt (tokens): {line}{ratio}")


async def main(latency: float, rounds: int, only: str | None) -> None:
    await default_sandbox().run("print(1)")        # started once, before anything is timed
    if only in (None, "qec"):
        await scenario_report("QEC demo (scripted:lab-qec)", resolve_problem("examples/quantum_error_correction_main"),
                              QECScenario, "lab-qec", LabSettings(), latency, [1, 2, 3, 4, 5])
    if only in (None, "long"):
        await scenario_report(f"long run (scripted:lab-long, {rounds} rounds of three questions)", LONG_PROBLEM,
                              lambda: LongScenario(rounds), "lab-long", LabSettings(max_iterations=rounds + 6),
                              latency, [5, 20, 40])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.3, help="Seconds each request takes (stand-in).")
    ap.add_argument("--rounds", type=int, default=40, help="Rounds of the long run.")
    ap.add_argument("--only", choices=["qec", "long"])
    args = ap.parse_args()
    sys.exit(asyncio.run(main(args.latency, args.rounds, args.only)))
