"""The client stack's floor: how fast can 70 two-request cells go with no PhysLab code at all?

    python benchmarks/client_floor.py [--cells 70] [--latency 0.2] [--repeat 3] [--new-connections]
                                      [--only CLIENT ...]

The same load as benchmarks/sweep_efficiency.py (70 cells at once, each two sequential chat
requests, a ~5,800-character prompt, the stand-in server in its own process with 200 ms latency)
made by five bare clients, in 1 and 2 processes that start together, cells started the way the
sweep starts them (physlab.bench.sweep.yield_until_idle) after the heap is frozen as ``bench run``
freezes it (gc.freeze):
- httpx: the HTTP client under everything (a JSON POST per request);
- openai SDK: ``AsyncOpenAI.chat.completions.create``;
- pydantic-ai: ``pydantic_ai.direct.model_request`` on its OpenAI chat model (no agent loop, no
  recording, no workspace): what every PhysLab model request goes through by default;
- pydantic-ai direct: the same on physlab.llm.direct_openai.DirectOpenAIModel (registry
  ``client: direct``: the same request body without the openai SDK, sent by physlab.llm.http1 to
  this ``http://`` server);
- pydantic-ai direct/aiohttp: the same model sending with aiohttp (what it used for every URL
  before physlab.llm.http1; still its client for ``https://`` servers).
Prints each one's wall time against the latency-only critical path (2 x latency): the best a sweep
built on that layer could reach on this machine; and its CPU per request (process time of every
worker over the timed phase, summed over the processes, divided by the requests made). Each client
makes one untimed pass first, so the timed pass runs on open connections: a sweep opens its own
inside its timed window (opening them before the window was worth ~5 points there).
``--new-connections`` replaces the clients after that pass, so the timed pass opens its
connections as a sweep does: the floor to compare a sweep's figure with.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

PROMPT = "Solve the following problem. " * 200


def _worker(kind: str, base: str, cells: int, start_at: float, out: mp.Queue, new_connections: bool) -> None:
    from physlab.bench.sweep import yield_until_idle

    async def main() -> None:
        models: list = []  # pydantic-ai models, closed after the timed phase
        clients: list = []
        if kind == "httpx":
            import httpx2 as httpx  # what the installed OpenAI SDK is built on

            def make() -> None:
                clients[:] = [httpx.AsyncClient() for _ in range(cells)]

            async def cell(i: int) -> None:
                msgs = [{"role": "system", "content": "You are a physicist."}, {"role": "user", "content": PROMPT}]
                for _ in range(2):
                    r = await clients[i].post(base + "/chat/completions", json={"model": "standin", "messages": msgs})
                    msgs = msgs + [r.json()["choices"][0]["message"], {"role": "user", "content": "Now"}]
        elif kind == "openai SDK":
            from openai import AsyncOpenAI

            def make() -> None:
                clients[:] = [AsyncOpenAI(base_url=base, api_key="x", max_retries=0) for _ in range(cells)]

            async def cell(i: int) -> None:
                msgs = [{"role": "system", "content": "You are a physicist."}, {"role": "user", "content": PROMPT}]
                for _ in range(2):
                    r = await clients[i].chat.completions.create(model="standin", messages=msgs)
                    msgs = msgs + [{"role": "assistant", "content": r.choices[0].message.content},
                                   {"role": "user", "content": "Now"}]
        else:
            from pydantic_ai.direct import model_request
            from pydantic_ai.messages import ModelRequest, UserPromptPart

            from physlab.llm.defaults import ModelDefaults
            from physlab.llm.models import build_provider_model

            from physlab.llm.direct_openai import DirectOpenAIModel

            defaults = ModelDefaults(client="direct" if kind == "pydantic-ai direct" else "sdk")

            def make() -> None:
                if kind == "pydantic-ai direct/aiohttp":
                    models[:] = [DirectOpenAIModel("standin", base_url=base, api_key="x", http1=False)
                                 for _ in range(cells)]
                    return
                models[:] = [build_provider_model("openai:standin", api_base=base, defaults=defaults)
                             for _ in range(cells)]

            async def cell(i: int) -> None:
                msgs = [ModelRequest(parts=[UserPromptPart(PROMPT)], instructions="You are a physicist.")]
                for _ in range(2):
                    r = await model_request(models[i], msgs)
                    msgs = msgs + [r, ModelRequest(parts=[UserPromptPart("Now")])]

        make()
        await asyncio.gather(*[cell(i) for i in range(cells)])  # first use: connections, lazy setup
        if new_connections:  # the same code paths, warmed; the timed pass opens its own connections
            await _close(clients, models)
            make()
        gc.freeze()  # as `bench run` does after its warm-up: no ~0.1 s full collections of the imports mid-run
        while time.time() < start_at:
            await asyncio.sleep(0.001)
        t0, cpu0 = time.time(), time.process_time()
        tasks = []
        for i in range(cells):
            tasks.append(asyncio.create_task(cell(i)))
            await yield_until_idle(0.003, 0.1)
        await asyncio.gather(*tasks)
        out.put((t0, time.time(), time.process_time() - cpu0, 2 * cells))
        await _close(clients, models)

    asyncio.run(main())


async def _close(clients: list, models: list) -> None:
    from physlab.llm.models import close_provider_model

    for client in clients:  # the openai SDK's client has close(), httpx's aclose()
        await (client.close() if hasattr(client, "close") else client.aclose())
    for model in models:
        await close_provider_model(model)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=70)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--new-connections", action="store_true",
                    help="Time a pass on new clients, which open their connections (as a sweep's cells do).")
    ap.add_argument("--only", action="append", metavar="CLIENT",
                    help="Measure only this client (repeatable), e.g. --only 'pydantic-ai direct'.")
    args = ap.parse_args()
    srv = subprocess.Popen([sys.executable, "-m", "physlab.llm.standin", "--latency", str(args.latency),
                            "--reply", "ok"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    base = srv.stdout.readline().strip()
    path = 2 * args.latency
    print(f"{args.cells} cells x 2 sequential requests, {args.latency * 1000:.0f} ms latency, "
          f"{os.cpu_count()} cores; latency-only critical path {path:.2f} s; medians of {args.repeat}; "
          f"timed on {'new' if args.new_connections else 'open'} connections")
    try:
        kinds = ("httpx", "openai SDK", "pydantic-ai", "pydantic-ai direct", "pydantic-ai direct/aiohttp")
        for kind in [k for k in kinds if not args.only or k in args.only]:
            for procs in (1, 2):
                walls, cpus = [], []
                for _ in range(args.repeat):
                    q: mp.Queue = mp.Queue()
                    start_at = time.time() + 8  # after every process has imported and warmed up
                    ps = [mp.Process(target=_worker, args=(kind, base, args.cells // procs, start_at, q,
                                                          args.new_connections))
                          for _ in range(procs)]
                    for p in ps:
                        p.start()
                    got = [q.get(timeout=300) for _ in ps]
                    for p in ps:
                        p.join()
                    walls.append(max(g[1] for g in got) - min(g[0] for g in got))
                    cpus.append(sum(g[2] for g in got) / sum(g[3] for g in got))
                wall, cpu = statistics.median(walls), statistics.median(cpus)
                print(f"{kind:26s} {procs} process(es): wall {wall:.3f} s -> {path / wall:.0%} of the critical path; "
                      f"CPU {cpu * 1000:.2f} ms/request", flush=True)
    finally:
        srv.communicate("", timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
