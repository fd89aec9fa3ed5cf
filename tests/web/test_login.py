"""The access token never travels in a URL (where browser history, proxies and server logs keep
it): the page's form posts it, the server answers with a cookie and a redirect; a token in a GET
query is not taken."""

from __future__ import annotations

from fastapi.testclient import TestClient

from physlab.web import create_app

TOKEN = "s3cret-token-9f2"


def client(root) -> TestClient:
    return TestClient(create_app(root, token=TOKEN), base_url="http://127.0.0.1")


def test_the_form_posts_the_token_and_a_cookie_comes_back_with_a_redirect(runs_root):
    c = client(runs_root)
    page = c.get("/runs/lab1")
    assert page.status_code == 401 and 'method="post"' in page.text and 'action="/login"' in page.text
    assert 'name="next" value="/runs/lab1"' in page.text                 # back to the page asked for
    r = c.post("/login", data={"token": TOKEN, "next": "/runs/lab1"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/runs/lab1"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and TOKEN.lower() not in r.headers["location"]
    assert c.get("/runs/lab1").status_code == 200


def test_a_token_in_a_get_url_is_not_taken(runs_root):
    c = client(runs_root)
    r = c.get(f"/login?token={TOKEN}", follow_redirects=False)
    assert r.status_code == 401 and "set-cookie" not in r.headers and 'method="post"' in r.text
    assert c.get("/").status_code == 401


def test_a_wrong_token_or_a_foreign_redirect_gets_nothing(runs_root):
    c = client(runs_root)
    r = c.post("/login", data={"token": "nope"}, follow_redirects=False)
    assert r.status_code == 401 and "set-cookie" not in r.headers and "wrong token" in r.text
    for evil in ("//evil.example/", "https://evil.example/", "/\\evil.example", "/\t/evil.example",
                 "javascript:alert(1)"):
        r = c.post("/login", data={"token": TOKEN, "next": evil}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/"
    r = c.post("/login", data={"token": TOKEN}, headers={"origin": "http://evil.example"}, follow_redirects=False)
    assert r.status_code == 403 and "set-cookie" not in r.headers
