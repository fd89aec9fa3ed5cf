"""A run reports its progress as typed events (physlab.run.events): every event the runner, a
strategy, the lab and the model seam send is one of the union's models, never an unknown kind;
the Python API's documented callback still gets them as ``events(kind, **data)``, with the same
kinds and fields; `--console json` prints an event's fields as its sender set them."""

from __future__ import annotations

import asyncio
import io
import json

from physlab.api import solve_async
from physlab.problems import resolve_problem
from physlab.run.console import make_console
from physlab.run.events import EVENT, Other, RunEvent, RunFinished, RunStarted, Step, as_event
from physlab.run.options import RunOptions
from physlab.run.runner import Shared, run
from physlab.strategies import registry

QEC = "examples/quantum_error_correction_main"


def _typed_run(tmp_path, strategy: str, model: str) -> list[RunEvent]:
    seen: list[RunEvent] = []

    def sink(event, /, **data):
        seen.append(as_event(event, data))

    options = RunOptions(strategy=strategy, model=model)
    asyncio.run(run(resolve_problem(QEC), registry.build(strategy), options, Shared(events=sink),
                    workspace=tmp_path / strategy))
    return seen


def test_every_event_of_a_run_is_a_known_typed_event(tmp_path):
    for strategy, model in (("lab", "scripted:lab-qec"), ("rsa", "scripted:rsa-qec")):
        seen = _typed_run(tmp_path, strategy, model)
        unknown = [e for e in seen if isinstance(e, Other)]
        assert not unknown, unknown
        assert isinstance(seen[0], RunStarted) and isinstance(seen[-1], RunFinished)
        assert {e.kind for e in seen} >= {"run_started", "usage", "run_finished"}
        for e in seen:  # each survives its own JSON line and reads back as the same event
            assert EVENT.validate_json(json.dumps({"kind": e.kind, **e.data()})) == e


def test_the_api_callback_gets_kind_and_fields(tmp_path):
    said: list[tuple[str, dict]] = []
    asyncio.run(solve_async(QEC, "oneshot", "scripted:oneshot-qec-correct", workspace=tmp_path / "one",
                            events=lambda kind, **data: said.append((kind, data))))
    kinds = [k for k, _ in said]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and "step" in kinds
    started = said[0][1]
    assert started["strategy"] == "oneshot" and started["problem_id"] and started["workspace"].endswith("one")
    assert said[-1][1]["status"] == "complete" and said[-1][1]["verdict"] == "correct"


def test_json_console_prints_what_the_sender_set():
    out = io.StringIO()
    make_console("json", stream=out)(Step(strategy="rsa", step="aggregate", population=4))
    assert json.loads(out.getvalue()) == {"event": "step", "strategy": "rsa", "step": "aggregate", "population": 4}


def test_a_request_still_out_is_a_seam_event_every_view_shows():
    """The model seam says every minute that a request is still out (``waiting``): a typed event of
    the seam's, never an unknown kind; the live panels show it where a rate limit's wait shows, the
    lines console prints it."""
    from physlab.lab.console import LabView
    from physlab.run.events import SEAM_EVENTS
    from physlab.run.progress import RunView

    said = {"role": "solver", "model": "openai:small", "wait_s": 60, "text": "solver: waiting for the model (60 s)"}
    event = as_event("waiting", said)
    assert not isinstance(event, Other) and isinstance(event, SEAM_EVENTS)
    assert event.data() == said  # the API's callback gets back what the seam said
    for view in (RunView("oneshot"), LabView()):
        view.feed("waiting", said)
        assert view.waiting == said["text"]
    out = io.StringIO()
    make_console("lines", stream=out)("waiting", **said)
    assert "waiting for the model (60 s)" in out.getvalue()
