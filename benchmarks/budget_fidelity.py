"""Budgets that hold: every strategy against the stand-in with long replies, at three token caps.

    python benchmarks/budget_fidelity.py [--caps 50000,100000,200000] [--reply-tokens 20000]
                                         [--strategies lab,rsa,...]

For each strategy and cap, one run through the real runner and the real ``openai:`` path; prints the
tokens it used (what the server served) over the cap. Each request is sent with a ``max_tokens`` no
larger than what the budget has left after the requests in flight reserved theirs, and is not sent
when less than a useful reply remains: every ratio should be at most 1.1 (the lab's forced formatter
may go past the cap by its grace call, by design). Exits 1 if one is not.

The stand-in answers every request at length (``--reply-tokens`` of text ending in a fenced answer,
or a schema-valid tool call after as much text), with no latency, so the figure is about the
budget's arithmetic, not about a model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

TEMPLATE = "def answer(x):\n    y = ...\n    return y\n"
CODE = "\n\nFinal answer: y = 2x\n\n```python\ndef answer(x):\n    return 2 * x\n```\n"


class LongReplies:
    """A model that always writes at length: text ending in an answer, or text then a tool call."""

    def __init__(self, reply_tokens: int, seed: int = 0) -> None:
        from physlab.llm.standin import RandomToolResponder

        self.chars = reply_tokens * 4
        self.tools = RandomToolResponder(seed=seed)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()

    def _text(self, n: int) -> str:
        words = ("the", "field", "energy", "so", "we", "expand", "to", "second", "order", "in", "p", "and")
        with self.lock:
            out = " ".join(self.rng.choice(words) for _ in range(n // 4))
        return out[:n]

    def __call__(self, body: dict):
        from physlab.llm.standin import Reply

        if body.get("tools"):
            call = self.tools(body)
            return Reply(content=self._text(self.chars // 4), tool_calls=call.tool_calls)
        fmt = body.get("response_format") or {}
        if fmt.get("type") in ("json_schema", "json_object"):
            return Reply(content=json.dumps({"answer": self._text(self.chars)}))
        return Reply(content=self._text(self.chars - len(CODE)) + CODE)


async def one(strategy: str, cap: int, base_url: str, root: Path) -> dict:
    from physlab.api import solve_async
    from physlab.llm.usage import Budget
    from physlab.problems.model import Problem

    problem = Problem(id="double", statement="Return twice $x$, with a derivation.", answer_template=TEMPLATE,
                      reference="2*x", reference_format="python")
    ws = root / f"{strategy}-{cap}"
    t0 = time.monotonic()
    attempt = await solve_async(problem, strategy, "openai:standin", workspace=ws, api_base=base_url,
                               budget=Budget(max_tokens=cap))
    m = json.loads((ws / "metrics.json").read_text())
    used = m["totals"]["total_tokens"]
    return {"strategy": strategy, "cap": cap, "used": used, "ratio": used / cap, "status": attempt.status,
            "stop": attempt.stop_reason, "calls": m["totals"]["calls"], "graced": m.get("graced_calls", 0),
            "wall_s": time.monotonic() - t0}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--caps", default="50000,100000,200000")
    ap.add_argument("--reply-tokens", type=int, default=20_000)
    ap.add_argument("--strategies", default="")
    args = ap.parse_args()
    import os

    os.environ.setdefault("OPENAI_API_KEY", "not-needed")  # the stand-in takes none
    from physlab.llm.standin import StandinServer
    from physlab.strategies import registry

    caps = [int(c) for c in args.caps.split(",")]
    strategies = [s for s in args.strategies.split(",") if s] or list(registry.names())
    rows = []
    with tempfile.TemporaryDirectory() as tmp, StandinServer(LongReplies(args.reply_tokens)) as srv:
        for strategy in strategies:
            for cap in caps:
                row = await one(strategy, cap, srv.base_url, Path(tmp))
                rows.append(row)
                print(f"{strategy:15s} cap {cap:>8,}  used {row['used']:>8,}  used/cap {row['ratio']:.3f}  "
                      f"({row['calls']} calls, {row['status']}: {row['stop']}"
                      + (f", {row['graced']} graced" if row["graced"] else "") + f", {row['wall_s']:.1f}s)",
                      flush=True)
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"\nworst used/cap: {worst['ratio']:.3f} ({worst['strategy']} at {worst['cap']:,}); "
          f"{sum(r['ratio'] <= 1.1 for r in rows)}/{len(rows)} runs within 1.1x their cap")
    return 0 if worst["ratio"] <= 1.1 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
