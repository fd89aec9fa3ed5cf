"""What `physlab solve` says at the end: the final answer itself (not only where it is), and on
Ctrl-C exit 130 with the command that continues the run -- which does continue it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from physlab.cli import app
from physlab.llm.scripted import register_scenario
from physlab.llm.standin import ScenarioResponder, StandinServer
from tests.lab.helpers import lab_role_of

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_solve_prints_the_final_answer(tmp_path):
    res = runner.invoke(app, ["solve", "examples/sm_ising_1d", "--model", "scripted:examples-strong", "-s", "oneshot",
                              "--workspace", str(tmp_path / "ising"), "--console", "quiet"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Z = (2*sp.cosh(beta*J))**N + (2*sp.sinh(beta*J))**N" in out   # what the run filled in, not the path only
    assert "f = -sp.log(2*sp.cosh(beta*J))/beta" in out
    assert "import sympy" not in out and '"""' not in out                   # not the whole template
    assert str(tmp_path / "ising" / "ANSWER.md") in out


def test_the_answers_path_stays_on_one_line_however_long(tmp_path):
    ws = tmp_path / ("a-workspace-whose-name-is-as-long-as-a-timestamped-run-folder-" + "x" * 40)
    res = runner.invoke(app, ["solve", "examples/sm_ising_1d", "--model", "scripted:examples-strong", "-s", "oneshot",
                              "--workspace", str(ws), "--console", "quiet"])
    assert res.exit_code == 0, res.output
    assert f"the whole answer: {ws / 'ANSWER.md'}\n" in res.output    # copied from the terminal, it still opens


def test_solve_prints_a_written_answer_and_says_when_there_is_none(tmp_path):
    reply = ("We use the virial theorem: $\\langle T\\rangle = -E$.\n\nSo the energy is negative.\n\n"
             "**Final answer:** $E_1 = -\\tfrac12 \\alpha^2 m_e c^2$\n")
    register_scenario("first-hour-written", lambda: (lambda role, messages, info: reply))
    q = tmp_path / "bohr.md"
    q.write_text("# Bohr\n\nWhat is the ground-state energy of hydrogen in the Bohr model?\n")
    res = runner.invoke(app, ["solve", str(q), "--model", "scripted:first-hour-written", "-s", "oneshot",
                              "--workspace", str(tmp_path / "bohr"), "--console", "quiet"])
    assert res.exit_code == 0, res.output
    assert "E_1 = -\\tfrac12 \\alpha^2 m_e c^2" in res.output and "virial" not in res.output

    register_scenario("first-hour-silent", lambda: (lambda role, messages, info: "I am not sure."))
    res = runner.invoke(app, ["solve", "examples/sm_ising_1d", "--model", "scripted:first-hour-silent", "-s",
                              "oneshot", "--workspace", str(tmp_path / "none"), "--console", "quiet"])
    assert res.exit_code == 1
    assert "no final answer" in res.output and "Z = " not in res.output


# `python -m physlab` with SIGINT at Python's default handler (a suite started in the background
# by a non-interactive shell inherits SIGINT ignored; a terminal's Ctrl-C reaches a default handler).
_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "runpy.run_module('physlab', run_name='__main__', alter_sys=True)")


def _physlab(*args: str, ctrl_c: bool = False, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    launch = ["-c", _WITH_CTRL_C] if ctrl_c else ["-m", "physlab"]
    return subprocess.Popen([sys.executable, *launch, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env, **kw)


def test_ctrl_c_on_solve_exits_130_with_the_command_that_resumes_it(tmp_path):
    ws = tmp_path / "qec"
    hold, requests = threading.Event(), []

    def latency(body) -> float:  # the lab's 6th request hangs: the run is in the middle of an iteration
        requests.append(1)
        if len(requests) == 6:
            hold.wait(120)
        return 0.0

    with StandinServer(ScenarioResponder("lab-qec", lab_role_of()), latency_s=latency) as srv:
        proc = _physlab("solve", "examples/quantum_error_correction_main", "--model", "openai:standin",
                        "--api-base", srv.base_url, "--workspace", str(ws), "--console", "lines", ctrl_c=True)
        deadline = time.monotonic() + 120
        while len(requests) < 6 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert len(requests) >= 6, proc.communicate()[1]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        hold.set()
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        last = err.strip().splitlines()[-1]
        assert last.startswith("interrupted") and f"physlab solve --resume {ws}" in last, err

        resumed = _physlab("solve", "--resume", str(ws), "--console", "quiet")
        out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert json.loads((ws / "metrics.json").read_text())["verdict"]["verdict"] == "correct"
