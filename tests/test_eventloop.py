"""Which event loop the commands run on (physlab.eventloop), and a bad setting as one line."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from physlab import eventloop
from physlab.errors import UserError
from physlab.llm.standin import StandinServer

uvloop = pytest.importorskip("uvloop")
REPO = Path(__file__).resolve().parents[1]


async def _loop_type() -> type:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop())


def test_commands_run_on_uvloop_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv(eventloop.ENV, raising=False)
    assert eventloop.run(_loop_type()) is uvloop.Loop
    monkeypatch.setenv(eventloop.ENV, "asyncio")
    assert not issubclass(eventloop.run(_loop_type()), uvloop.Loop)
    monkeypatch.setenv(eventloop.ENV, " UVLOOP ")
    assert eventloop.run(_loop_type()) is uvloop.Loop


def test_the_standin_serves_from_the_chosen_loop(monkeypatch):
    monkeypatch.setenv(eventloop.ENV, "asyncio")
    with StandinServer() as srv:
        assert not isinstance(srv._frontend._loop, uvloop.Loop)
    monkeypatch.delenv(eventloop.ENV)
    with StandinServer() as srv:
        assert isinstance(srv._frontend._loop, uvloop.Loop)


def test_a_bad_setting_is_one_line_and_nothing_runs(monkeypatch, tmp_path):
    monkeypatch.setenv(eventloop.ENV, "trio")
    ran = []

    async def work() -> None:
        ran.append(1)

    with pytest.raises(UserError, match="PHYSLAB_EVENT_LOOP.*auto, uvloop, asyncio.*'trio'"):
        eventloop.run(work())
    assert ran == []
    env = {**os.environ, eventloop.ENV: "trio"}
    for argv in (["bench", "run", "examples", "--strategies", "oneshot", "--models", "scripted:oneshot-qec-correct",
                  "--db", str(tmp_path / "r.sqlite"), "--workers", "2", "--no-progress"],
                 ["solve", "examples/quantum_error_correction_main", "--strategy", "oneshot",
                  "--model", "scripted:oneshot-qec-correct", "--workspace", str(tmp_path / "ws")]):
        p = subprocess.run([sys.executable, "-m", "physlab", *argv], capture_output=True, text=True, env=env,
                           cwd=REPO, timeout=120)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip().splitlines() == [
            "error: field 'PHYSLAB_EVENT_LOOP': expected one of auto, uvloop, asyncio, got 'trio'"], argv
    assert not (tmp_path / "r.sqlite").exists() and not (tmp_path / "ws").exists()
