"""Client-side overhead per model call (target < 5 ms/call).

Runs N sequential requests through the real `openai:` path (pydantic-ai OpenAIChatModel + openai
SDK + its HTTP client) against the zero-latency stand-in server on 127.0.0.1, twice: bare, and through the
model seam (physlab.llm.seam: its layers - output mode, limits, retries, budget reservation, reply cap,
in-flight slots, the calls.jsonl line with the full request/response, HTTP capture). Prints:
- client overhead per call = client wall per call - server handling time per call
  (everything PhysLab + pydantic-ai + the SDK + HTTP add on the client side),
- the seam's own overhead = wrapped - bare (what the model seam adds), in wall time and in CPU,
- the same CPU figure around an in-process model (pydantic-ai FunctionModel: no HTTP, no server),
  the steadiest measure of the seam alone on a busy machine.

    python benchmarks/llm_overhead.py [--calls 300] [--history 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import FunctionModel

from physlab.llm.meter import RunMeter
from physlab.llm.models import RunModels, build_provider_model
from physlab.llm.seam import seam_model
from physlab.llm.standin import ScriptedResponder, StandinServer
from physlab.llm.usage import Budget


def conversation(turns: int) -> list:
    msgs: list = []
    for i in range(turns):
        msgs.append(ModelRequest(parts=[UserPromptPart(f"question {i}: " + "physics " * 150)]))
        msgs.append(ModelResponse(parts=[TextPart("answer " * 150)]))
    msgs.append(ModelRequest(parts=[UserPromptPart("final question")]))
    return msgs


CPU: list[float] = []  # process CPU seconds per call (client + in-process server), contention-proof


async def time_calls(model, messages, n: int) -> list[float]:
    params = ModelRequestParameters()
    out = []
    CPU.clear()
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        await model.request(messages, {"max_retries": 0}, params)
        out.append(time.perf_counter() - t)
        CPU.append(time.process_time() - c)
    return out


async def in_process_cpu(messages: list, calls: int, tmp: str) -> tuple[float, float]:
    """Median CPU ms per call around a FunctionModel: bare, and through the seam."""
    reply = ModelResponse(parts=[TextPart("the answer is " + "x " * 100)])
    bare = FunctionModel(lambda m, info: reply)
    meter = RunMeter(Budget(max_calls=10 * calls), Path(tmp) / "inproc.jsonl")
    wrapped = seam_model(FunctionModel(lambda m, info: reply), role="solver", spec="function:bench", meter=meter)
    out = []
    for model in (bare, wrapped):
        await time_calls(model, messages, 20)
        await time_calls(model, messages, calls)
        out.append(statistics.median(CPU) * 1e3)
    meter.close()
    return out[0], out[1]


async def main(calls: int, history: int) -> None:
    messages = conversation(history)
    reply = "the answer is " + "x " * 100
    with StandinServer(ScriptedResponder([reply], repeat_last=True), latency_s=0.0) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        async with build_provider_model("openai:standin", api_base=srv.base_url) as bare:
            await time_calls(bare, messages, 20)  # warm up (imports, connection pool)
            before = (srv.stats.answered, srv.stats.handling_s)
            bare_t = await time_calls(bare, messages, calls)
            bare_cpu = statistics.median(CPU)
            bare_server = (srv.stats.handling_s - before[1]) / (srv.stats.answered - before[0])

        meter = RunMeter(Budget(max_calls=10 * calls), Path(tmp) / "calls.jsonl")
        async with RunModels("openai:standin", meter=meter, api_base=srv.base_url) as models:
            wrapped = models.for_role("solver")
            await time_calls(wrapped, messages, 20)
            before = (srv.stats.answered, srv.stats.handling_s)
            wrapped_t = await time_calls(wrapped, messages, calls)
            wrapped_cpu = statistics.median(CPU)
            wrapped_server = (srv.stats.handling_s - before[1]) / (srv.stats.answered - before[0])
        meter.close()
        jsonl_kb = (Path(tmp) / "calls.jsonl").stat().st_size / 1024 / (calls + 20)
        inproc_bare, inproc_seam = await in_process_cpu(messages, calls, tmp)

    med_bare, med_wrapped = statistics.median(bare_t), statistics.median(wrapped_t)
    print(f"calls: {calls} sequential, {2 * history + 1} messages per request, zero-latency stand-in")
    print(f"bare openai path     : median {med_bare * 1e3:.2f} ms/call "
          f"(server handling {bare_server * 1e3:.2f} ms)")
    print(f"through the model seam: median {med_wrapped * 1e3:.2f} ms/call "
          f"(server handling {wrapped_server * 1e3:.2f} ms, {jsonl_kb:.1f} KiB of calls.jsonl per call)")
    print(f"client overhead per call (PhysLab+pydantic-ai+SDK+HTTP): {(med_wrapped - wrapped_server) * 1e3:.2f} ms")
    print(f"model-seam overhead per call (seam vs bare): {(med_wrapped - med_bare) * 1e3:.2f} ms "
          f"(target < 5 ms)")
    print(f"CPU per call (client + in-process server; robust to a busy machine): bare {bare_cpu * 1e3:.2f} ms, "
          f"wrapped {wrapped_cpu * 1e3:.2f} ms -> model-seam CPU overhead {(wrapped_cpu - bare_cpu) * 1e3:.2f} ms")
    print(f"CPU per call around an in-process model (no HTTP): bare {inproc_bare:.2f} ms, through the seam "
          f"{inproc_seam:.2f} ms -> the seam alone {inproc_seam - inproc_bare:.2f} ms "
          f"({inproc_seam / inproc_bare:.1f}x)")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall figures inflate under load)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--history", type=int, default=6, help="earlier turns in each request")
    args = ap.parse_args()
    asyncio.run(main(args.calls, args.history))
