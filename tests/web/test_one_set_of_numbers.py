"""One database gives one set of numbers wherever it is shown (issue #44, item 1): the dashboard's
Sweeps page (its data endpoint, and the page itself in Chromium) shows the figures `physlab bench
report` prints -- the same accuracy intervals with the CritPt challenge as the unit, the same paired
comparisons with their adjusted intervals and Holm p-values. Before, the dashboard lost the
challenges (its filtered view of the cells had no problems table) and printed Clopper-Pearson over
the problems where the report printed Korn-Graubard over the challenges."""

from __future__ import annotations

import json
import os
import re

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from physlab.bench.report import build_report
from physlab.bench.report_render import print_report
from physlab.bench.store import CellResult, CellSpec, LostAttempt, ResultsStore, worker_id
from physlab.cli import main
from physlab.llm.usage import Usage
from physlab.problems.model import Problem
from physlab.web import create_app
from physlab.web.server import BackgroundServer
from tests.web.helpers import ARTIFACTS, CHROMIUM

LOCAL = "http://127.0.0.1"

# Six challenges: three of three sub-problems (solved or failed together, as a challenge's parts
# tend to be) and three single problems: twelve problems, six independent units.
CHALLENGES = {"qec": 3, "ising": 3, "dirac": 3, "orbit": 1, "photon": 1, "beta": 1}
SOLVED = {  # (strategy, model) -> the challenges it solves
    ("oneshot", "scripted:strong"): {"qec", "orbit", "photon"},
    ("oneshot", "scripted:weak"): {"orbit"},
    ("rsa", "scripted:strong"): {"qec", "ising", "orbit", "photon", "beta"},
    ("rsa", "scripted:weak"): {"orbit", "beta"},
}


# Cells whose Ray node died under a first attempt (ran again, counted once): (strategy, model,
# problem) -> the lost attempt's input and output tokens and cost.
LOST = {("rsa", "scripted:strong", "qec_0"): (7001, 303, 0.0125),
        ("rsa", "scripted:strong", "orbit_0"): (4100, 220, 0.0071),
        ("oneshot", "scripted:weak", "beta_0"): (955, 45, 0.0019)}


def build_db(path) -> None:
    """A sweep of one repeat per cell through the store's API, its problems recorded with their
    challenge (``dataset_name``) as `bench run` records CritPt's; three cells with a lost attempt
    (a Ray node died under each) before they ran again."""
    st, w = ResultsStore(path), worker_id()
    problems = [Problem(id=f"{c}_{i}", statement="x", extra={"format": "critpt", "dataset_name": c})
                for c, n in CHALLENGES.items() for i in range(n)]
    st.add_problems(problems, suite="t")
    for (strategy, model), solved in SOLVED.items():
        for p in problems:
            spec = CellSpec(problem_id=p.id, strategy=strategy, model=model, repeat=0, suite="t", gradable=True)
            st.add_cells([spec])
            assert st.claim(spec.key, w)
            if (strategy, model, p.id) in LOST:
                tin, tout, cost = LOST[(strategy, model, p.id)]
                assert st.record_lost(spec.key, w, LostAttempt(
                    attempt=f"a-{p.id}", node="9f3c1e2d7a6b5c4d" if strategy == "rsa" else "77aa00bb11cc22dd",
                    reason="node lost (RayActorError)", started_at=1.0, lost_at=2.0,
                    usage=Usage(calls=2, input_tokens=tin, output_tokens=tout, cost_usd=cost)))
            usage = {"solver": Usage(calls=1, input_tokens=900, output_tokens=100)}
            st.finish(spec.key, w, CellResult(status="complete", verdict="correct" if p.extra["dataset_name"]
                                              in solved else "incorrect", usage_by_role=usage, wall_s=1.0))
    st.close()


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "results.sqlite"
    build_db(path)
    return path


def report_json(db, capsys) -> dict:
    with pytest.raises(SystemExit) as done:
        main(["bench", "report", "--db", str(db), "--json"])
    assert done.value.code in (0, None)
    return json.loads(capsys.readouterr().out)


GROUP_FIGURES = ("accuracy", "ci_low", "ci_high", "ci_method", "problems", "clusters")
PAIR_FIGURES = ("difference", "low", "high", "p_value", "p_holm", "method")


def test_the_dashboards_data_is_the_reports(db, tmp_path, capsys):
    printed = report_json(db, capsys)
    (tmp_path / "runs").mkdir()
    shown = TestClient(create_app(tmp_path / "runs", db=db), base_url=LOCAL).get("/api/sweeps").json()["report"]

    def groups(rep):
        return {(g["strategy"], g["model"]): {k: g[k] for k in GROUP_FIGURES} for g in rep["groups"]}

    def pairs(rep):
        return {(c["a"], c["b"]): {k: c[k] for k in PAIR_FIGURES} for c in rep["comparisons"]}

    assert groups(shown) == groups(printed)
    assert pairs(shown) == pairs(printed) and len(pairs(printed)) == 4
    strong = groups(printed)[("rsa", "scripted:strong")]
    assert strong["clusters"] == 6 and "6 challenges" in strong["ci_method"]   # the challenge is the unit


def cells_of(page, table: str) -> list[list[str]]:
    return page.evaluate(f"""() => [...document.querySelectorAll('{table} tr')].map(
        r => [...r.querySelectorAll('th,td')].map(c => c.innerText.trim()))""")


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")
def test_the_sweeps_page_prints_what_bench_report_prints(db, tmp_path, browser):
    rep = build_report(ResultsStore(db, create=False))
    out = Console(width=400, record=True)
    print_report(rep, out)
    text = out.export_text()
    (tmp_path / "runs").mkdir()
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        with BackgroundServer(create_app(tmp_path / "runs", db=db)) as srv:
            page = ctx.new_page()
            page.goto(srv.url + "/sweeps")
            summary = cells_of(page, "#summary-table")
            comparisons = cells_of(page, "#comparisons")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "one_set_of_numbers_sweeps.png"), full_page=True)
    finally:
        ctx.close()
    heads = summary[0]
    acc = heads.index("accuracy [95% CI]")
    for row in summary[1:]:
        strategy, model = row[heads.index("strategy")], row[heads.index("model")]
        line = next(ln for ln in text.splitlines() if re.search(rf"\b{strategy}\b.*{re.escape(model)}\b", ln))
        assert row[acc] and row[acc] in line, (row[acc], line)                   # the figures bench report prints
    assert len(summary) - 1 == len(rep.groups) == 4
    heads = comparisons[0]
    interval = next(i for i, h in enumerate(heads) if h.startswith("a − b"))
    for row in comparisons[1:]:
        assert row[interval] in text, row[interval]
    assert len(comparisons) - 1 == len(rep.comparisons)


LOST_TOKENS = sum(tin + tout for tin, tout, _ in LOST.values())


def test_a_lost_attempts_spend_is_in_every_view(db, tmp_path, capsys):
    """Counted and shown, not hidden (issue #42): the spend of the attempts a Ray node took down is
    part of the one report -- `bench report --json`, its terminal tables, its HTML file -- and the
    dashboard shows the same figures (the whole sweep, and the cells a filter keeps)."""
    printed = report_json(db, capsys)["lost"]
    assert (printed["attempts"], printed["calls"], printed["tokens"]) == (3, 6, LOST_TOKENS)
    assert printed["cost_usd"] == pytest.approx(sum(c for *_, c in LOST.values()))
    rsa = next(g for g in printed["groups"] if g["strategy"] == "rsa")
    assert (rsa["node"], rsa["attempts"], rsa["tokens"]) == ("9f3c1e2d7a6b5c4d", 2, 7001 + 303 + 4100 + 220)

    (tmp_path / "runs").mkdir()
    client = TestClient(create_app(tmp_path / "runs", db=db), base_url=LOCAL)
    assert client.get("/api/sweeps").json()["report"]["lost"] == printed
    only_rsa = client.get("/api/sweeps", params={"strategy": "rsa"}).json()["report"]["lost"]
    assert (only_rsa["attempts"], only_rsa["tokens"]) == (2, 7001 + 303 + 4100 + 220)
    page = client.get("/sweeps").text
    assert 'id="lost-attempts"' in page and f"{LOST_TOKENS:,} tokens" in page

    with pytest.raises(SystemExit) as done:
        main(["bench", "report", "--db", str(db)])
    assert done.value.code in (0, None)
    terminal = capsys.readouterr().out
    assert "3 lost attempts" in terminal and f"{LOST_TOKENS:,} tokens" in terminal

    html = tmp_path / "report.html"
    with pytest.raises(SystemExit) as done:
        main(["bench", "report", "--db", str(db), "--html", str(html)])
    assert done.value.code in (0, None)
    text = html.read_text()
    assert 'id="lost-attempts"' in text and f"{LOST_TOKENS:,} tokens" in text
    assert "9f3c1e2d7a6b" in text and f"{7001 + 303 + 4100 + 220:,}" in text


def test_a_sweep_without_lost_attempts_says_nothing_of_them(tmp_path, capsys):
    path = tmp_path / "plain.sqlite"
    st, w = ResultsStore(path), worker_id()
    st.add_problems([Problem(id="p", statement="x")], suite="t")
    spec = CellSpec(problem_id="p", strategy="oneshot", model="scripted:strong", repeat=0, suite="t")
    st.add_cells([spec])
    assert st.claim(spec.key, w)
    st.finish(spec.key, w, CellResult(status="complete", usage_by_role={"solver": Usage(calls=1)}, wall_s=1.0))
    st.close()
    assert report_json(path, capsys)["lost"]["attempts"] == 0
    html = tmp_path / "report.html"
    with pytest.raises(SystemExit):
        main(["bench", "report", "--db", str(path), "--html", str(html)])
    assert "lost attempts" not in capsys.readouterr().out.lower()
    assert "lost-attempts" not in html.read_text()
