"""Run the stand-in server on its own (127.0.0.1), e.g. to try a sweep setup without a model:

    python -m physlab.llm.standin [--latency 0.2] [--reply TEXT | --reply-file FILE] [--port N]

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

from physlab.llm.standin.server import StandinServer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m physlab.llm.standin", description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.0, help="Seconds before each reply.")
    ap.add_argument("--port", type=int, default=0, help="Port on 127.0.0.1 (default: any free port).")
    reply = ap.add_mutually_exclusive_group()
    reply.add_argument("--reply", help="Answer every request with this text.")
    reply.add_argument("--reply-file", type=Path, help="Answer every request with this file's text.")
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
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cpu0 = time.process_time()
    try:
        server = StandinServer(responder, latency_s=args.latency, port=args.port).start()
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
