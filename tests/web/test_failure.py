"""A run that failed shows why on its page — the error and the role — not only in error.log."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient

from physlab.api import solve_async
from physlab.llm.scripted import register_scenario
from physlab.problems import resolve_problem
from physlab.strategies import registry
from physlab.strategies.oneshot import OneShot
from physlab.web import create_app

LOCAL = "http://127.0.0.1"  # the dashboard answers loopback hosts only

QEC = "examples/quantum_error_correction_main"


class Unreachable:
    """A provider that fails every request (what the recording model retries, then gives up on)."""

    def __call__(self, role, messages, info):
        raise RuntimeError("upstream returned HTTP 502 Bad Gateway")


class Buggy(OneShot):
    """A strategy with a bug after its first call."""

    async def run(self, ctx):
        await super().run(ctx)
        raise KeyError("population")


def test_a_model_failure_shows_the_error_and_the_role(tmp_path):
    register_scenario("ux-unreachable", Unreachable)
    attempt = asyncio.run(solve_async(resolve_problem(QEC), "oneshot", "scripted:ux-unreachable",
                                     workspace=tmp_path / "failed"))
    assert attempt.status == "error"
    html = TestClient(create_app(tmp_path), base_url=LOCAL).get("/runs/failed").text
    assert 'id="failure"' in html and "The run failed" in html
    assert '<b id="failure-role">solver</b> (its model call failed)' in html
    assert "upstream returned HTTP 502 Bad Gateway" in html.split('id="failure"')[1].split("</section>")[0]


def test_a_strategy_bug_shows_the_exception_and_the_role_at_work(tmp_path):
    registry.register_strategy("ux-buggy", Buggy)
    attempt = asyncio.run(solve_async(resolve_problem(QEC), "ux-buggy", "scripted:oneshot-qec-correct",
                                     workspace=tmp_path / "bug"))
    assert attempt.status == "error" and (tmp_path / "bug" / "error.log").is_file()
    c = TestClient(create_app(tmp_path), base_url=LOCAL)
    box = c.get("/runs/bug").text.split('id="failure"')[1].split("</section>")[0]
    assert '<b id="failure-role">solver</b> (at work when it ended)' in box
    assert "KeyError: &#39;population&#39;" in box and 'id="error-log"' in box and "Traceback" in box
    assert "KeyError" in c.get("/api/runs/bug/files/error.log").text
    html = c.get("/runs/bug").text
    assert html.count('id="failure"') == 1 and html.index('id="failure"') < html.index('id="usage"')
