"""`python -m physlab.llm.standin` plays what its Python API plays, from its command line: a scripted
scenario over HTTP (the lab's roles read from their instructions), a required key, real servers'
habits and faults, on 127.0.0.1 only; it prints its base URL and stops itself. A user checks a
setup end to end without writing Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import openai
import pytest
from openai import OpenAI
from typer.testing import CliRunner

from physlab.cli import app

KEY = "sk-standin-command-line"


def _start(*args: str, key: str | None = None) -> subprocess.Popen:
    env = {**os.environ, **({"STANDIN_TEST_KEY": key} if key else {})}
    return subprocess.Popen([sys.executable, "-m", "physlab.llm.standin", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _url(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise AssertionError(f"no base URL; stderr: {proc.stderr.read()[-2000:]}")
    assert line.startswith("http://127.0.0.1:") and line.endswith("/v1"), line
    return line


def _stop(proc: subprocess.Popen) -> dict:
    """Close its stdin (it stops) and read the JSON line of what it served."""
    try:
        out, err = proc.communicate(input="", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _client(url: str, key: str = "none") -> OpenAI:
    return OpenAI(base_url=url, api_key=key, max_retries=0, timeout=60)


@pytest.mark.slow
def test_physlab_solves_the_lab_over_http_against_the_command_line_standin(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_TEST_KEY", KEY)
    proc = _start("--scenario", "lab-qec", "--api-key-env", "STANDIN_TEST_KEY", key=KEY)
    try:
        url = _url(proc)
        res = CliRunner().invoke(app, [
            "solve", "examples/quantum_error_correction_main", "--strategy", "lab", "--model", "openai:qwen3-32b",
            "--api-base", url, "--api-key-env", "STANDIN_TEST_KEY", "--workspace", str(tmp_path / "run"),
            "--console", "quiet", "--json"])
    finally:
        stats = _stop(proc)
    assert res.exit_code == 0, res.output
    metrics = json.loads(res.stdout)
    assert metrics["status"] == "complete", metrics
    assert metrics["verdict"]["verdict"] == "correct"
    # every role was played over HTTP, with the key, and the tokens are what the stand-in reported
    assert stats["answered"] >= 9 and stats["faults"].get("unauthorized", 0) == 0
    assert metrics["totals"]["input_tokens"] == stats["prompt_tokens"]


def test_models_check_passes_against_the_command_line_standin_playing_the_lab(capsys):
    from physlab.cli import main

    proc = _start("--scenario", "lab-qec", "--context-window", "65536", "--prefix-cache")
    try:
        url = _url(proc)
        with pytest.raises(SystemExit) as exc:
            main(["models", "check", "openai:qwen3-32b", "--api-base", url])
    finally:
        stats = _stop(proc)
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    assert "ok    output mode: use --output-mode tool" in out and "ok    context window: 65,536 tokens" in out
    assert "off_script" not in stats.get("modes", {})  # the probes were answered, not the lab's scenario confused


def test_a_request_without_its_key_is_refused_and_one_with_it_gets_the_scenario():
    proc = _start("--scenario", "scripted:oneshot-qec-correct", "--api-key", KEY)
    try:
        url = _url(proc)
        with _client(url, "sk-wrong") as wrong, pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model="m", messages=[{"role": "user", "content": "Solve it."}])
        with _client(url, KEY) as right:
            reply = right.chat.completions.create(model="m", messages=[{"role": "user", "content": "Solve it."}])
    finally:
        stats = _stop(proc)
    assert "def answer(p):" in reply.choices[0].message.content
    assert stats["faults"] == {"unauthorized": 1} and stats["answered"] == 1


def test_habits_from_the_command_line_no_usage_no_tools_and_a_small_window():
    proc = _start("--reply", "ready", "--no-usage", "--refuse-tools", "--context-window", "300")
    try:
        url = _url(proc)
        with _client(url) as client:
            plain = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Say ready."}])
            tool = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}
            with pytest.raises(openai.BadRequestError, match="--enable-auto-tool-choice"):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Add."}], tools=[tool])
            with pytest.raises(openai.BadRequestError, match="maximum context length is 300 tokens"):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x " * 1000}])
    finally:
        stats = _stop(proc)
    assert plain.choices[0].message.content == "ready"
    assert plain.usage is None  # the habit: no usage block in the reply
    assert stats["faults"] == {"tools_refused": 1, "context_refused": 1}


def test_faults_from_the_command_line_are_served_in_order():
    proc = _start("--reply", "ready", "--fault", "server_error*2", "--fault", "rate_limit:retry_after=3")
    try:
        url = _url(proc)
        with _client(url) as client:
            def ask():
                return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi."}])

            for _ in range(2):
                with pytest.raises(openai.InternalServerError):
                    ask()
            with pytest.raises(openai.RateLimitError) as limited:
                ask()
            ok = ask()
    finally:
        stats = _stop(proc)
    assert limited.value.response.headers["retry-after"] == "3"
    assert ok.choices[0].message.content == "ready"
    assert stats["faults"] == {"server_error": 2, "rate_limit": 1}


def test_it_stops_itself_after_max_seconds_with_its_stdin_still_open():
    proc = _start("--reply", "ready", "--max-seconds", "1")
    try:
        _url(proc)
        started = time.monotonic()
        proc.wait(timeout=60)  # nobody closes its stdin
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and time.monotonic() - started < 60
    assert json.loads(out.strip().splitlines()[-1])["requests"] == 0


def test_started_in_the_background_it_serves_until_max_seconds(tmp_path):
    # a job started with `&` in a script has /dev/null for stdin: that is no reason to stop at once
    out_path = tmp_path / "standin.out"
    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "physlab.llm.standin", "--reply", "ready", "--max-seconds", "5"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not out_path.read_text().strip() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)  # polling a file another process writes
            url = out_path.read_text().splitlines()[0]
            with _client(url) as client:
                reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi."}])
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert reply.choices[0].message.content == "ready"
    assert proc.returncode == 0 and "stdin is /dev/null" in proc.stderr.read()
    assert json.loads(out_path.read_text().splitlines()[-1])["answered"] == 1


@pytest.mark.parametrize("args, needle", [
    (["--host", "0.0.0.0"], "127.0.0.1"),
    (["--scenario", "lab-qecc"], "unknown scripted scenario 'lab-qecc'"),
    (["--api-key-env", "PHYSLAB_NO_SUCH_VARIABLE"], "PHYSLAB_NO_SUCH_VARIABLE"),
    (["--fault", "meteor"], "unknown fault 'meteor'"),
    (["--scenario", "lab-qec", "--reply", "x"], "--reply"),
])
def test_bad_options_are_one_line_and_exit_2_before_it_serves(args, needle):
    proc = _start(*args)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert out == ""  # no URL: it never served
    assert "Traceback" not in err and needle in err, err
