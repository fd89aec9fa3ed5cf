"""Run the dashboard with uvicorn in a background thread (tests, notebooks) and stop it cleanly."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from fastapi import FastAPI


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class BackgroundServer:
    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int | None = None):
        self.app, self.host, self.port = app, host, port or free_port(host)
        config = uvicorn.Config(app, host=self.host, port=self.port, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="physlab-ui", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the dashboard server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.app.state.stopping.set()      # ends the SSE streams so shutdown does not wait on them
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
