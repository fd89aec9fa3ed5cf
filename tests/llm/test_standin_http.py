"""The stand-in's HTTP: keep-alive, pipelining, the error answers, and the bodies it refuses, seen
from plain sockets and the standard library's client."""

from __future__ import annotations

import http.client
import json
import socket

from physlab.llm.standin import ScriptedResponder, StandinServer

CHAT = json.dumps({"model": "standin", "messages": [{"role": "user", "content": "hi"}]}).encode()


def _post(path: str = "/v1/chat/completions", body: bytes = CHAT, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def test_keep_alive_answers_several_requests_on_one_connection():
    with StandinServer(ScriptedResponder(["one", "two", "three"])) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        replies = []
        for _ in range(3):
            conn.request("POST", "/v1/chat/completions", CHAT, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200 and resp.getheader("Content-Type") == "application/json"
            replies.append(json.loads(resp.read())["choices"][0]["message"]["content"])
        conn.request("GET", "/v1/models")
        assert json.loads(conn.getresponse().read())["data"][0]["id"] == "standin"
        conn.close()
    assert replies == ["one", "two", "three"] and srv.stats.requests == 3 and srv.stats.max_in_flight == 1


def test_pipelined_requests_are_answered_in_order_and_connection_close_is_honoured():
    with StandinServer(ScriptedResponder(["first", "second"])) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            sock.sendall(_post() + _post(extra="Connection: close\r\n"))  # both at once, in one write
            raw = _read_all(sock)  # the server closes after the second answer
    heads = raw.split(b"HTTP/1.1 ")[1:]
    assert [h[:3] for h in heads] == [b"200", b"200"]
    assert raw.index(b'"first"') < raw.index(b'"second"') and b"Connection: close" in heads[1]


def test_error_answers_are_json_with_a_message():
    with StandinServer() as srv:
        cases = {
            _post("/v1/nowhere"): b"404",
            _post(body=b"{not json"): b"400",
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n": b"411",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: nine\r\n\r\n": b"400",
        }
        for request, status in cases.items():
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
                sock.sendall(request)
                head, _, body = sock.recv(65536).partition(b"\r\n\r\n")
            assert head.split(b" ")[1] == status, (request, head)
            assert json.loads(body)["error"]["message"]
    assert srv.stats.requests == 0  # none of them reached the model


def test_a_client_that_leaves_before_its_answer_does_not_stop_the_server():
    with StandinServer(ScriptedResponder(["late", "next"]), latency_s=0.2) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            sock.sendall(_post())
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        conn.request("POST", "/v1/chat/completions", CHAT, {"Content-Type": "application/json"})
        assert conn.getresponse().status == 200
        conn.close()
    assert srv.stats.requests == 2 and srv.stats.in_flight == 0


def test_latency_drawn_per_request_is_applied_and_recorded_per_completion():
    drawn = iter([0.05, 0.3])
    with StandinServer(ScriptedResponder(["fast", "slow"]), latency_s=lambda body: next(drawn)) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        ids = []
        for _ in range(2):
            conn.request("POST", "/v1/chat/completions", CHAT, {"Content-Type": "application/json"})
            ids.append(json.loads(conn.getresponse().read())["id"])
        conn.close()
    (t1, l1), (t2, l2) = srv.served[ids[0]], srv.served[ids[1]]
    assert (l1, l2) == (0.05, 0.3)
    assert t2 - t1 >= 0.05  # the second request was sent after the first one's latency
