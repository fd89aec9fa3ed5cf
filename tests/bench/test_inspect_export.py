"""`physlab bench export-inspect`: a sweep's cells (or single runs) as Inspect AI eval logs, read
back with the real inspect_ai package: one log per strategy/model, one sample per cell, the
messages of the strategy's calls, PhysLab's verdict as the score, token usage per model and role."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from physlab.cli import main
from physlab.problems.suites import BUILTIN_DIR

inspect_log = pytest.importorskip("inspect_ai.log")


def cli(*argv: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    return exc.value.code or 0


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A real sweep: CritPt's example challenge (4 problems) x oneshot, two-step x 2 repeats with a
    scripted model that answers the main problem right and the sub-problems wrong."""
    root = tmp_path_factory.mktemp("sweep")
    suite = root / "qec"
    suite.mkdir()
    (suite / "qec.json").write_text((BUILTIN_DIR / "examples" / "critpt_quantum_error_correction.json").read_text())
    db = root / "r.sqlite"
    assert cli("bench", "run", str(suite), "--strategies", "oneshot,two-step", "--models",
               "scripted:oneshot-qec-correct", "--repeats", "2", "--db", str(db), "--no-progress") == 0
    return db


def test_every_cell_is_a_sample_with_its_score_messages_and_usage(sweep, tmp_path, capsys):
    out = tmp_path / "logs"
    assert cli("bench", "export-inspect", "--db", str(sweep), "--out", str(out)) == 0
    assert "wrote 2 Inspect logs (16 samples)" in capsys.readouterr().out
    files = sorted(out.glob("*.eval"))
    assert len(files) == 2 and [f.name for f in inspect_log.list_eval_logs(str(out))]  # the viewer's listing
    con = sqlite3.connect(sweep)
    con.row_factory = sqlite3.Row
    cells = {(c["strategy"], f"{c['suite']}/{c['problem_id']}", c["repeat"] + 1): c for c in con.execute("SELECT * FROM cells")}
    roles = {(r["cell_key"], r["role"]): r for r in con.execute("SELECT * FROM cell_roles")}
    seen = set()
    for f in files:
        log = inspect_log.read_eval_log(str(f))
        assert log.status == "success" and log.eval.model == "scripted:oneshot-qec-correct"
        strategy = log.eval.solver
        assert log.eval.config.epochs == 2 and log.eval.dataset.samples == 4 and len(log.samples) == 8
        correct = 0
        for s in log.samples:
            cell = cells[(strategy, s.id, s.epoch)]
            seen.add((strategy, s.id, s.epoch))
            score = s.scores["physlab_grader"]
            assert score.value == ("C" if cell["verdict"] == "correct" else "I")
            assert score.metadata["verdict"] == cell["verdict"] and score.explanation == cell["verdict_reason"]
            correct += cell["verdict"] == "correct"
            # the strategy's calls: prompts and replies, each tagged with the role that made it
            assert "[[4,2,2]]" in next(m for m in s.messages if m.role == "user").text
            assert [m.role for m in s.messages].count("assistant") == cell["calls"]
            assert {m.metadata["physlab_role"] for m in s.messages} == {r for (k, r) in roles if k == cell["key"]}
            assert [e.event for e in s.events] == ["model"] * cell["calls"]
            # usage: the model's total and each role's
            usage = s.model_usage["scripted:oneshot-qec-correct"]
            assert (usage.input_tokens, usage.output_tokens) == (cell["input_tokens"], cell["output_tokens"])
            for role, u in s.role_usage.items():
                assert u.input_tokens == roles[(cell["key"], role)]["input_tokens"]
            assert s.output.completion == cell["answer_code"]
            assert s.target == ""  # the database never held the answer key
        assert 0 < correct < 8  # the main problem right, the sub-problems wrong
        assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(correct / 8)
    assert seen == set(cells)


def test_two_step_messages_show_the_derivation_once(sweep, tmp_path):
    """The formatter continues the solver's conversation: the export shows it once, not twice."""
    out = tmp_path / "logs"
    assert cli("bench", "export-inspect", "--db", str(sweep), "--out", str(out), "--strategy", "two-step") == 0
    [f] = out.glob("*.eval")
    s = inspect_log.read_eval_log(str(f)).samples[0]
    # (CritPt's system prompt is sent with both requests, as its pipeline keeps it in the conversation)
    assert [(m.role, m.metadata["physlab_role"]) for m in s.messages] == [
        ("system", "solver"), ("user", "solver"), ("assistant", "solver"), ("system", "formatter"),
        ("user", "formatter"), ("assistant", "formatter")]
    # while the formatter's model event holds its whole input, the solver's turn included
    assert [m.role for m in s.events[1].input] == ["system", "user", "assistant", "system", "user"]


def test_a_lab_run_exports_its_roles_and_tool_calls(tmp_path, capsys):
    ws = tmp_path / "lab"
    assert cli("solve", "examples/quantum_error_correction_main", "--strategy", "lab", "--model", "scripted:lab-qec",
               "--workspace", str(ws), "--console", "quiet", "--quiet") == 0
    out = tmp_path / "logs"
    assert cli("bench", "export-inspect", "--run", str(ws), "--out", str(out), "--with-reference") == 0
    capsys.readouterr()
    [f] = out.glob("*.eval")
    log = inspect_log.read_eval_log(str(f))
    [s] = log.samples
    metrics = json.loads((ws / "metrics.json").read_text())
    calls = [json.loads(line) for line in (ws / "calls.jsonl").read_text().splitlines()]
    assert log.eval.solver == "lab" and s.id == "quantum_error_correction_main"
    assert s.scores["physlab_grader"].value == "C" and metrics["verdict"]["verdict"] == "correct"
    assert len(s.events) == len(calls) and Counter(e.role for e in s.events) == Counter(c["role"] for c in calls)
    tool_calls = [tc for m in s.messages if m.role == "assistant" for tc in (m.tool_calls or [])]
    tool_replies = {m.tool_call_id for m in s.messages if m.role == "tool"}
    assert tool_calls and tool_replies and tool_replies <= {tc.id for tc in tool_calls}
    assert s.model_usage["scripted:lab-qec"].input_tokens == metrics["totals"]["input_tokens"]
    assert "253952" in s.target  # --with-reference: CritPt's published answer


def test_cells_whose_workspace_is_gone_keep_their_usage_and_say_why(sweep, tmp_path):
    con = sqlite3.connect(sweep)
    key, ws = con.execute("SELECT key, workspace FROM cells WHERE strategy='oneshot' ORDER BY key").fetchone()
    moved = Path(ws).with_name("moved-away")
    Path(ws).rename(moved)
    try:
        out = tmp_path / "logs"
        assert cli("bench", "export-inspect", "--db", str(sweep), "--out", str(out), "--strategy", "oneshot") == 0
        [f] = out.glob("*.eval")
        sample = next(s for s in inspect_log.read_eval_log(str(f)).samples if s.metadata["workspace"] == ws)
        assert "messages unavailable" in sample.metadata["messages_note"] and sample.messages == []
        assert len(sample.events) == con.execute("SELECT calls FROM cells WHERE key=?", (key,)).fetchone()[0]
    finally:
        moved.rename(ws)


def test_bad_input_is_one_line(tmp_path, capsys):
    assert cli("bench", "export-inspect", "--db", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "o")) == 2
    assert cli("bench", "export-inspect", "--run", str(tmp_path), "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no metrics.json" in err


@pytest.mark.slow
def test_inspect_view_lists_and_serves_the_exported_logs(sweep, tmp_path):
    """`inspect view` itself (its server, as the browser app talks to it) lists the logs under the
    task names of the export and serves each one whole."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.parse
    import urllib.request

    out = tmp_path / "logs"
    assert cli("bench", "export-inspect", "--db", str(sweep), "--out", str(out)) == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(out), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/api"
        deadline = time.monotonic() + 120
        while True:
            try:
                listing = json.loads(urllib.request.urlopen(f"{base}/logs", timeout=5).read())
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "inspect view did not start"
                time.sleep(0.2)  # polling for the server to come up, not ordering events
        files = {f["task"]: f["name"] for f in listing["files"]}
        assert set(files) == {"physlab-qec-oneshot-scripted-oneshot-qec-correct",
                              "physlab-qec-two-step-scripted-oneshot-qec-correct"}
        name = urllib.parse.quote(files["physlab-qec-oneshot-scripted-oneshot-qec-correct"], safe="")
        log = json.loads(urllib.request.urlopen(f"{base}/logs/{name}", timeout=30).read())
        assert log["eval"]["solver"] == "oneshot" and len(log["samples"]) == 8
        assert log["samples"][0]["scores"]["physlab_grader"]["value"] in ("C", "I")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_ungraded_cell_is_a_sample_without_a_score(tmp_path):
    """Issue #43: an answer to a prose reference no judge graded is neither C nor I: its sample has no
    score, the verdict stays in its metadata, and the log's accuracy counts only scored samples."""
    from physlab.bench.inspect_export import CellRecord, export

    recs = [CellRecord(problem_id=f"p{i}", suite="t", strategy="oneshot", model="m", repeat=0, config="-",
                       problem={"id": f"p{i}", "statement": "Is it stable?"}, status="complete", verdict=v,
                       verdict_reason="", answer_text="Final answer: no") for i, v in enumerate(["ungraded", "correct"])]
    [path] = export(recs, tmp_path / "logs", source="test")
    log = inspect_log.read_eval_log(str(path))
    by_id = {s.id: s for s in log.samples}
    assert not by_id["t/p0"].scores and by_id["t/p0"].metadata["verdict"] == "ungraded"
    assert [s.value for s in by_id["t/p1"].scores.values()] == ["C"]
