"""What a user sees from `physlab bench` on bad input and on mixed sweeps: one line and exit 2,
never a traceback; no never-runnable cells; cells of other budgets/parameters kept apart."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from physlab.bench.answers import load_answers
from physlab.bench.critpt_export import build_batches
from physlab.bench.report import build_report
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.bench.sweep import Sweep, SweepConfig
from physlab.cli import main
from physlab.errors import UserError
from physlab.llm.usage import Budget, Usage
from physlab.problems import load_suite


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["bench", *args])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _one_line_error(err: str, *needles: str) -> None:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    for n in needles:
        assert n in lines[0], (n, err)


UNLIMITED = (Budget(),)


def _db(path: Path, *, budgets=UNLIMITED, repeats: int = 2, pending: int = 0) -> Path:
    """One strategy x model, 2 problems x ``repeats``, done and graded, at each of ``budgets``;
    plus ``pending`` cells of another model that never ran."""
    st = ResultsStore(path)
    w = worker_id()
    for b in budgets:
        for i in range(2):
            for r in range(repeats):
                spec = CellSpec(problem_id=f"p{i}", strategy="oneshot", model="scripted:a", repeat=r,
                                budget=b, suite="s", gradable=True)
                st.add_cells([spec])
                assert st.claim(spec.key, w)
                st.finish(spec.key, w, CellResult(
                    status="complete", verdict="correct" if i == 0 else "incorrect", verdict_reason="",
                    answer_code=f"def answer():\n    return {r}\n",
                    usage_by_role={"solver": Usage(calls=1, input_tokens=100, output_tokens=10)}))
    st.add_cells([CellSpec(problem_id=f"p{i}", strategy="oneshot", model="scripted:b", repeat=0, suite="s")
                  for i in range(pending)])
    st.close()
    return path


# -- output files of report / export-critpt ---------------------------------------------------------


def test_report_writes_into_a_missing_directory_and_refuses_a_directory_as_file(tmp_path, capsys):
    db = _db(tmp_path / "r.sqlite")
    code, _, err = _cli(capsys, "report", "--db", str(db), "--csv", str(tmp_path / "new" / "s.csv"))
    assert code == 0, err
    assert next(csv.DictReader((tmp_path / "new" / "s.csv").open()))["strategy"] == "oneshot"
    code, _, err = _cli(capsys, "report", "--db", str(db), "--html", str(tmp_path))
    assert code == 2
    _one_line_error(err, "--html", "is a directory")
    code, _, err = _cli(capsys, "report", "--db", str(db), "--plots", str(db))
    assert code == 2
    _one_line_error(err, "--plots", "expected a directory")


def test_export_critpt_writes_into_a_missing_directory_and_refuses_a_directory(tmp_path, capsys):
    db = _db(tmp_path / "r.sqlite")
    out = tmp_path / "sub" / "mission.json"
    code, _, err = _cli(capsys, "export-critpt", "--db", str(db), "--out", str(out), "--repeat", "0",
                        "--allow-partial")  # two problems: a batch CritPt's server would refuse
    assert code == 0, err
    assert len(json.loads(out.read_text())["submissions"]) == 2
    code, _, err = _cli(capsys, "export-critpt", "--db", str(db), "--out", str(tmp_path))
    assert code == 2
    _one_line_error(err, "--out", "is a directory")


# -- the results database path -------------------------------------------------------------------


def test_db_that_is_a_directory_or_cannot_be_created_is_one_clear_line(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        ResultsStore(tmp_path)
    with pytest.raises(UserError, match="is a directory"):
        ResultsStore(tmp_path, create=False)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(UserError, match="cannot create the results database"):
        ResultsStore(blocker / "r.sqlite")


# -- bench grade: answers file entries ----------------------------------------------------------


@pytest.mark.parametrize("entry, needle", [("{reference: '1', rtol: abc}", "rtol"),
                                           ("{reference: '1', rtol: -0.1}", "rtol"),
                                           ("{reference: '1', reference_format: sympy}", "reference_format")])
def test_bad_rtol_or_format_in_answers_is_one_line_and_grades_nothing(tmp_path, capsys, entry, needle):
    db = _db(tmp_path / "r.sqlite")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO problems(problem_id, suite, gradable, public_json) VALUES (?,?,?,?)",
                ("p0", "s", 1, json.dumps({"id": "p0", "statement": "s",
                                           "answer_template": "def answer():\n    return ..."})))
    con.execute("UPDATE cells SET verdict=NULL")
    con.commit()
    answers = tmp_path / "a.yaml"
    answers.write_text(f"p0: {entry}\n")
    with pytest.raises(UserError, match=f"field 'p0': {needle}"):
        load_answers(answers)
    code, _, err = _cli(capsys, "grade", "--db", str(db), "--answers", str(answers))
    assert code == 2
    _one_line_error(err, "a.yaml", "p0", needle)
    assert con.execute("SELECT COUNT(*) FROM cells WHERE verdict IS NOT NULL").fetchone()[0] == 0


# -- bench run: mistyped models --------------------------------------------------------------------


@pytest.mark.parametrize("models, extra, field", [
    ("scripted:oneshot-wrongg", [], "--model"), ("replay:/no/such/calls.jsonl", [], "--model"),
    ("scripted:oneshot-wrong,scripted:nope", [], "--model"),
    ("openai:served", ["--api-base", "localhost:8000/v1"], "--api-base"),  # no scheme: not a URL
])
def test_mistyped_model_stops_before_the_database_gets_cells(tmp_path, capsys, models, extra, field):
    d = tmp_path / "suite"
    d.mkdir()
    (d / "q.yaml").write_text("id: q\nproblem: What is one?\nanswer_template: |\n  def answer():\n      return ...\n")
    db = tmp_path / "r.sqlite"
    code, _, err = _cli(capsys, "run", str(d), "--models", models, *extra, "--db", str(db), "--no-progress")
    assert code == 2
    _one_line_error(err, field)
    # nothing recorded: no phantom group of never-runnable cells in every later report
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM cells").fetchone()[0] == 0


@pytest.mark.parametrize("strategies, params, needle", [
    ("oneshot,rsaa", [], "unknown strategy 'rsaa'"),
    ("oneshot,rsa", ["--param", "population=0"], "strategy oneshot: unknown --param 'population'"),
    ("rsa", ["--param", "population=0"], "strategy rsa: --param population: input should be greater than"),
])
def test_a_strategy_or_parameter_no_cell_could_run_stops_the_sweep_first(tmp_path, capsys, strategies, params,
                                                                        needle):
    d = tmp_path / "suite"
    d.mkdir()
    (d / "q.yaml").write_text("id: q\nproblem: What is one?\n")
    db = tmp_path / "r.sqlite"
    code, _, err = _cli(capsys, "run", str(d), "--strategies", strategies, "--models", "scripted:echo", *params,
                        "--db", str(db), "--no-progress")
    assert code == 2
    _one_line_error(err, needle)
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM cells").fetchone()[0] == 0


# -- cells of other parameters / budgets ------------------------------------------------------------


async def test_other_params_are_other_cells_and_other_report_groups(tmp_path):
    problems = load_suite("examples")[:2]
    db = tmp_path / "r.sqlite"

    def cfg(temperature: float) -> SweepConfig:
        return SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"],
                           db=db, concurrency=2, params={"temperature": temperature})

    s1 = await Sweep(cfg(0.2), problems=problems, progress=False).run()
    s2 = await Sweep(cfg(1.0), problems=problems, progress=False).run()
    assert (s1.ran, s2.ran, s2.skipped_done) == (2, 2, 0)  # not "already done" at another temperature
    s3 = await Sweep(cfg(1.0), problems=problems, progress=False).run()
    assert (s3.ran, s3.skipped_done) == (0, 2)  # the same parameters resume as before
    st = ResultsStore(db, create=False)
    rep = build_report(st)
    assert sorted(g.config for g in rep.groups) == ["-|temperature=0.2", "-|temperature=1.0"]
    assert all(g.cells == 2 for g in rep.groups)
    workspaces = {c["workspace"] for c in st.cells()}
    assert len(workspaces) == 4  # one workspace per cell, not shared between temperatures


def test_report_keeps_budgets_apart_and_export_asks_which(tmp_path, capsys):
    db = _db(tmp_path / "r.sqlite", budgets=(Budget(), Budget(max_tokens=500)), repeats=2)
    st = ResultsStore(db, create=False)
    rep = build_report(st)
    assert [(g.config, g.cells, sorted(g.pass_at_k)) for g in rep.groups] == \
        [("-", 4, [1, 2]), ("max_tokens=500", 4, [1, 2])]  # 2 repeats each, not 4 pooled
    assert set(rep.token_curves()) == {"oneshot|scripted:a", "oneshot|scripted:a|max_tokens=500"}
    from physlab.web.svg import accuracy_bars

    labels = [row["label"] for row in accuracy_bars(rep.groups)["rows"]]  # the dashboard tells them apart
    assert labels == ["oneshot · scripted:a", "oneshot · scripted:a · max_tokens=500"]
    with pytest.raises(UserError, match="--config"):
        build_batches(st)
    batches = build_batches(st, config="max_tokens=500")
    assert [b.repeat for b in batches] == [0, 1]
    assert [s.generation_config["physlab_cell"].endswith("|max_tokens=500")
            for b in batches for s in b.submissions] == [True] * 4
    st.close()
    code, out, _ = _cli(capsys, "report", "--db", str(db), "--csv", str(tmp_path / "s.csv"))
    assert code == 0 and "max_tokens=500" in out
    rows = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert [r["config"] for r in rows] == ["-", "max_tokens=500"]
    columns = list(rows[0])  # columns added since come after config: the ones before keep their places
    assert columns[columns.index("config") - 2:columns.index("config") + 1] == \
        ["equal_budget_accuracy", "role_token_share", "config"]


def test_report_shows_cells_still_pending(tmp_path, capsys):
    db = _db(tmp_path / "r.sqlite", pending=2)
    code, out, _ = _cli(capsys, "report", "--db", str(db))
    assert code == 0
    line = next(x for x in out.splitlines() if "scripted:b" in x)
    assert "2 pending" in line, out


@pytest.mark.parametrize("verb", [["report"], ["run", "examples", "--strategies", "oneshot",
                                               "--models", "scripted:oneshot-wrong", "--no-progress"]])
def test_another_programs_sqlite_file_is_refused_untouched(tmp_path, capsys, verb):
    other = tmp_path / "notes.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (text TEXT)")
    con.commit()
    con.close()
    before = other.read_bytes()
    code, _, err = _cli(capsys, *verb, "--db", str(other))
    assert code == 2
    _one_line_error(err, "--db", "not a PhysLab results database", "notes")
    assert other.read_bytes() == before  # no tables added, not switched to WAL
