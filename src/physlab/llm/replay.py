"""``replay:PATH`` - re-serve the responses recorded in a run's calls.jsonl, in order per role.

PATH is the calls.jsonl file or the run directory holding it. Only records with a response are
re-served (failed attempts were not seen by the strategy), and the server's refusals of tool calls
(after which ``--output-mode auto`` went on in prompted mode, as it does again in the replay). Because the same model seam
sits in front, a truncated reply that was re-asked is re-asked again and gets the next recorded response,
so the replayed run takes the same path. Each request is compared with the recorded ones of its role
(ignoring timestamps and run ids) and gets the response of the first unserved recording it matches,
so concurrent requests of one role may arrive in any order; no match, or running out of responses,
raises ReplayError. ``PHYSLAB_REPLAY_CHECK=0`` serves responses in recorded order without comparing
(for strategies whose prompts legitimately change between runs, e.g. ones quoting the workspace path).
Identical concurrent requests get their recorded responses in recorded order, which is the original
assignment unless the strategy's tasks reached the model in a different order.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from physlab.errors import UserError
from physlab.llm.errors import ReplayError
from physlab.llm.meter import read_calls
from physlab.llm.usage import CallRecord
from physlab.llm.wire import load_response, normalize_messages


def resolve_calls_path(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "calls.jsonl"
    if not p.is_file():
        raise UserError("no calls.jsonl to replay (give the file or the run directory)", path=p, field="--model")
    return p


def _first_difference(a: Any, b: Any, where: str = "") -> str:
    if type(a) is not type(b):
        return where or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{where}/{k}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{where}/{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where} (length {len(b)} recorded, {len(a)} now)"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{where}/{i}")
    return where or "/"


def _refused_tools(rec: CallRecord) -> bool:
    """A request the server refused for carrying tools, after which ``auto`` fell back to prompted
    output: re-served as that refusal so a replay falls back at the same point."""
    return rec.response is None and (rec.note or "").startswith("tools refused")


def _recorded_mode(records: list[CallRecord]) -> str:
    """The output mode the recorded run was in (the replay sends its requests the same way)."""
    if any("auto -> prompted" in (r.note or "") for r in records):
        return "auto"
    sent = {r.request.get("output_mode") for r in records if isinstance(r.request, dict)}
    for mode in ("native", "constrained", "prompted"):
        if mode in sent:
            return mode
    return "tool"


def replay_checks_requests() -> bool:
    """False when ``PHYSLAB_REPLAY_CHECK`` is 0/false/no: replay serves without comparing requests."""
    return os.environ.get("PHYSLAB_REPLAY_CHECK", "1").strip().lower() not in ("0", "false", "no")


class ReplayBook:
    """The recorded responses of one run, handed out per role."""

    def __init__(self, path: str | Path, *, check_requests: bool | None = None) -> None:
        self.path = resolve_calls_path(path)
        if check_requests is None:
            check_requests = replay_checks_requests()
        try:
            records = read_calls(self.path)
        except (ValueError, json.JSONDecodeError) as exc:
            raise UserError(f"not a calls.jsonl file ({str(exc).splitlines()[0]})", path=self.path) from None
        self.check_requests = check_requests
        self.queues: dict[str, list[CallRecord]] = defaultdict(list)
        for rec in records:
            if rec.response is not None or _refused_tools(rec):
                self.queues[rec.role].append(rec)
        self.output_mode = _recorded_mode(records)
        self.served: dict[str, int] = defaultdict(int)
        self._served_idx: dict[str, set[int]] = defaultdict(set)
        self._norm: dict[int, Any] = {}
        self._meta: dict[int, CallRecord] = {}

    def cost_of(self, resp: ModelResponse) -> float:
        rec = self._meta.pop(id(resp), None)  # the recording model asks for the label first
        return rec.cost_usd if rec else 0.0

    def model_of(self, resp: ModelResponse) -> str:
        rec = self._meta.get(id(resp))
        return rec.model if rec else "replay"

    def _normalized(self, rec: CallRecord) -> Any:
        key = id(rec)
        if key not in self._norm:
            req = rec.request if isinstance(rec.request, dict) else {}
            self._norm[key] = normalize_messages(req.get("messages")) if "messages" in req else None
        return self._norm[key]

    def next(self, role: str, messages: list[ModelMessage]) -> ModelResponse:
        """The recorded response for this request of ``role``: the first unserved recording whose
        request matches (so concurrent same-role requests may arrive in any order), in order."""
        queue = self.queues.get(role, [])
        pending = [i for i in range(len(queue)) if i not in self._served_idx[role]]
        if not pending:
            raise ReplayError(f"replay ran out: role '{role}' asked for response #{len(queue) + 1} but "
                              f"{self.path} recorded {len(queue)} for it")
        pick = pending[0]
        if self.check_requests:
            now = normalize_messages(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))
            match = [i for i in pending if self._normalized(queue[i]) in (now, None)]
            if not match:
                first = queue[pending[0]]
                raise ReplayError(
                    f"replay diverged: request #{len(self._served_idx[role]) + 1} of role '{role}' matches no "
                    f"unserved recorded request (next recorded: seq {first.seq}; first difference at "
                    f"{_first_difference(now, self._normalized(first))}); set PHYSLAB_REPLAY_CHECK=0 to serve "
                    f"recorded responses in order without comparing")
            pick = match[0]
        self._served_idx[role].add(pick)
        self.served[role] += 1
        rec = queue[pick]
        if rec.response is None:  # the server refused tools here: the run's output mode fell back
            from pydantic_ai.exceptions import ModelHTTPError

            raise ModelHTTPError(400, f"replay:{self.path}", body={"error": {"message": rec.error or ""}})
        resp = load_response(rec.response)
        self._meta[id(resp)] = rec
        return resp

    def model_for(self, role: str) -> ReplayModel:
        return ReplayModel(self, role)


class ReplayModel(Model):
    """Serves one role's recorded responses unchanged (a FunctionModel would rename the model and
    re-estimate usage, which would break bit-for-bit replay)."""

    def __init__(self, book: ReplayBook, role: str) -> None:
        super().__init__()
        self.book = book
        self.role = role

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        return self.book.next(self.role, messages)

    @property
    def model_name(self) -> str:
        return f"replay:{self.book.path}"

    @property
    def system(self) -> str:
        return "replay"
