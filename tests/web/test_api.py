"""Every dashboard endpoint through FastAPI's TestClient: content, escaping, path safety, tokens,
actions reaching the run's inbox (and malformed ones changing nothing), SSE change detection."""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from physlab.lab import inbox
from physlab.lab.state import transitions as T
from physlab.lab.workspace import RunWorkspace
from physlab.web import create_app


@pytest.fixture
def client(runs_root):
    return TestClient(create_app(runs_root, poll_s=0.05, sse_max_s=0.3), base_url="http://127.0.0.1")


def test_runs_list_html_and_json(client):
    rows = {r["id"]: r for r in client.get("/api/runs").json()}
    assert set(rows) == {"lab1", "sweep/cell1"}                   # the symlinked run out of the root is not listed
    lab = rows["lab1"]
    # its state says running, and no process runs it: interrupted
    assert (lab["status"], lab["strategy"], lab["problem"], lab["iteration"]) == ("interrupted", "lab", "demo_problem", 2)
    assert lab["tokens"] == 100 + 20 + 300 + 50 and lab["model"] == "scripted:test" and lab["calls"] == 2
    cell = rows["sweep/cell1"]
    assert (cell["verdict"], cell["tokens"], cell["cost_usd"], cell["strategy"]) == ("correct", 15, 0.5, "oneshot")
    page = client.get("/").text
    assert 'href="/runs/lab1"' in page and 'href="/runs/sweep/cell1"' in page and "outside_run" not in page
    assert client.get("/fragments/runs").text.startswith('<table id="runs-table">')


def test_run_page_renders_graph_math_and_escapes_model_output(client):
    html = client.get("/runs/lab1").text
    assert "<script>window" not in html and "<img src=x" not in html and "onerror=\"window" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<math" in html and "<mfrac>" in html                    # $\frac{1}{2}(1+x)$ as MathML
    assert 'id="card-ER-1"' in html and "demoted" in html and "upheld: sign error" in html
    assert "iteration 2: WH-1 VERIFIED -&gt; ER-1" in html           # timeline from git
    assert 'aria-label="tokens per role"' in html and "orchestrator" in html
    assert "350 tok (200 cached) · 1 calls" in html                  # the computer's input read from the prompt cache
    assert "plan the work" in html and "dispatch computer" in html   # prompt and reply of a call
    assert client.get("/fragments/runs/lab1").text.startswith('<p id="run-status"')


def test_run_json_calls_and_files(client):
    d = client.get("/api/runs/lab1").json()
    assert d["state"]["ers"][0]["status"] == "demoted" and len(d["history"]) == 3
    assert d["usage_by_role"]["computer"]["input_tokens"] == 300 and d["calls"] == 2
    call = client.get("/api/runs/lab1/calls/1").json()
    assert call["role"] == "computer" and call["response"]["parts"][0]["content"] == "done"
    assert client.get("/api/runs/lab1/calls/2").status_code == 404
    assert "[[4,2,2]]" in client.get("/api/runs/lab1/files/PROBLEM.md").text
    assert client.get("/api/runs/lab1/files/calls.jsonl").status_code == 404    # not a served file
    assert client.get("/api/runs/nope").status_code == 404


def test_hostile_text_from_any_run_file_is_escaped_on_every_page(tmp_path):
    """Whatever a model or a run wrote (metrics, calls, answers, a run directory's own name) is text
    on the page, never markup; and the pages forbid inline scripts anyway (CSP)."""
    from tests.web.helpers import XSS, call_line, write_metrics

    root = tmp_path / "runs"
    ws = root / "x<svg onload=alert(1)>"
    write_metrics(ws, strategy=XSS, model=XSS, problem_id=XSS,
                  verdict={"verdict": "incorrect", "reason": XSS})
    (ws / "calls.jsonl").write_text(call_line(XSS, XSS, XSS).replace('"error":null', f'"error":{json.dumps(XSS)}'))
    (ws / "ANSWER.md").write_text("The answer $x^2$ " + XSS)
    (ws / "answer.py").write_text("def answer():\n    return '" + XSS + "'\n")
    (ws / "PROBLEM.md").write_text(XSS)
    client = TestClient(create_app(root), base_url="http://127.0.0.1")
    run_url = "/runs/" + quote(ws.name)
    for url in ("/", "/fragments/runs", run_url, "/fragments" + run_url):
        r = client.get(url)
        assert r.status_code == 200, url
        assert "<script>" not in r.text and "<img src=x" not in r.text and "<svg onload" not in r.text, url
        assert "script-src 'self'" in r.headers["content-security-policy"]
    page = client.get(run_url).text
    assert page.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 6  # shown, as text
    assert '<span class="badge invalid">&lt;script&gt;' in page            # the call's error, escaped
    assert "<math" in page                                                 # the answer's LaTeX still renders
    assert client.get("/login").status_code in (200, 303)


TRAVERSALS = ["../secret.txt", "..%2Fsecret.txt", "%2e%2e/secret.txt", "%2e%2e%2fsecret.txt", "//etc/passwd",
              "%2Fetc%2Fpasswd", "%2F%2Fetc/passwd", "escape", "lab1/../../outside_run", "sweep/../../outside_run",
              "lab1%2F..%2F..%2Foutside_run", "..", "%2e%2e", ".", "lab1/..", "..%5Csecret.txt", "lab1%00",
              "sweep/cell1/../../../outside_run", "/tmp", "lab1/.git"]


@pytest.mark.parametrize("rid", TRAVERSALS)
def test_no_path_outside_the_runs_dir(client, rid):
    for url in (f"/runs/{rid}", f"/api/runs/{rid}", f"/fragments/runs/{rid}", f"/api/runs/{rid}/files/PROBLEM.md",
                f"/api/runs/{rid}/calls/0", f"/api/events/runs/{rid}"):
        r = client.get(url, follow_redirects=False)    # (a redirect would open an endless stream)
        if r.status_code < 400:      # the client itself normalised a plain ".." segment away
            assert "/.." not in r.request.url.raw_path.decode() and rid.strip("./") in ("", "lab1"), url
        else:
            assert r.status_code < 500 and "location" not in r.headers or "/.." not in r.headers["location"], url
        assert "TOP-SECRET" not in r.text and "root:" not in r.text
    r = client.post(f"/api/runs/{rid}/actions", json={"kind": "hint", "text": "x"})
    assert 400 <= r.status_code < 500


def test_symlinked_file_out_of_the_root_is_not_served(client):
    assert client.get("/api/runs/lab1/files/LOG.md").status_code == 404
    assert "TOP-SECRET" not in client.get("/runs/lab1").text


def test_actions_reach_the_inbox(client, runs_root):
    r = client.post("/api/runs/lab1/actions", json={"kind": "comment", "on": "WH-1", "text": "check $p=1$"})
    assert r.status_code == 200 and r.json()["queued"]
    r = client.post("/api/runs/lab1/actions", json={"kind": "stop"})
    assert r.status_code == 200
    msgs = inbox.read(runs_root / "lab1")
    assert [(m["kind"], m["on"], m["text"]) for m in msgs] == [("comment", "WH-1", "check $p=1$"), ("stop", None, "")]
    assert "waiting for the run to be resumed" in client.get("/fragments/runs/lab1").text   # nobody runs it


BAD_ACTIONS = [
    ({"kind": "delete"}, 422), ({"kind": "comment", "text": "x"}, 400), ({"kind": "comment", "on": "ER-9", "text": "x"}, 400),
    ({"kind": "comment", "on": "../x", "text": "x"}, 422), ({"kind": "challenge", "on": "WH-1", "text": "x"}, 400),
    ({"kind": "hint"}, 422), ({"kind": "hint", "text": "x" * 20001}, 422), ({"text": "x"}, 422), ([1, 2], 422),
]


@pytest.mark.parametrize("payload,code", BAD_ACTIONS)
def test_malformed_actions_change_nothing(client, runs_root, payload, code):
    before = (runs_root / "lab1" / "state.json").read_bytes()
    r = client.post("/api/runs/lab1/actions", json=payload)
    assert r.status_code == code, r.text
    assert inbox.read(runs_root / "lab1") == [] and (runs_root / "lab1" / "state.json").read_bytes() == before


def test_actions_need_json_same_origin_and_a_lab_run(client, runs_root):
    assert client.post("/api/runs/lab1/actions", data={"kind": "stop"}).status_code == 415
    assert client.post("/api/runs/lab1/actions", content=b"{bad", headers={"content-type": "application/json"}).status_code == 422
    r = client.post("/api/runs/lab1/actions", json={"kind": "stop"}, headers={"origin": "http://evil.example"})
    assert r.status_code == 403
    assert client.post("/api/runs/sweep/cell1/actions", json={"kind": "stop"}).status_code == 409
    assert inbox.read(runs_root / "lab1") == []


def test_resume_accepts_what_the_cli_accepts(runs_root, tmp_path):
    seen = []
    app = create_app(runs_root, resumer=lambda run, summary, problem, lock: seen.append((run.name, problem)) or "resuming")
    c = TestClient(app, base_url="http://127.0.0.1")
    problem = tmp_path / "demo.yaml"
    problem.write_text("id: demo_problem\nproblem: Find $F(p)$.\n")

    def resume(spec=str(problem)):
        return c.post("/api/runs/lab1/actions", json={"kind": "resume", "problem": spec})

    ws = RunWorkspace(runs_root / "lab1")
    for status in ("paused", "stopped", "complete", "partially_complete", "no_answer"):  # all `--resume` takes
        ws.commit(T.set_status(ws.load(), status, "test"), f"iteration 3: {status}")
        assert resume().status_code == 200
    assert seen == [("lab1", str(problem))] * 5
    # a problem that does not load, or another run's: refused in one line before anything starts
    r = resume(str(tmp_path / "missing.yaml"))
    assert r.status_code == 400 and r.json()["detail"].startswith("problem: ") and "\n" not in r.json()["detail"]
    other = tmp_path / "other.yaml"
    other.write_text("id: other_problem\nproblem: Find $G$.\n")
    r = resume(str(other))
    assert r.status_code == 400 and "this run is on 'demo_problem'" in r.json()["detail"]
    assert len(seen) == 5


def test_token_required_when_set(runs_root):
    c = TestClient(create_app(runs_root, token="s3cret-token"), base_url="http://127.0.0.1")
    r = c.get("/")
    assert r.status_code == 401 and 'name="token"' in r.text and "lab1" not in r.text
    assert c.get("/api/runs").status_code == 401 and c.get("/runs/lab1").status_code == 401
    assert c.get("/static/app.js").status_code == 200
    assert c.post("/api/runs/lab1/actions", json={"kind": "stop"}).status_code == 401
    assert inbox.read(runs_root / "lab1") == []
    assert c.get("/api/runs", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/api/runs", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
    assert c.get("/api/runs", headers={"x-physlab-token": "s3cret-token"}).status_code == 200
    assert c.post("/login", data={"token": "nope"}, follow_redirects=False).status_code == 401
    r = c.post("/login", data={"token": "s3cret-token"}, follow_redirects=False)   # posted, never in a URL
    assert r.status_code == 303 and "httponly" in r.headers["set-cookie"].lower()
    assert c.get("/").status_code == 200                            # the cookie now opens everything
    assert c.post("/api/runs/lab1/actions", json={"kind": "stop"}).status_code == 200


def test_loopback_mode_refuses_foreign_host_headers(client):
    assert client.get("/api/runs", headers={"host": "evil.example:8765"}).status_code == 403
    assert client.get("/api/runs", headers={"host": "127.0.0.1:8765"}).status_code == 200


def test_sse_sends_an_event_when_the_run_changes(runs_root):
    c = TestClient(create_app(runs_root, poll_s=0.05, sse_max_s=1.2), base_url="http://127.0.0.1")

    def touch():
        time.sleep(0.4)
        inbox.post(runs_root / "lab1", "hint", "try symmetry")

    t = threading.Thread(target=touch)
    t.start()
    with c.stream("GET", "/api/events/runs/lab1") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        body = "".join(r.iter_text())
    t.join()
    assert body.count("event: run\n") == 2                          # the initial one and the change
    with c.stream("GET", "/api/events") as r:
        assert "event: runs\n" in "".join(r.iter_text())
