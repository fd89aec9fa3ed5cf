"""The per-run usage meter: appends one CallRecord per model request to calls.jsonl, keeps totals
per role and overall, and enforces the run's Budget *before* each request is sent.

Counting rules (documented because sweeps compare on them):
- ``calls`` counts every request that went out, answered or not (a refusal, a 5xx, a timeout:
  the server may have worked on it, and ``--max-calls`` bounds what is sent); those that failed
  (429, 5xx, connection, empty choices) are recorded with ``error`` set and also counted as
  ``failed_requests``.
- tokens are exactly what the server reported in each usage block it sent, including the usage of a
  reply that could not be used (a 200 with empty ``choices``): those tokens were served and paid for.
  A request that timed out reported nothing; its prompt and output cap are counted as an estimate
  (``tokens_estimated`` on its calls.jsonl line): a server that goes on generating for a client that
  left spends them.
- the wall budget is measured from the meter's creation (the start of the run).

Token and cost caps hold *before* a request is sent: :meth:`RunMeter.reserve` sets aside the
request's estimated input and the ``max_tokens`` it will be sent with (no more than what the budget
has left after the requests in flight set aside theirs). A request for which less than a useful
reply is left waits for those in flight to give back what they did not use; with nothing in flight
it is sent with what is left as its output cap, and refused (BudgetExceeded) only when nothing is
left. No request ever goes past a cap: a scaffold that needs room for a last step (the lab's
formatter) keeps it within the budget with :meth:`RunMeter.set_aside` and spends it inside
:meth:`RunMeter.finishing`.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from physlab.errors import UserError
from physlab.llm.errors import BudgetExceeded
from physlab.llm.linelog import LineLog
from physlab.llm.usage import Budget, CallRecord, Usage


def read_calls(path: str | Path, *, bodies: bool = True) -> list[CallRecord]:
    """Read a calls.jsonl file. Blank lines are skipped, and so is a line cut short by a kill in
    the middle of a write (a record's opening that does not parse: that request was never fully
    recorded, and resuming or replaying the run must not fail on it); any other line that is not
    a call record is bad input: one line naming the file and the line. ``bodies=False`` leaves
    out the request/response bodies."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if line.lstrip().startswith("{"):  # a record cut short; anything else is not calls.jsonl
                continue
            raise UserError(f"line {n} is not JSON: not a calls.jsonl file", path=path) from None
        except RecursionError:  # nested deeper than any record PhysLab writes: made to crash the reader
            raise UserError(f"line {n} is nested too deeply to be a call record: not a calls.jsonl file",
                            path=path) from None
        if not isinstance(data, dict):
            raise UserError(f"line {n} is not a call record (expected a JSON object): not a calls.jsonl file",
                            path=path)
        if not bodies:
            data.pop("request", None)
            data.pop("response", None)
        try:
            out.append(CallRecord.model_validate(data))
        except RecursionError:
            raise UserError(f"line {n} is nested too deeply to be a call record: not a calls.jsonl file",
                            path=path) from None
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise UserError(f"line {n} is not a call record ({where}: {err['msg']}): not a calls.jsonl file",
                            path=path) from None
    return out


@dataclass(frozen=True)
class Grant:
    """What :meth:`RunMeter.reserve` set aside for one request: the output cap to send it with
    (None: the budget does not limit it) and the tokens and cost held until it is released."""

    max_tokens: int | None = None
    tokens: int = 0
    output_tokens: int = 0
    input_tokens: int = 0
    cost_usd: float = 0.0


class RunMeter:
    """Implements the ``UsageMeter`` protocol of :mod:`physlab.run.environment`."""

    def __init__(self, budget: Budget | None = None, calls_path: str | Path | None = None, *,
                 previous: list[CallRecord] | None = None,
                 on_record: Callable[[CallRecord], None] | None = None) -> None:
        self.budget = budget or Budget()
        self._on_record = on_record  # e.g. a sweep's live token count (called for new records only)
        self.calls_path = Path(calls_path) if calls_path else None
        self.records: list[CallRecord] = list(previous or [])
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._pending = 0
        # Kept back from every request outside finishing() (set_aside): calls, and a share of the
        # token and cost caps, for a scaffold's last step.
        self._aside_calls = 0
        self._aside_share = 0.0
        self._finishing = False
        self.graced_calls = 0  # always 0 now (metrics.json keeps the field): nothing goes past a cap
        self._by_role: dict[str, Usage] = {}
        self._total = Usage()
        self.failed_requests = 0
        self.retries = 0
        self.truncated_replies = 0
        self.in_flight = 0  # this run's requests out at the server right now (they hold every slot)
        self.max_in_flight_seen = 0
        # Set aside by requests not yet recorded (see reserve): input + output tokens, output, cost.
        self._held = Grant()
        self._holders = 0
        self._released: asyncio.Event | None = None  # set (and replaced) when a reservation is given back
        self.price_sources: Counter[str] = Counter()
        for rec in self.records:
            self._account(rec)
        self._fh = None
        self._closed = False
        self.open()

    def open(self) -> None:
        """Open calls.jsonl for appending (once; not after :meth:`close`)."""
        if self.calls_path is not None and self._fh is None and not self._closed:
            self.calls_path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = LineLog(self.calls_path)

    # ---- UsageMeter protocol -------------------------------------------------------------
    def by_role(self) -> dict[str, Usage]:
        return dict(self._by_role)

    def total(self) -> Usage:
        return self._total

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._start

    def check(self) -> None:
        """Raise BudgetExceeded if a limit is already reached (in-flight requests count as calls;
        outside :meth:`finishing`, what :meth:`set_aside` keeps back counts as spent)."""
        b, t = self.budget, self._total
        aside = 0 if self._finishing else self._aside_calls
        if b.max_calls is not None and t.calls + self._pending + aside >= b.max_calls:
            raise BudgetExceeded("max_calls", f"{t.calls} of {b.max_calls} calls used"
                                 + (f" ({aside} kept for the last step)" if aside else ""))
        if b.max_tokens is not None and t.total_tokens >= b.max_tokens:
            raise BudgetExceeded("max_tokens", f"{t.total_tokens} of {b.max_tokens} tokens used")
        if b.max_input_tokens is not None and t.input_tokens >= b.max_input_tokens:
            raise BudgetExceeded("max_input_tokens", f"{t.input_tokens} of {b.max_input_tokens}")
        if b.max_output_tokens is not None and t.output_tokens >= b.max_output_tokens:
            raise BudgetExceeded("max_output_tokens", f"{t.output_tokens} of {b.max_output_tokens}")
        if b.max_cost_usd is not None and t.cost_usd >= b.max_cost_usd:
            raise BudgetExceeded("max_cost", f"${t.cost_usd:.4f} of ${b.max_cost_usd:.4f} spent")
        if b.max_wall_s is not None and self.elapsed_s >= b.max_wall_s:
            raise BudgetExceeded("max_wall", f"{self.elapsed_s:.1f}s of {b.max_wall_s:.1f}s elapsed")

    def set_aside(self, *, calls: int = 0, share: float = 0.0) -> None:
        """Keep ``calls`` requests and ``share`` of the token and cost caps back from every request
        made outside :meth:`finishing`: room for a scaffold's last step (the lab's formatter) within
        the budget. Never the whole call cap: one call is always left for the work itself."""
        if self.budget.max_calls is not None:
            calls = min(calls, self.budget.max_calls - 1)
        self._aside_calls = max(0, calls)
        self._aside_share = min(max(share, 0.0), 0.9)

    @contextmanager
    def finishing(self) -> Iterator[None]:
        """Requests inside this block may use what :meth:`set_aside` kept back (and nothing more:
        every cap still holds)."""
        before = self._finishing
        self._finishing = True
        try:
            yield
        finally:
            self._finishing = before

    def grace(self, calls: int = 1) -> AbstractContextManager[None]:
        """The old name of :meth:`finishing`: it no longer grants anything past a cap (an equal
        budget is equal for every scaffold); ``calls`` is ignored."""
        return self.finishing()

    # ---- used by the recording model -----------------------------------------------------
    async def reserve(self, *, input_tokens: int, want_output: int | None, min_reply: int,
                      usd_per_input: float = 0.0, usd_per_output: float = 0.0) -> Grant:
        """Admit one request and set aside what it may use: its estimated ``input_tokens`` and an
        output cap no larger than what the token and cost budgets have left after the requests in
        flight set aside theirs (``want_output`` is the cap it would have had anyway). When the
        budget cuts the cap below ``min_reply``, wait for a request in flight to give back what it
        did not use; with none in flight, send it with what is left (the last request of a run),
        and raise BudgetExceeded only when nothing is left."""
        while True:
            with self._lock:
                self.check()
                self._pending += 1
                room, limit = self._room(input_tokens, usd_per_input, usd_per_output)
                if room is None:
                    want = want_output or 0
                    return self._hold(Grant(max_tokens=want_output, input_tokens=input_tokens,
                                            tokens=input_tokens + want, output_tokens=want,
                                            cost_usd=input_tokens * usd_per_input + want * usd_per_output))
                cap = room if want_output is None else min(room, want_output)
                waiting_on = self._holders
                uncut = want_output is not None and cap >= want_output > 0
                if uncut or cap >= min_reply or (cap >= 1 and not waiting_on):
                    return self._hold(Grant(max_tokens=cap, input_tokens=input_tokens, tokens=input_tokens + cap,
                                            output_tokens=cap,
                                            cost_usd=input_tokens * usd_per_input + cap * usd_per_output))
                self._pending = max(0, self._pending - 1)
                if not waiting_on:
                    raise BudgetExceeded(limit, f"no output tokens left for this request (its input alone is "
                                                f"reckoned at {input_tokens})")
                if self._released is None:
                    self._released = asyncio.Event()
                released = self._released
            timeout = None
            if self.budget.max_wall_s is not None:
                timeout = max(0.0, self.budget.max_wall_s - self.elapsed_s)
            try:
                await asyncio.wait_for(released.wait(), timeout)
            except TimeoutError:
                pass  # the wall budget: check() raises on the next turn

    def _room(self, input_tokens: int, usd_in: float, usd_out: float) -> tuple[int | None, str]:
        """Output tokens the budgets leave for a request with ``input_tokens`` (None: unlimited),
        and the limit that binds."""
        b, t, h = self.budget, self._total, self._held
        keep = 0.0 if self._finishing else self._aside_share  # kept back for the last step
        room: float = math.inf
        limit = "max_tokens"
        if b.max_tokens is not None:
            left = b.max_tokens * (1 - keep) - t.total_tokens - h.tokens - input_tokens
            if left < room:
                room, limit = left, "max_tokens"
        if b.max_output_tokens is not None:
            left = b.max_output_tokens * (1 - keep) - t.output_tokens - h.output_tokens
            if left < room:
                room, limit = left, "max_output_tokens"
        if b.max_input_tokens is not None and (t.input_tokens + h.input_tokens + input_tokens
                                               > b.max_input_tokens * (1 - keep)):
            room, limit = 0, "max_input_tokens"
        if b.max_cost_usd is not None and usd_out > 0:
            left = (b.max_cost_usd * (1 - keep) - t.cost_usd - h.cost_usd - input_tokens * usd_in) / usd_out
            if left < room:
                room, limit = left, "max_cost"
        if room == math.inf:
            return None, limit
        return int(max(0, math.floor(room))), limit

    def _hold(self, g: Grant) -> Grant:
        h = self._held
        self._held = Grant(tokens=h.tokens + g.tokens, output_tokens=h.output_tokens + g.output_tokens,
                           input_tokens=h.input_tokens + g.input_tokens, cost_usd=h.cost_usd + g.cost_usd)
        self._holders += 1
        return g

    def give_back(self, g: Grant) -> None:
        """What ``g`` set aside is free again (call after the request's record is written, so the
        totals already hold what it used), and waiting requests look again."""
        with self._lock:
            h = self._held
            self._held = Grant(tokens=h.tokens - g.tokens, output_tokens=h.output_tokens - g.output_tokens,
                               input_tokens=h.input_tokens - g.input_tokens, cost_usd=h.cost_usd - g.cost_usd)
            self._holders = max(0, self._holders - 1)
            released, self._released = self._released, None
        if released is not None:
            released.set()

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Counts one request as in flight (``max_in_flight_seen`` in metrics.json)."""
        self.in_flight += 1
        self.max_in_flight_seen = max(self.max_in_flight_seen, self.in_flight)
        try:
            yield
        finally:
            self.in_flight -= 1

    def release(self) -> None:
        with self._lock:
            self._pending = max(0, self._pending - 1)

    def record(self, rec: CallRecord) -> CallRecord:
        with self._lock:
            rec.seq = len(self.records)
            rec.ts = rec.ts or time.time()
            self.records.append(rec)
            self._account(rec)
            if self._fh is not None:
                self._fh.write_line(rec.model_dump_json())
        if self._on_record is not None:
            self._on_record(rec)
        return rec

    def _account(self, rec: CallRecord) -> None:
        if rec.price_source:
            self.price_sources[rec.price_source] += 1
        if rec.error:
            self.failed_requests += 1
        else:
            if rec.finish_reason == "length":
                self.truncated_replies += 1
            self.retries += 1 if rec.retries else 0
        u = rec.usage()
        self._by_role[rec.role] = self._by_role.get(rec.role, Usage()).add(u)
        self._total = self._total.add(u)

    def close(self) -> None:
        self._closed = True
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def summary(self) -> dict[str, Any]:
        """The usage part of metrics.json."""

        def u(x: Usage) -> dict[str, Any]:
            return {"calls": x.calls, "input_tokens": x.input_tokens, "output_tokens": x.output_tokens,
                    "total_tokens": x.total_tokens, "cost_usd": round(x.cost_usd, 10),
                    "latency_s": round(x.wall_s, 6), "cache_read_tokens": x.cache_read_tokens,
                    "cache_write_tokens": x.cache_write_tokens}

        return {
            "totals": u(self._total),
            "per_role": {r: u(x) for r, x in sorted(self._by_role.items())},
            "failed_requests": self.failed_requests,
            "retried_requests": self.retries,
            "truncated_replies": self.truncated_replies,
            "graced_calls": self.graced_calls,
            "price_sources": dict(sorted(self.price_sources.items())),
            "budget": json.loads(self.budget.model_dump_json(exclude_none=True)),
        }
