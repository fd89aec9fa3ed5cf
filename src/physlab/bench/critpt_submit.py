"""Post CritPt batches to the grading server and record what it answers.

The endpoint, as CritPt's public client uses it (``src/critpt/evaluation/eval_client.py`` and
``evaluate_all_results.py``): one POST of the whole batch to the URL, the key in ``x-api-key``,
``?stream_progress=true`` asking for newline-delimited JSON events (``status`` with the total,
``progress`` with completed/total, ``result`` with the payload, ``error`` with a message); a server
that does not stream answers with the payload as one JSON object. The payload holds ``accuracy``,
``timeout_rate``, ``server_timeout_count`` and ``judge_error_count``; only a server in debug mode
adds per-challenge ``results``. Refusals are HTTP errors with a JSON ``error``; the rate limit is
HTTP 429 with ``Retry-After`` and ``X-Ratelimit-Reset`` (as other public clients of the API read it).
A 5xx is never retried here: a second POST could spend a second of the day's ten submissions.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from physlab.bench.critpt_export import Batch
from physlab.bench.critpt_format import wire_payload
from physlab.bench.critpt_server import DAILY_LIMIT
from physlab.bench.store import ResultsStore
from physlab.errors import UserError
from physlab.llm.redact import redact

DAY_S = 24 * 3600.0

Progress = Callable[[int, int], None]


class GradingFailed(Exception):
    """The server did not grade the batch: ``state`` is 'rejected' (it refused it) or 'error'."""

    def __init__(self, message: str, *, state: str, http_status: int | None = None, response: Any = None,
                 counted: bool = True):
        super().__init__(message)
        self.state, self.http_status, self.response = state, http_status, response
        self.counted = counted  # False: it cannot have counted toward the day's limit


def key_id(api_key: str) -> str:
    """Which account a submission used, without storing the key: a short hash of it."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:16]




def check_url(url: str, *, allow_http: bool = False) -> str:
    """The grading URL, if the key may be sent there: https, or plain http to this machine
    (a stand-in, a tunnel) unless ``allow_http``; never with a user name or password in it (they
    would be stored with the submission: the key goes in --api-key-env)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        has_login = parts.username is not None or parts.password is not None
    except ValueError:  # a port that is not a number, brackets that do not close
        raise UserError(f"{_no_login(url)!r} is not an http(s) URL", field="--url") from None
    if has_login:
        raise UserError(f"{_no_login(url)!r} holds a user name or password (user:password@); they would be stored "
                        "with the submission: give the key in --api-key-env and the URL without them",
                        field="--url")
    if parts.scheme not in ("http", "https") or not host:
        raise UserError(f"{url!r} is not an http(s) URL", field="--url")
    if parts.scheme == "http" and not _loopback(host) and not allow_http:
        raise UserError(f"{url!r} is plain http to another machine: the API key would travel unencrypted; use "
                        "https, or --allow-http if you mean it", field="--url")
    return url


def _no_login(url: str) -> str:
    """``url`` as it may be shown: whatever stands before an '@' in its authority left out."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}" if sep else url.rpartition("@")[2]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def clock(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# -- the day's limit -------------------------------------------------------------------------------


def check_quota(store: ResultsStore, key: str, planned: int, *, force: bool, now: float | None = None) -> list[float]:
    """The times of this key's submissions in the last 24 hours (those that may count). Refuses a
    plan that would go past CritPt's ten unless ``force``."""
    now = time.time() if now is None else now
    sent = store.critpt_counted_since(key, now - DAY_S)
    over = len(sent) + planned - DAILY_LIMIT
    if over > 0 and not force:
        when = (f"; enough frees up at {clock(sent[over - 1] + DAY_S)}" if over <= len(sent) else "")
        raise UserError(f"{planned} batch(es) to send and {len(sent)} already sent with this key in the last 24 h "
                        f"(this database's record): CritPt grades {DAILY_LIMIT} per account per 24 h{when}; "
                        "send fewer (--repeat N) or --force", field="--api-key-env")
    return sent


def quota_note(sent_before: int, now: float, first_sent: float | None) -> str | None:
    """The warning before the tenth submission of 24 hours (None before the others)."""
    number = sent_before + 1
    if number < DAILY_LIMIT:
        return None
    frees = f"; the next frees at {clock(first_sent + DAY_S)}" if first_sent else ""
    return (f"warning: this is submission {number} in 24 h with this key (this database's record); "
            f"CritPt grades {DAILY_LIMIT} per account per 24 h{frees}")


# -- one POST ----------------------------------------------------------------------------------------


def post_batch(url: str, api_key: str, batch: Batch, *, timeout_s: float,
               progress: Progress | None = None) -> dict[str, Any]:
    """POST the batch; returns the server's payload. Raises GradingFailed on anything else."""
    body = wire_payload(batch.submissions, batch.metadata)
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 30.0))) as client:
            with client.stream("POST", url, params={"stream_progress": "true"}, json=body,
                               headers={"x-api-key": api_key}) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise _http_failure(resp)
                return _read_payload(resp, progress)
    except httpx.ConnectError as exc:
        raise GradingFailed(f"cannot reach {url} ({exc}); nothing was sent", state="error",
                            counted=False) from None
    except httpx.ConnectTimeout:
        raise GradingFailed(f"cannot reach {url} (no connection within 30 s); nothing was sent", state="error",
                            counted=False) from None
    except httpx.TimeoutException:
        raise GradingFailed(f"no answer from {url} within {timeout_s:g} s (--timeout); it may still be grading "
                            "the batch", state="error") from None
    except httpx.TransportError as exc:
        raise GradingFailed(f"cannot reach {url} ({type(exc).__name__}: {exc})", state="error") from None


def _read_payload(resp: httpx.Response, progress: Progress | None) -> dict[str, Any]:
    lines: list[str] = []
    streamed, final = True, None
    for line in resp.iter_lines():
        if not line.strip():
            continue
        lines.append(line)
        if not streamed:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            streamed = False  # a payload printed over several lines, not events
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind in ("status", "progress") and progress is not None:
            progress(_count(event.get("completed")), _count(event.get("total")))
        elif kind == "result":
            final = event.get("payload")
        elif kind == "error":
            raise GradingFailed(f"the grading server stopped with an error: {event.get('message') or event}",
                                state="error", http_status=resp.status_code, response=event)
        elif kind is None:
            final = event
    if not streamed:
        try:
            final = json.loads("\n".join(lines))
        except json.JSONDecodeError:
            final = None
    if not isinstance(final, dict):
        raise GradingFailed(f"the grading server's reply holds no result (HTTP {resp.status_code}): "
                            f"{_excerpt(chr(10).join(lines))}", state="error", http_status=resp.status_code)
    return final


def _count(value: Any) -> int:
    """A count from a progress event; anything else (a server's text, the key it echoes) is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _http_failure(resp: httpx.Response) -> GradingFailed:
    status = resp.status_code
    try:
        data = resp.json()
    except ValueError:
        data = None
    said = _message(data) or _excerpt(resp.text)
    if status in (401, 403):
        return GradingFailed(f"the grading server refused the API key (HTTP {status}: {said})",
                             state="rejected", http_status=status, response=data, counted=False)
    if status == 429:
        return GradingFailed(f"CritPt's rate limit (HTTP 429: {said}){_retry_after(resp)}",
                             state="rejected", http_status=status, response=data, counted=False)
    if status < 500:
        return GradingFailed(f"CritPt's server refused the batch (HTTP {status}: {said})",
                             state="rejected", http_status=status, response=data)
    return GradingFailed(f"the grading server failed (HTTP {status}: {said}); nothing was graded",
                         state="error", http_status=status, response=data)


def _retry_after(resp: httpx.Response) -> str:
    reset = resp.headers.get("X-Ratelimit-Reset")
    after = resp.headers.get("Retry-After")
    try:
        if reset:
            return f"; it takes submissions again at {clock(float(reset))}"
        if after:
            return f"; it takes submissions again at {clock(time.time() + float(after))}"
    except ValueError:
        pass
    return ""


def _message(data: Any) -> str | None:
    if isinstance(data, dict):
        for k in ("error", "detail", "message"):
            if data.get(k):
                v = data[k]
                return v if isinstance(v, str) else json.dumps(v)[:300]
    return None


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return (text[:300] + "...") if len(text) > 300 else (text or "empty reply")


# -- reading the payload -------------------------------------------------------------------------


def metrics_of(payload: dict[str, Any]) -> dict[str, Any]:
    """accuracy, timeout_rate, server_timeout_count, judge_error_count from the payload (or its
    ``metrics``/``summary``); an accuracy that is not a fraction in [0, 1] is no grade."""
    src = payload
    if "accuracy" not in src:
        src = next((payload[k] for k in ("metrics", "summary") if isinstance(payload.get(k), dict)
                    and "accuracy" in payload[k]), {})
    acc = src.get("accuracy")
    if isinstance(acc, bool) or not isinstance(acc, (int, float)) or not 0 <= acc <= 1:
        raise GradingFailed(f"the grading server's reply has no accuracy in [0, 1] (got {acc!r})",
                            state="error", response=payload)
    out: dict[str, Any] = {"accuracy": float(acc)}
    rate = src.get("timeout_rate")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 <= rate <= 1:
        out["timeout_rate"] = float(rate)
    for k in ("server_timeout_count", "judge_error_count"):
        if isinstance(src.get(k), int) and not isinstance(src.get(k), bool):
            out[k] = src[k]
    return out


def results_of(payload: dict[str, Any], ids: set[str]) -> dict[str, tuple[float | None, Any]]:
    """Per-challenge (score, detail) when the server returned them (a list of entries with
    ``problem_id``, or a mapping by id); a score is ``score`` in [0, 1], else ``correct``."""
    raw = payload.get("results")
    items = (raw.items() if isinstance(raw, dict)
             else ((r.get("problem_id"), r) for r in raw if isinstance(r, dict)) if isinstance(raw, list) else ())
    out: dict[str, tuple[float | None, Any]] = {}
    for pid, detail in items:
        if pid not in ids:
            continue
        score = detail.get("score") if isinstance(detail, dict) else None
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
            correct = detail.get("correct") if isinstance(detail, dict) else None
            score = float(correct) if isinstance(correct, bool) else None
        out[pid] = (None if score is None else float(score), detail)
    return out


# -- submit and record -------------------------------------------------------------------------------


def submit(store: ResultsStore, batch: Batch, *, url: str, api_key: str, timeout_s: float,
           progress: Progress | None = None) -> dict[str, Any]:
    """Record the batch, post it, record the answer. Returns the metrics; raises GradingFailed
    (already recorded) when the server did not grade it."""
    sid = store.start_critpt_submission(
        url=redact(url, api_key), key_id=key_id(api_key), strategy=batch.group.strategy, model=batch.group.model,
        config=batch.group.config, repeat=batch.repeat,
        entries=list(zip((s.problem_id for s in batch.submissions), batch.cell_keys)))
    try:
        payload = redact(post_batch(url, api_key, batch, timeout_s=timeout_s, progress=progress), api_key)
        metrics = metrics_of(payload)
    except GradingFailed as exc:
        clean = GradingFailed(redact(str(exc), api_key), state=exc.state, http_status=exc.http_status,
                              response=redact(exc.response, api_key), counted=exc.counted)
        store.finish_critpt_submission(sid, state=clean.state, http_status=clean.http_status,
                                       response=clean.response, error=str(clean), counted=clean.counted)
        raise clean from None
    except BaseException as exc:  # Ctrl-C or a bug: on record as an error that may have counted
        store.finish_critpt_submission(sid, state="error", error=f"stopped while sending ({type(exc).__name__})")
        raise
    store.finish_critpt_submission(sid, state="scored", http_status=200, metrics=metrics, response=payload,
                                   results=results_of(payload, {s.problem_id for s in batch.submissions}))
    return {**metrics, "submission": sid}
