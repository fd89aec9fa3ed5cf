"""Run the stand-in server on its own (127.0.0.1), e.g. to try a sweep setup without a model:

    python -m physlab.llm.standin [--latency 0.2] [--reply TEXT | --reply-file FILE] [--port N]
                                  [--refuse-tools] [--default-max-tokens N] [--max-output-tokens N]
                                  [--context-window N] [--rpm N] [--usd-per-mtok IN,OUT]

Prints the base URL (for --api-base) on the first line, serves until stdin closes or it is
interrupted, then prints one JSON line: requests, tokens, max in flight, and the CPU it used.
Without --reply it echoes the last user message.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

from physlab.llm.standin.habits import Habits
from physlab.llm.standin.server import StandinServer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m physlab.llm.standin", description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.0, help="Seconds before each reply.")
    ap.add_argument("--port", type=int, default=0, help="Port on 127.0.0.1 (default: any free port).")
    reply = ap.add_mutually_exclusive_group()
    reply.add_argument("--reply", help="Answer every request with this text.")
    reply.add_argument("--reply-file", type=Path, help="Answer every request with this file's text.")
    habits = ap.add_argument_group("habits of real servers (physlab.llm.standin.Habits)")
    habits.add_argument("--refuse-tools", action="store_true", help="Answer requests with tools as vLLM without a "
                        "tool parser does (400).")
    habits.add_argument("--default-max-tokens", type=int, help="Cut replies here when a request gives no cap.")
    habits.add_argument("--max-output-tokens", type=int, help="Refuse a larger cap (OpenAI's 400).")
    habits.add_argument("--context-window", type=int, help="Refuse prompt + cap beyond it (vLLM's 400).")
    habits.add_argument("--rpm", type=int, help="Requests per minute before 429 with Retry-After.")
    habits.add_argument("--usd-per-mtok", help="IN,OUT: state each answer's cost in x-litellm-response-cost.")
    args = ap.parse_args(argv)
    if args.latency < 0:
        ap.error("--latency must be >= 0")
    text = args.reply
    if args.reply_file is not None:
        try:
            text = args.reply_file.read_text(encoding="utf-8")
        except OSError as exc:
            print(f"error: {args.reply_file}: {exc.strerror}", file=sys.stderr)
            return 2
    responder = (lambda body: text) if text is not None else None
    try:
        prices = tuple(float(x) for x in args.usd_per_mtok.split(",")) if args.usd_per_mtok else None
    except ValueError:
        prices = ()
    if prices is not None and len(prices) != 2:
        ap.error("--usd-per-mtok takes IN,OUT (USD per million tokens), e.g. 2.5,10")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cpu0 = time.process_time()
    try:
        server = StandinServer(responder, latency_s=args.latency, port=args.port, habits=Habits(
            refuse_tools=args.refuse_tools, default_max_tokens=args.default_max_tokens,
            max_output_tokens=args.max_output_tokens, context_window=args.context_window, rpm=args.rpm,
            usd_per_mtok=prices)).start()
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    print(server.base_url, flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    s = server.stats
    try:
        print(json.dumps({"requests": s.requests, "answered": s.answered, "prompt_tokens": s.prompt_tokens,
                          "completion_tokens": s.completion_tokens, "max_in_flight": s.max_in_flight,
                          "cpu_s": round(time.process_time() - cpu0, 4)}), flush=True)
    except BrokenPipeError:  # whoever started us is gone: nobody to tell
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
