"""A stand-in for CritPt's grading server on 127.0.0.1, playing the real one's habits as its public
clients describe them: the key in ``x-api-key`` (401 without a known one), only a complete batch
of the 70 test challenges graded (400 with an ``error`` otherwise), ten submissions per key in 24
hours (429 with ``Retry-After`` and ``X-Ratelimit-Reset``), progress as newline-delimited JSON events
when asked with ``?stream_progress=true`` (or one JSON object when ``stream=False``), aggregate
metrics only unless ``debug`` (then per-challenge ``results`` too). It grades for real: each entry's
function, extracted as CritPt's parser does, is called and compared with the stand-in's answer key.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .critpt_published import run_answer

PUBLIC_IDS = [f"Challenge_{i}_main" for i in range(1, 71)]
REQUIRED = ("problem_id", "generated_code", "model", "generation_config")


class GradingStandin:
    def __init__(self, answer_key: dict[str, Any], *, keys=("sk-critpt",), stream: bool = True,
                 debug: bool = False, limit: int = 10, fail: str | None = None):
        self.answer_key, self.keys, self.stream, self.debug, self.limit = answer_key, set(keys), stream, debug, limit
        self.fail = fail  # None | "http500" | "stream-error"
        self.requests: list[dict[str, Any]] = []
        self.counted: dict[str, list[float]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/api/v2/critpt/evaluate"

    def __enter__(self) -> GradingStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- grading ---------------------------------------------------------------------------------

    def grade(self, submissions: list[dict]) -> dict[str, Any]:
        results = []
        for sub in submissions:
            try:
                correct = run_answer(sub["generated_code"]) == self.answer_key[sub["problem_id"]]
            except Exception:  # noqa: BLE001 - the real server grades a broken answer as wrong
                correct = False
            results.append({"problem_id": sub["problem_id"], "score": float(correct),
                            "judge_result": "correct" if correct else "incorrect"})
        payload: dict[str, Any] = {"accuracy": sum(r["score"] for r in results) / len(results),
                                   "timeout_rate": 0.0, "server_timeout_count": 0, "judge_error_count": 0}
        if self.debug:
            payload["results"] = results
        return payload

    def refusal(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("submissions"), list) \
                or not isinstance(body.get("batch_metadata"), dict):
            return "Invalid request body"
        subs = body["submissions"]
        if not all(isinstance(s, dict) and all(k in s for k in REQUIRED) for s in subs):
            return "Invalid request body: each submission needs " + ", ".join(REQUIRED)
        ids = [s["problem_id"] for s in subs]
        missing = sorted(set(PUBLIC_IDS) - set(ids))
        unmatched = sorted(set(ids) - set(PUBLIC_IDS))
        if missing or unmatched or len(ids) != len(set(ids)):
            return (f"Batch must contain all 70 problems exactly once: {len(missing)} missing, "
                    f"{len(unmatched)} unmatched problem IDs")
        return None

    # -- HTTP ------------------------------------------------------------------------------------

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:  # http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                query = parse_qs(urlsplit(self.path).query)
                key = self.headers.get("x-api-key")
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                standin.requests.append({"path": self.path, "key": key, "body": body})
                if key not in standin.keys:
                    return self._json(401, {"error": "Invalid or missing API key"})
                now = time.time()
                window = [t for t in standin.counted.get(key, []) if t > now - 86400]
                if len(window) >= standin.limit:
                    return self._json(429, {"error": "Rate limit exceeded: 10 submissions per 24 hours"},
                                      {"Retry-After": str(int(window[0] + 86400 - now)),
                                       "X-Ratelimit-Reset": str(int(window[0] + 86400))})
                standin.counted[key] = window + [now]
                if standin.fail == "http500":
                    return self._json(500, {"error": "Internal Server Error"})
                if (why := standin.refusal(body)) is not None:
                    return self._json(400, {"error": why})
                payload = standin.grade(body["submissions"])
                if not (standin.stream and query.get("stream_progress") == ["true"]):
                    return self._json(200, payload)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                total = len(body["submissions"])
                events = [{"type": "status", "total": total}]
                events += [{"type": "progress", "completed": n, "total": total} for n in range(10, total + 1, 10)]
                if standin.fail == "stream-error":
                    events.append({"type": "error", "message": "judge worker crashed"})
                else:
                    events.append({"type": "result", "payload": payload})
                for e in events:
                    self.wfile.write((json.dumps(e) + "\n").encode())
                    self.wfile.flush()

        return Handler
