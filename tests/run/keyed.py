"""A lab run against the project's stand-in server behind a key (a LiteLLM proxy's habit: 401
without ``Authorization: Bearer <key>``), and `physlab` run as a user runs it (its own process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from physlab import api
from physlab.lab import inbox
from physlab.llm.standin import Habits, ScenarioResponder, StandinServer
from tests.lab.helpers import lab_role_of

KEY_ENV = "PHYSLAB_TEST_STANDIN_KEY"  # the variable the run names with --api-key-env
KEY = "sk-standin-4f1c9e"
QEC = "examples/quantum_error_correction_main"
REPO = Path(__file__).resolve().parents[2]


def keyed_standin() -> StandinServer:
    """The lab-qec scenario served over HTTP, to requests that carry the key only."""
    return StandinServer(ScenarioResponder("lab-qec", lab_role_of()), habits=Habits(api_key=KEY))


def pause_at(ws: Path, iteration: int):
    def events(kind: str, **data) -> None:
        if kind == "iteration" and data.get("iteration") == iteration:
            inbox.post(ws, "pause")
    return events


def paused_run(ws: Path, srv: StandinServer, monkeypatch, **options):
    """A lab run on the keyed stand-in that the physicist paused at iteration 2."""
    monkeypatch.setenv(KEY_ENV, KEY)
    record = api.solve(QEC, "lab", "openai:standin", workspace=ws, api_base=srv.base_url, api_key_env=KEY_ENV,
                       events=pause_at(ws, 2), **options)
    assert record.status == "paused", record
    return record


def physlab(*args: str, unset: tuple[str, ...] = (), cwd: Path | None = None, **env: str
            ) -> subprocess.CompletedProcess:
    """`physlab ARGS` in its own process, with this process's environment (minus ``unset``)."""
    environ = {k: v for k, v in {**os.environ, **env}.items() if k not in unset}
    environ["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    return subprocess.run([sys.executable, "-m", "physlab", *args], capture_output=True, text=True, env=environ,
                          cwd=cwd, timeout=600, stdin=subprocess.DEVNULL)


def run_files(ws: Path) -> dict[str, bytes]:
    """The files a run's record lives in, as bytes (to show a refused resume changed nothing)."""
    return {name: (ws / name).read_bytes() for name in ("metrics.json", "run.json", "state.json", "calls.jsonl")
            if (ws / name).is_file()}
