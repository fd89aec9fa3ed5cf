"""warm_openai_path: a sweep worker's dry run of the request path (the SDK's, the direct client's,
or both: the default) never touches the network and never writes a file."""

from __future__ import annotations

import socket

import pytest

from physlab.llm.warmup import warm_openai_path


def _no_network(monkeypatch) -> list[object]:
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)  # not even a name lookup
    return attempts


async def test_warm_up_needs_no_network_and_writes_nothing(tmp_path, monkeypatch):
    attempts = _no_network(monkeypatch)
    monkeypatch.chdir(tmp_path)

    await warm_openai_path()
    await warm_openai_path()  # a second worker start in the same process is just as quiet

    assert attempts == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("client", ["sdk", "direct"])
async def test_warm_up_of_one_client_needs_no_network_and_writes_nothing(tmp_path, monkeypatch, client):
    attempts = _no_network(monkeypatch)
    monkeypatch.chdir(tmp_path)

    await warm_openai_path(client)
    await warm_openai_path(client)

    assert attempts == []
    assert list(tmp_path.iterdir()) == []
