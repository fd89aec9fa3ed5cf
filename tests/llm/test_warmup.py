"""warm_openai_path: a sweep worker's dry run of the request path never touches the network and
never writes a file."""

from __future__ import annotations

import socket

from physlab.llm.warmup import warm_openai_path


async def test_warm_up_needs_no_network_and_writes_nothing(tmp_path, monkeypatch):
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)  # not even a name lookup
    monkeypatch.chdir(tmp_path)

    await warm_openai_path()
    await warm_openai_path()  # a second worker start in the same process is just as quiet

    assert attempts == []
    assert list(tmp_path.iterdir()) == []
