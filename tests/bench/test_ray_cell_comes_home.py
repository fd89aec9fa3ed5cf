"""A Ray cell's run directory comes back to the driver naming where it is now (issue #42): made in
a node's scratch directory, sent back and unpacked into `--workspace-root`, its record is rewritten
there by the code that writes records -- metrics.json, `runs show` and the dashboard's `~cell/N`
page name the driver's directory, and the records are sealed as written on the driver (a node's
seal, made with its own secret, means nothing on another machine). A record edited on the node
after its runner wrote it is not vouched for, and the driver does not seal it. No Ray needed:
the node's and the driver's halves are called as the sweep calls them, each with a PhysLab home
(and secret) of its own."""

from __future__ import annotations

import json
import subprocess

from fastapi.testclient import TestClient

from physlab import api
from physlab.bench.cell import CellOutcome
from physlab.bench.ray_node import send_back
from physlab.bench.ray_sweep import bring_back
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.lab.show import summary
from physlab.run.record import written_here
from physlab.run.seal import is_sealed
from physlab.web import create_app

QEC = "examples/quantum_error_correction_main"


def _on_a_node(tmp_path, monkeypatch, strategy: str, model: str):
    """A run made as a node makes it: in its scratch directory, sealed with the node's secret."""
    monkeypatch.setenv("PHYSLAB_HOME", str(tmp_path / "node-home"))
    scratch = tmp_path / "node-scratch" / "examples" / f"qec__{strategy}"
    api.solve(QEC, strategy, model, workspace=scratch)
    return scratch


def _git(ws, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


def test_a_cell_brought_back_names_where_it_is_now_and_is_sealed_on_the_driver(tmp_path, monkeypatch):
    scratch = _on_a_node(tmp_path, monkeypatch, "lab", "scripted:lab-qec")
    before = json.loads((scratch / "metrics.json").read_text())
    assert before["details"]["workspace"] == str(scratch)
    sent = send_back("node-1", CellOutcome(), scratch)
    assert not scratch.exists() and sorted(sent.sealed) == ["metrics.json", "run.json"]

    monkeypatch.setenv("PHYSLAB_HOME", str(tmp_path / "driver-home"))  # the driver: another secret
    home = tmp_path / "runs" / "examples" / "qec__lab"
    bring_back(sent.archive, sent.sealed, home)

    after = json.loads((home / "metrics.json").read_text())
    assert after["details"]["workspace"] == str(home)
    # nothing else of the record changed
    assert {**after, "details": {**after["details"], "workspace": None}, "seal": None} == \
        {**before, "details": {**before["details"], "workspace": None}, "seal": None}
    # sealed on the driver: a resume here follows its options without asking
    assert written_here(home) and is_sealed((home / "metrics.json").read_bytes())
    # the lab's history ends with the record as it is now, and its tree is clean
    assert _git(home, "status", "--porcelain") == ""
    assert json.loads(_git(home, "show", "HEAD:metrics.json"))["details"]["workspace"] == str(home)
    assert _git(home, "log", "-1", "--format=%s").startswith("run ended")

    # what a user reads of it: `runs show` and the dashboard's page of the cell (outside its runs root)
    shown = summary(home)
    assert shown["run"] == str(home) and str(scratch) not in json.dumps(shown)
    db = tmp_path / "r.sqlite"
    store, w = ResultsStore(db), worker_id()
    spec = CellSpec(problem_id="quantum_error_correction_main", strategy="lab", model="scripted:lab-qec", repeat=0,
                    suite="examples")
    store.add_cells([spec])
    assert store.claim(spec.key, w)
    store.finish(spec.key, w, CellResult(status=after["status"], workspace=str(home), node="node-1"))
    n = store.conn.execute("SELECT rowid FROM cells").fetchone()[0]
    store.close()
    (tmp_path / "dash").mkdir()
    page = TestClient(create_app(tmp_path / "dash", db=db), base_url="http://127.0.0.1").get(f"/api/runs/~cell/{n}")
    assert page.status_code == 200, page.text
    assert page.json()["metrics"]["details"]["workspace"] == str(home) and str(scratch) not in page.text


def test_a_record_edited_on_the_node_is_not_sealed_by_the_driver(tmp_path, monkeypatch):
    """Hard negative: run.json changed on the node after its runner wrote it (its seal no longer
    holds there) comes back unsealed, so a resume on the driver asks before following it."""
    scratch = _on_a_node(tmp_path, monkeypatch, "oneshot", "scripted:oneshot-qec-correct")
    start = json.loads((scratch / "run.json").read_text())
    start["options"]["api_base"] = "http://198.51.100.7/v1"
    (scratch / "run.json").write_text(json.dumps(start))
    sent = send_back("node-1", CellOutcome(), scratch)
    assert sent.sealed == ["metrics.json"]

    monkeypatch.setenv("PHYSLAB_HOME", str(tmp_path / "driver-home"))
    home = tmp_path / "runs" / "examples" / "qec__oneshot"
    bring_back(sent.archive, sent.sealed, home)
    assert not written_here(home)
    assert json.loads((home / "run.json").read_text())["options"]["api_base"] == "http://198.51.100.7/v1"
    assert json.loads((home / "metrics.json").read_text())["details"]["workspace"] == str(home)
    assert is_sealed((home / "metrics.json").read_bytes())
