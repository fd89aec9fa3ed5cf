"""Ctrl-C on `physlab solve` under its live panel, on a real (pseudo-)terminal: the line that says
where the run is and how to continue it is the last thing on the screen, not painted over by the
panel's last redraw (issue 44). The screen is what a terminal emulator (pyte) makes of the bytes."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from physlab.llm.standin import ScenarioResponder, StandinServer
from tests.lab.helpers import lab_role_of

pyte = pytest.importorskip("pyte")

REPO = Path(__file__).resolve().parents[2]
COLS, ROWS = 250, 50
# SIGINT at Python's default handler (a suite started in the background inherits it ignored)
_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "runpy.run_module('physlab', run_name='__main__', alter_sys=True)")


def _on_a_terminal(argv: list[str]) -> tuple[subprocess.Popen, int]:
    """Start ``argv`` with a pseudo-terminal as its controlling terminal (stdin, stdout, stderr):
    a Ctrl-C typed there reaches it as a terminal's does."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), "TERM": "xterm-256color",
           "COLUMNS": str(COLS), "LINES": str(ROWS)}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    return proc, master


def _read_until_exit(master: int, proc: subprocess.Popen, timeout: float) -> bytes:
    out = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last process has gone
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return bytes(out)


def _screen(data: bytes) -> list[str]:
    screen = pyte.Screen(COLS, ROWS)
    pyte.ByteStream(screen).feed(data)
    return [line.rstrip() for line in screen.display]


@pytest.mark.slow
def test_ctrl_c_under_the_live_panel_leaves_the_resume_command_last_on_the_screen(tmp_path):
    ws = tmp_path / "qec"
    hold, requests = threading.Event(), []

    def latency(body) -> float:  # the lab's 6th request hangs: the run is in the middle of an iteration
        requests.append(1)
        if len(requests) == 6:
            hold.wait(120)
        return 0.0

    with StandinServer(ScenarioResponder("lab-qec", lab_role_of()), latency_s=latency) as srv:
        proc, master = _on_a_terminal([sys.executable, "-c", _WITH_CTRL_C, "solve",
                                       "examples/quantum_error_correction_main", "--model", "openai:standin",
                                       "--api-base", srv.base_url, "--workspace", str(ws), "--console", "live"])
        try:
            seen = bytearray()
            deadline = time.monotonic() + 120
            while len(requests) < 6 and time.monotonic() < deadline and proc.poll() is None:
                r, _, _ = select.select([master], [], [], 0.05)
                if r:
                    seen += os.read(master, 65536)
            assert len(requests) >= 6, seen.decode(errors="replace")[-2000:]
            os.write(master, b"\x03")  # Ctrl-C, typed: the terminal sends SIGINT to the foreground job
            seen += _read_until_exit(master, proc, 60)
            proc.wait(timeout=30)
        finally:
            hold.set()
            if proc.poll() is None:
                proc.kill()
            os.close(master)
    assert proc.returncode == 130
    lines = [line for line in _screen(bytes(seen)) if line.strip()]
    assert any("qec" in line or "iteration" in line.lower() for line in lines[:-1])  # the panel was drawn
    last = lines[-1]
    assert last.startswith("interrupted") and f"continue it with: physlab solve --resume {ws}" in last, \
        "\n".join(lines[-8:])
    assert "Traceback" not in "\n".join(lines)
