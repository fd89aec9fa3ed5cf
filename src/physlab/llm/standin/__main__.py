"""Run the stand-in server on its own (127.0.0.1 only), e.g. to try a setup end to end without a model:

    python -m physlab.llm.standin [--scenario NAME [--role ROLE] | --reply TEXT | --reply-file FILE]
        [--api-key KEY | --api-key-env NAME] [--port N] [--latency S] [--max-seconds S]
        [--fault KIND[*N][:OPT=VALUE,...]]...
        [--refuse-tools] [--default-max-tokens N] [--max-output-tokens N] [--context-window N]
        [--rpm N [--rpm-window S] [--rate-limit-style openai|proxy]] [--usd-per-mtok IN,OUT]
        [--prefix-cache] [--no-usage] [--llama-cpp-python [CHAT_FORMAT]]

Prints the base URL (for --api-base) on the first line, serves until stdin closes (unless it is
/dev/null, as for a job started with `&` in a script), --max-seconds pass, SIGTERM or Ctrl-C, then
prints one JSON line: requests, tokens, max in flight, the faults it served and the CPU it used. --scenario plays a scripted model (``scripted:lab-qec``, ...) over HTTP,
the lab's roles read from their instructions; --reply answers every request with one text;
otherwise it echoes the last user message. Whatever it plays, it answers ``physlab models check``'s
probes as a capable model would. Bad options are one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

from physlab.llm.standin.habits import Habits
from physlab.llm.standin.server import FAULT_KINDS, StandinServer

LOOPBACK = ("127.0.0.1", "localhost")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        print(f"error: {message} (see `python -m physlab.llm.standin --help`)", file=sys.stderr)
        sys.exit(2)


def _parser() -> _Parser:
    ap = _Parser(prog="python -m physlab.llm.standin", description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (or localhost): it serves nowhere else.")
    ap.add_argument("--port", type=int, default=0, help="Port (default: any free port).")
    ap.add_argument("--latency", type=float, default=0.0, help="Seconds before each reply.")
    ap.add_argument("--max-seconds", type=float, help="Stop after this many seconds (default: when stdin closes).")
    plays = ap.add_mutually_exclusive_group()
    plays.add_argument("--scenario", help="Play this scripted model (a name from `physlab models`, e.g. lab-qec).")
    plays.add_argument("--reply", help="Answer every request with this text.")
    plays.add_argument("--reply-file", type=Path, help="Answer every request with this file's text.")
    ap.add_argument("--role", default="solver", help="With --scenario: the role of a request whose instructions are "
                    "none of the lab's roles (default: solver).")
    key = ap.add_mutually_exclusive_group()
    key.add_argument("--api-key", help="Answer 401 to a request without 'Authorization: Bearer KEY'.")
    key.add_argument("--api-key-env", metavar="NAME", help="The same, with the key this variable holds.")
    ap.add_argument("--fault", action="append", default=[], metavar="KIND[*N][:OPT=VALUE,...]",
                    help=f"Serve the first requests a fault, in order (repeatable): {', '.join(FAULT_KINDS)}; "
                    "e.g. server_error*2, rate_limit:retry_after=3, slow:delay_s=5.")
    habits = ap.add_argument_group("habits of real servers (physlab.llm.standin.Habits)")
    habits.add_argument("--refuse-tools", action="store_true", help="Answer requests with tools as vLLM without "
                        "--enable-auto-tool-choice and a tool parser does (400).")
    habits.add_argument("--default-max-tokens", type=int, help="Cut replies here when a request gives no cap.")
    habits.add_argument("--max-output-tokens", type=int, help="Refuse a larger cap (OpenAI's 400).")
    habits.add_argument("--context-window", type=int, help="Refuse prompt + cap beyond it (vLLM's 400).")
    habits.add_argument("--rpm", type=int, help="Requests per --rpm-window before 429 with Retry-After.")
    habits.add_argument("--rpm-window", type=float, default=60.0, help="Seconds of the --rpm window (default 60).")
    habits.add_argument("--rate-limit-style", choices=("openai", "proxy"), default="openai",
                        help="The 429's wait headers: OpenAI's, or only a LiteLLM proxy's llm_provider-retry-after.")
    habits.add_argument("--usd-per-mtok", help="IN,OUT: state each answer's cost in x-litellm-response-cost.")
    habits.add_argument("--prefix-cache", action="store_true", help="Report a prompt prefix seen before as "
                        "cached tokens (vLLM's prefix cache).")
    habits.add_argument("--no-usage", action="store_true", help="Send replies without a usage block.")
    habits.add_argument("--llama-cpp-python", nargs="?", const="chatml-function-calling", metavar="CHAT_FORMAT",
                        help="Play llama-cpp-python's server with a small model (Habits.llama_cpp_python): "
                             "max_completion_tokens ignored, json_schema refused, json_object + schema held to, one "
                             "request at a time; CHAT_FORMAT chatml-function-calling (default), gemma or chatml.")
    return ap


def _faults(ap: _Parser, specs: list[str]) -> list[tuple[str, int, dict[str, Any]]]:
    """``KIND[*N][:OPT=VALUE,...]`` -> (kind, times, options); numbers are read as numbers."""
    out = []
    for spec in specs:
        head, _, opts = spec.partition(":")
        kind, star, times = head.partition("*")
        if kind not in FAULT_KINDS:
            ap.error(f"--fault: unknown fault '{kind}' (known: {', '.join(FAULT_KINDS)})")
        if star and not (times.isdigit() and int(times) >= 1):
            ap.error(f"--fault {spec}: *N takes a whole number >= 1")
        options: dict[str, Any] = {}
        for item in filter(None, opts.split(",")):
            name, eq, value = item.partition("=")
            if not eq or not name:
                ap.error(f"--fault {spec}: options are OPT=VALUE, e.g. rate_limit:retry_after=3")
            try:
                options[name] = float(value)
            except ValueError:
                options[name] = value
        out.append((kind, int(times) if star else 1, options))
    return out


def _prices(ap: _Parser, text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        inp, out = (float(x) for x in text.split(","))
    except ValueError:
        ap.error("--usd-per-mtok takes IN,OUT (USD per million tokens), e.g. 2.5,10")
    return inp, out


def _key(ap: _Parser, args: argparse.Namespace) -> str | None:
    if args.api_key_env is None:
        return args.api_key
    key = os.environ.get(args.api_key_env)
    if not key:
        ap.error(f"--api-key-env: environment variable {args.api_key_env} is not set")
    return key


def _responder(ap: _Parser, args: argparse.Namespace) -> Any:
    from physlab.errors import UserError
    from physlab.llm.scripted import scenario_role_markers
    from physlab.llm.standin.player import ModelResponder

    text = args.reply
    if args.reply_file is not None:
        try:
            text = args.reply_file.read_text(encoding="utf-8")
        except OSError as exc:
            ap.error(f"{args.reply_file}: {exc.strerror}")
    try:
        return ModelResponder(args.scenario, default_role=args.role,
                              role_markers=scenario_role_markers(args.scenario) if args.scenario else None,
                              fallback=(lambda body: text) if text is not None else None)
    except UserError as exc:
        ap.error(f"--scenario: {exc}")


def _stdin_is_null() -> bool:
    try:
        mine, null = os.fstat(0), os.stat(os.devnull)
    except OSError:  # no stdin at all
        return True
    return stat.S_ISCHR(mine.st_mode) and mine.st_rdev == null.st_rdev


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.host not in LOOPBACK:
        ap.error(f"--host {args.host}: the stand-in serves on 127.0.0.1 only")
    for name in ("latency", "max_seconds", "rpm_window"):
        if (value := getattr(args, name)) is not None and value < 0:
            ap.error(f"--{name.replace('_', '-')} must be >= 0")
    options = dict(refuse_tools=args.refuse_tools, default_max_tokens=args.default_max_tokens,
                   max_output_tokens=args.max_output_tokens, context_window=args.context_window, rpm=args.rpm,
                   rpm_window_s=args.rpm_window, rate_limit_style=args.rate_limit_style,
                   usd_per_mtok=_prices(ap, args.usd_per_mtok), prefix_cache=args.prefix_cache,
                   api_key=_key(ap, args), report_usage=not args.no_usage)
    if args.llama_cpp_python:
        try:
            habits = Habits.llama_cpp_python(args.llama_cpp_python, **{k: v for k, v in options.items() if v})
        except ValueError as exc:
            ap.error(f"--llama-cpp-python: {exc}")
    else:
        habits = Habits(**options)
    faults = _faults(ap, args.fault)
    responder = _responder(ap, args)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cpu0 = time.process_time()
    try:
        server = StandinServer(responder, latency_s=args.latency, port=args.port, habits=habits).start()
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    for kind, times, options in faults:
        server.inject(kind, times=times, **options)
    print(server.base_url, flush=True)
    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    if _stdin_is_null():  # started in the background (`&` in a script): stdin ends at once, and means nothing
        print("physlab.llm.standin: stdin is /dev/null: serving until --max-seconds, SIGTERM or Ctrl-C",
              file=sys.stderr, flush=True)
    else:
        threading.Thread(target=until_stdin_closes, daemon=True).start()
    try:
        stop.wait(args.max_seconds)
    except KeyboardInterrupt:
        pass
    server.stop()
    s = server.stats
    report: dict[str, Any] = {"requests": s.requests, "answered": s.answered, "prompt_tokens": s.prompt_tokens,
                              "completion_tokens": s.completion_tokens, "max_in_flight": s.max_in_flight,
                              "faults": dict(s.faults), "cpu_s": round(time.process_time() - cpu0, 4)}
    if responder.modes:
        report["modes"] = responder.modes
    try:
        print(json.dumps(report), flush=True)
    except BrokenPipeError:  # whoever started us is gone: nobody to tell
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
