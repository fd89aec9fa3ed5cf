"""The files a Ray sweep's cells read by their path -- problem figures and `replay:` models'
calls.jsonl -- are not shipped to the nodes: each node must read the same bytes at the same path.
The driver lists them with their digests; each node says, in one line per file, which it cannot
read there or reads differently, and the sweep stops before any cell runs (the cluster's half
is in tests/bench/test_sweep_ray.py). No Ray needed here: the node's check is plain Python."""

from __future__ import annotations

import json

from physlab.bench.ray_inputs import sweep_inputs, unseen
from physlab.bench.sweep import SweepConfig
from physlab.llm.defaults import ModelRegistry
from physlab.problems import load_suite

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def _suite(tmp_path):
    d = tmp_path / "suite"
    d.mkdir()
    (d / "fig.png").write_bytes(PNG)
    (d / "q.yaml").write_text("id: q\nproblem: Read the figure.\nimages: [fig.png]\n"
                              "answer_template: |\n  def answer():\n      return ...\n")
    (d / "plain.yaml").write_text("id: plain\nproblem: No figure.\nanswer_template: |\n  def answer():\n"
                                  "      return ...\n")
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "calls.jsonl").write_text(json.dumps({"role": "solver", "model": "scripted:x"}) + "\n")
    return d


def test_a_node_that_reads_other_bytes_or_nothing_at_a_cells_path_is_named(tmp_path, monkeypatch):
    d = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)  # the sweep names its replay file relative to where it runs
    cfg = SweepConfig(suite=str(d), strategies=["oneshot"], models=["scripted:oneshot-wrong", "replay:rec"],
                      executor="ray")
    files = sweep_inputs(cfg, load_suite(str(d)), ModelRegistry.load(None))
    assert sorted(f.path for f in files) == sorted([str((d / "fig.png").resolve()), "rec"])
    assert unseen(files) == []  # what the driver reads: every node that reads the same is fine

    elsewhere = tmp_path / "node-cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a node's runner works in another directory: "rec" is not there
    (lines,) = unseen(files)
    assert "rec" in lines and "replay:rec" in lines and "not there" in lines, lines

    monkeypatch.chdir(tmp_path)
    (d / "fig.png").write_bytes(PNG + b"v2")  # another version of the figure at the same path
    (lines,) = unseen(files)
    assert "fig.png" in lines and "problem q" in lines and "other bytes" in lines, lines
    (d / "fig.png").unlink()
    (lines,) = unseen(files)
    assert "fig.png" in lines and "not there" in lines, lines


def test_a_sweep_without_figures_or_replays_has_nothing_to_check(tmp_path):
    d = _suite(tmp_path)
    (d / "q.yaml").unlink()
    cfg = SweepConfig(suite=str(d), strategies=["oneshot"], models=["scripted:oneshot-wrong"], executor="ray")
    assert sweep_inputs(cfg, load_suite(str(d)), ModelRegistry.load(None)) == []
