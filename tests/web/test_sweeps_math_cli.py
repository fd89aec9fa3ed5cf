"""The sweeps page over a bench results DB (filters), LaTeX -> MathML with its fallbacks, `physlab ui` input errors."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from physlab.cli import main
from physlab.web import create_app
from physlab.web.markdown import rich, tex_value
from tests.web.helpers import build_results_db


@pytest.fixture
def sweep_client(tmp_path):
    db = tmp_path / "results.sqlite"
    truth = build_results_db(db)
    (tmp_path / "runs").mkdir()
    return TestClient(create_app(tmp_path / "runs", db=db), base_url="http://127.0.0.1"), truth


def test_sweeps_report_and_filters(sweep_client):
    c, truth = sweep_client
    d = c.get("/api/sweeps").json()
    got = {(g["strategy"], g["model"]): (g["graded"], g["correct"]) for g in d["report"]["groups"]}
    assert got == truth
    assert d["choices"]["suite"] == ["s1", "s2"]
    only = c.get("/api/sweeps", params={"strategy": "oneshot", "suite": "s1"}).json()
    assert {(g["strategy"], g["model"], g["graded"]) for g in only["report"]["groups"]} == {
        ("oneshot", "scripted:a", 2), ("oneshot", "scripted:b", 2)}
    html = c.get("/sweeps", params={"model": "scripted:b"}).text
    assert 'id="summary-table"' in html and 'id="accuracy-chart"' in html and 'id="budget-chart"' in html
    assert "scripted:a" not in html.split('id="summary-table"')[1].split("</table>")[0]
    assert "lab<b>" not in html and "lab&lt;b&gt;" in html               # strategy names are escaped
    assert c.get("/api/sweeps", params={"strategy": "x' OR 1=1 --"}).json()["report"]["groups"] == []


def test_sweeps_without_a_database(tmp_path):
    c = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    assert "No results database" in c.get("/sweeps").text
    assert c.get("/api/sweeps").status_code == 404


def test_latex_becomes_mathml_and_everything_else_is_escaped():
    out = rich(r"Energy $E = \frac{p^2}{2m}$ and $$\sum_i x_i$$ <b>bold</b> costs $5 and $6")
    assert out.count("<math") == 2 and "<mfrac>" in out and 'display="block"' in out
    assert "&lt;b&gt;bold&lt;/b&gt;" in out and "costs $5 and $6" in out
    # latex2mathml passes \text{} through raw: the allow-list check must turn it into escaped code
    bad = rich(r"$\text{<script>alert(1)</script>}$ $\frac{1}{$")
    assert "<script>" not in bad and "&lt;script&gt;" in bad and bad.count('<code class="tex">') == 2
    # a value written as a SymPy expression is drawn as math (read with ast, never run, #44 item 8);
    # anything that is not arithmetic stays code
    assert "<mfrac>" in tex_value("1 - 3*p**2/2") and "<msup>" in tex_value("1 - 3*p**2/2")
    assert tex_value("lambda: 1") == "<code>lambda: 1</code>"
    assert "<msup>" in tex_value(r"1 - 3 p^{2}")


@pytest.mark.parametrize("args,needle", [
    (["ui", "--runs", "/nonexistent/runs"], "--runs"),
    (["ui", "--runs", ".", "--db", "/nonexistent.sqlite"], "--db"),
    (["ui", "--runs", ".", "--token", "short"], "--token"),
    (["ui", "--runs", ".", "--db", __file__], "not a PhysLab results database"),
])
def test_ui_bad_input_is_one_line_exit_2(args, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err


def test_ui_on_a_taken_port_is_one_line_before_any_url(capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SystemExit) as exc:
            main(["ui", "--runs", ".", "--port", str(taken.getsockname()[1])])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert "dashboard on" not in out  # no URL promised for a server that never started
    assert "--port" in err and "in use" in err and "\n" not in err.strip() and "Traceback" not in err


def test_reference_conditioned_runs_are_marked_and_kept_apart_from_solvers(tmp_path):
    """A SCALAR run whose Judge read the reference is marked on the runs list and its page, and on the
    sweeps page its group sits in a table of its own, left out of the solvers' chart and curves."""
    from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
    from physlab.llm.usage import Usage
    from tests.web.helpers import write_metrics

    db = tmp_path / "results.sqlite"
    st, w = ResultsStore(db), worker_id()
    for strategy, ref in (("oneshot", False), ("scalar", True)):
        for i in range(2):
            spec = CellSpec(problem_id=f"p{i}", strategy=strategy, model="m", repeat=0, suite="s", gradable=True)
            st.add_cells([spec])
            st.claim(spec.key, w)
            st.finish(spec.key, w, CellResult(status="complete", verdict="correct", reference_conditioned=ref,
                                              judge_checks=2 if ref else None, judge_agreed=1 if ref else None,
                                              usage_by_role={"x": Usage(calls=1, input_tokens=100)}))
    st.close()
    runs = tmp_path / "runs"
    write_metrics(runs / "scalar-run", strategy="scalar", reference_conditioned=True)
    write_metrics(runs / "rsa-run", strategy="rsa", ran_as="1 of 4 rounds")
    c = TestClient(create_app(runs, db=db), base_url="http://127.0.0.1")
    html = c.get("/sweeps").text
    solvers = html.split('id="summary-table"')[1].split("</table>")[0]
    reference = html.split('id="reference-table"')[1].split("</table>")[0]
    assert "oneshot" in solvers and "scalar" not in solvers
    assert "scalar" in reference and "2/4" in reference  # the Judge agreed with the grader on 2 of 4 turns
    assert "scalar" not in html.split('id="accuracy-chart"')[1].split("</svg>")[0]
    listing = c.get("/fragments/runs").text
    row = next(r for r in listing.split("<tr") if "scalar-run" in r)
    assert "reference-conditioned" in row
    assert "ran as 1 of 4 rounds" in next(r for r in listing.split("<tr") if "rsa-run" in r)
    assert 'id="reference-conditioned"' in c.get("/runs/scalar-run").text
