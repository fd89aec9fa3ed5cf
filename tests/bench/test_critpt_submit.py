"""`physlab bench submit-critpt` against a stand-in of CritPt's grading endpoint on 127.0.0.1: a
complete batch graded and its score recorded next to the cells and shown by `bench report`; an
incomplete one refused (here first, and by the server when sent anyway); server errors reported in
one line; the day's ten submissions counted; CritPt's 5-run figure with its spread."""

from __future__ import annotations

import json
import socket
import sqlite3
import statistics

import pytest

from physlab.bench.critpt_export import build_batches
from physlab.bench.critpt_format import PUBLIC_IDS
from physlab.bench.critpt_submit import GradingFailed, key_id, metrics_of, post_batch, results_of
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id

from .critpt_fixtures import answer_key, cli, sweep, write_public_challenges
from .critpt_standin import GradingStandin

KEY = "sk-critpt"
WIRE_FIELDS = ["problem_id", "generated_code", "model", "generation_config", "messages"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("CRITPT_KEY", KEY)


def _submit(capsys, db, url, *extra):
    return cli(capsys, "submit-critpt", "--db", str(db), "--api-key-env", "CRITPT_KEY", "--url", url,
               "--no-progress", *extra)


def _rows(db, sql, *params):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


async def test_a_complete_batch_is_graded_recorded_next_to_its_cells_and_reported(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c"), db)
    with GradingStandin(answer_key(), debug=True) as srv:
        code, out, err = _submit(capsys, db, srv.url)
    assert code == 0, err
    assert "repeat 0: CritPt accuracy 32.9%" in out  # 23 of 70: the challenges whose answer is 0
    (req,) = srv.requests
    assert req["key"] == KEY and "stream_progress=true" in req["path"]
    assert [list(s) for s in req["body"]["submissions"]] == [WIRE_FIELDS] * 70  # CritPt's client's wire form
    assert [s["problem_id"] for s in req["body"]["submissions"]] == list(PUBLIC_IDS)

    (sub,) = _rows(db, "SELECT * FROM critpt_submissions")
    assert (sub["state"], sub["http_status"], sub["repeat"], sub["entries"]) == ("scored", 200, 0, 70)
    assert sub["accuracy"] == pytest.approx(23 / 70) and sub["key_id"] == key_id(KEY) and KEY not in json.dumps(sub)
    results = _rows(db, "SELECT r.problem_id, r.score, c.problem_id AS cell_problem, c.answer_code FROM critpt_results r"
                        " JOIN cells c ON c.key = r.cell_key WHERE r.submission_id=?", sub["id"])
    assert len(results) == 70 and all(r["problem_id"] == r["cell_problem"] for r in results)  # next to its cell
    key = answer_key()
    assert {r["problem_id"]: r["score"] for r in results} == {p: float(v == 0) for p, v in key.items()}

    code, out, err = cli(capsys, "report", "--db", str(db))
    assert code == 0, err
    assert "CritPt" in out and "32.9% (1 of 5 runs)" in out
    code, out, _ = cli(capsys, "report", "--db", str(db), "--json")
    (score,) = json.loads(out)["critpt"]
    assert score["runs"] == {"0": pytest.approx(23 / 70)} and score["strategy"] == "oneshot"
    code, _, _ = cli(capsys, "report", "--db", str(db), "--csv", str(tmp_path / "s.csv"))
    assert "critpt_accuracy_mean" in (tmp_path / "s.csv").read_text().splitlines()[0]


async def test_an_incomplete_batch_is_refused_here_and_by_the_server_when_sent_anyway(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c", n=69), db)
    with GradingStandin(answer_key()) as srv:
        code, _, err = _submit(capsys, db, srv.url)
        assert code == 2 and srv.requests == []  # nothing spent of the day's ten
        assert err.count("\n") == 1 and "1 of the 70 CritPt test ids missing (Challenge_70_main)" in err
        assert "--allow-partial sends it anyway" in err
        code, _, err = _submit(capsys, db, srv.url, "--allow-partial")
    assert code == 1 and len(srv.requests) == 1
    assert ("error: repeat 0: CritPt's server refused the batch (HTTP 400: Batch must contain all 70 problems "
            "exactly once: 1 missing, 0 unmatched problem IDs)") in err
    (sub,) = _rows(db, "SELECT * FROM critpt_submissions")
    assert (sub["state"], sub["http_status"], sub["accuracy"], sub["counted"]) == ("rejected", 400, None, 1)
    code, out, _ = cli(capsys, "report", "--db", str(db))
    assert "CritPt" not in out  # a refused batch has no score


@pytest.mark.parametrize("fail, said", [
    ("http500", "error: repeat 0: the grading server failed (HTTP 500: Internal Server Error); nothing was graded"),
    ("stream-error", "error: repeat 0: the grading server stopped with an error: judge worker crashed"),
])
async def test_a_server_error_is_one_clear_line_and_recorded(tmp_path, capsys, fail, said):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c"), db)
    with GradingStandin(answer_key(), fail=fail) as srv:
        code, out, err = _submit(capsys, db, srv.url)
    assert code == 1 and said in err and "Traceback" not in err
    assert [x for x in err.splitlines() if x.startswith("error:")] == [err.splitlines()[-1]]
    (sub,) = _rows(db, "SELECT * FROM critpt_submissions")
    assert sub["state"] == "error" and sub["accuracy"] is None and said.split(": ", 2)[2] in sub["error"]


async def test_a_wrong_key_or_an_unreachable_server_is_one_line_and_not_counted(tmp_path, capsys, monkeypatch):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c"), db)
    with GradingStandin(answer_key(), keys=("sk-other",)) as srv:
        code, _, err = _submit(capsys, db, srv.url)
    assert code == 1 and "the grading server refused the API key (HTTP 401: Invalid or missing API key)" in err
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = _submit(capsys, db, f"http://127.0.0.1:{port}/evaluate")
    assert code == 1 and f"cannot reach http://127.0.0.1:{port}/evaluate" in err and "nothing was sent" in err
    assert [r["counted"] for r in _rows(db, "SELECT counted FROM critpt_submissions ORDER BY id")] == [0, 0]
    monkeypatch.delenv("CRITPT_KEY")
    code, _, err = _submit(capsys, db, "http://127.0.0.1:1/")
    assert code == 2 and "environment variable CRITPT_KEY is not set" in err
    code, _, err = _submit(capsys, db, "ftp://example.org/")
    assert code == 2 and "--url" in err


def _five_runs(db) -> list[float]:
    """70 challenges x 5 repeats whose answers differ by repeat; returns each repeat's true accuracy
    under the stand-in's key (the model answers 0 where i % (r + 2) == 0, else 1)."""
    st = ResultsStore(db)
    w, key, accuracy = worker_id(), answer_key(), []
    for r in range(5):
        right = 0
        for i, pid in enumerate(PUBLIC_IDS, start=1):
            value = 0 if i % (r + 2) == 0 else 1
            right += value == key[pid]
            spec = CellSpec(problem_id=pid, strategy="oneshot", model="scripted:a", repeat=r, suite="critpt")
            st.add_cells([spec])
            st.claim(spec.key, w)
            st.finish(spec.key, w, CellResult(status="complete", answer_code=f"def answer():\n    return {value}\n"))
        accuracy.append(right / 70)
    st.close()
    return accuracy


def test_five_runs_are_five_batches_and_the_report_gives_their_mean_and_spread(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    truth = _five_runs(db)
    assert len(set(truth)) > 1  # the runs differ, so the spread says something
    with GradingStandin(answer_key(), stream=False) as srv:  # a server that answers with one JSON object
        code, out, err = _submit(capsys, db, srv.url)
    assert code == 0, err
    assert len(srv.requests) == 5
    assert [{s["generation_config"]["repeat"] for s in r["body"]["submissions"]} for r in srv.requests] == \
        [{0}, {1}, {2}, {3}, {4}]
    mean, sd = statistics.fmean(truth), statistics.stdev(truth)
    assert f"CritPt oneshot × scripted:a: {mean:.1%} ± {sd:.1%} (5 of 5 runs)" in out
    code, out, _ = cli(capsys, "report", "--db", str(db), "--json")
    (score,) = json.loads(out)["critpt"]
    assert [score["runs"][str(r)] for r in range(5)] == pytest.approx(truth)
    assert (score["mean"], score["sd"]) == (pytest.approx(mean), pytest.approx(sd))
    group = json.loads(out)["groups"][0]
    assert (group["critpt_runs"], group["critpt_mean"]) == (5, pytest.approx(mean))
    code, out, _ = cli(capsys, "report", "--db", str(db))
    assert f"{mean:.1%} ± {sd:.1%} (5 of 5 runs)" in out
    for r, a in enumerate(truth):
        assert f"r{r} {a:.1%}" in out


def test_the_day_is_counted_the_tenth_warned_and_more_refused(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    _five_runs(db)
    with GradingStandin(answer_key()) as srv:
        code, out, err = _submit(capsys, db, srv.url, "--dry-run")
        assert code == 0 and srv.requests == [] and "would send repeat 4: 70 submissions" in out
        for _ in range(4):
            assert _submit(capsys, db, srv.url, "--repeat", "0")[0] == 0
        code, _, err = _submit(capsys, db, srv.url)  # the five runs: submissions 5 ... 9
        assert code == 0 and "warning" not in err
        code, _, err = _submit(capsys, db, srv.url)  # five more would make 14: none is sent
        assert code == 2 and len(srv.requests) == 9
        assert "5 batch(es) to send and 9 already sent with this key in the last 24 h" in err
        code, _, err = _submit(capsys, db, srv.url, "--repeat", "1")
        assert code == 0 and err.count("warning: this is submission 10 in 24 h with this key") == 1
        sent = len(srv.requests)
        code, _, err = _submit(capsys, db, srv.url, "--repeat", "0")
        assert code == 2 and len(srv.requests) == sent  # the eleventh is not sent
        assert "1 batch(es) to send and 10 already sent with this key in the last 24 h" in err
        assert "CritPt grades 10 per account per 24 h; enough frees up at" in err
        code, _, err = _submit(capsys, db, srv.url, "--repeat", "0", "--force")  # the server says no too
    assert code == 1 and "CritPt's rate limit (HTTP 429" in err and "it takes submissions again at" in err
    assert _rows(db, "SELECT counted FROM critpt_submissions ORDER BY id DESC LIMIT 1")[0]["counted"] == 0


# -- the client's reading of replies ----------------------------------------------------------------


async def test_progress_events_reach_the_caller(tmp_path):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c"), db)
    (batch,) = build_batches(ResultsStore(db))
    seen: list[tuple[int, int]] = []
    with GradingStandin(answer_key()) as srv:
        payload = post_batch(srv.url, KEY, batch, timeout_s=60, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 70), *((n, 70) for n in range(10, 71, 10))]
    assert metrics_of(payload)["accuracy"] == pytest.approx(23 / 70)


def test_replies_without_a_grade_are_not_taken_for_one():
    assert metrics_of({"metrics": {"accuracy": 0.25, "timeout_rate": 0.0}}) == {"accuracy": 0.25, "timeout_rate": 0.0}
    for bad in ({"accuracy": 31.4}, {"accuracy": None}, {"status": "queued"}, {"accuracy": True}):
        with pytest.raises(GradingFailed, match="no accuracy in"):
            metrics_of(bad)
    got = results_of({"results": {"A_main": {"score": 1}, "B_main": {"correct": False}, "X": {"score": 1}}},
                     {"A_main", "B_main"})
    assert {k: v[0] for k, v in got.items()} == {"A_main": 1.0, "B_main": 0.0}
