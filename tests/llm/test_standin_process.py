"""`python -m physlab.llm.standin` as its own process: prints its URL, serves OpenAI chat
completions, and on stdin's end prints what it served and the CPU it used."""

from __future__ import annotations

import json
import subprocess
import sys

from openai import OpenAI

REPLY = "The answer is 42, obviously."


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "physlab.llm.standin", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_serves_one_completion_and_reports_it_when_stdin_closes():
    proc = _start("--latency", "0", "--reply", REPLY)
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), base_url
        with OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=30) as client:
            resp = client.chat.completions.create(
                model="standin", messages=[{"role": "user", "content": "What is six times seven?"}])
        assert resp.choices[0].message.content == REPLY
        assert resp.choices[0].finish_reason == "stop"
        out, err = proc.communicate(input="", timeout=30)  # closes stdin: the server stops
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 1  # the URL was read above; one JSON line follows
    stats = json.loads(lines[0])
    assert stats["requests"] == 1 and stats["answered"] == 1
    # it counts exactly the tokens it reported to the client
    assert (stats["prompt_tokens"], stats["completion_tokens"]) == (resp.usage.prompt_tokens,
                                                                    resp.usage.completion_tokens)
    assert stats["cpu_s"] >= 0
    assert stats["max_in_flight"] == 1


def test_missing_reply_file_is_one_error_line_and_exit_2(tmp_path):
    missing = tmp_path / "no_such_reply.txt"
    proc = _start("--reply-file", str(missing))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert out == ""  # no URL: it never started serving
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:"), err
    assert "no_such_reply.txt" in err
