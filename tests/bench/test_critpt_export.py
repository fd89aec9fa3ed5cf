"""`physlab bench export-critpt`: a batch in CritPt's own format, field for field and file for file,
that CritPt's loaders and its grading server accept; a batch the server would refuse is refused here
first, naming the ids; one batch per repeat (CritPt's 5-run protocol)."""

from __future__ import annotations

import ast
import datetime as dt
import json

import pytest

from physlab.bench.critpt_export import build_batches
from physlab.bench.critpt_format import PUBLIC_IDS, check_ids, compress_ids, parser_problem
from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
from physlab.problems import load_directory

from . import critpt_published as critpt
from .critpt_fixtures import FILL, cli, sweep, write_public_challenges

ENTRY_FIELDS = ["problem_id", "generated_code", "model", "timestamp", "generation_config", "messages"]


def _check_entry(entry: dict, *, repeat: int, with_messages: bool) -> None:
    assert list(entry) == ENTRY_FIELDS  # CritPt's Submission, in its order; nothing else
    fn = critpt.the_function(entry["generated_code"])  # what CritPt's code parser reads
    assert fn.name == "answer" and not fn.args.args
    assert "value = 0" in ast.unparse(fn)  # the model's filled template, not the blank one
    when = dt.datetime.fromisoformat(entry["timestamp"])  # ISO 8601
    assert when.tzinfo is not None and abs((dt.datetime.now(dt.UTC) - when).total_seconds()) < 3600
    assert entry["model"] == f"scripted/{FILL}"  # CritPt writes api/name
    cfg = entry["generation_config"]
    assert cfg["strategy"] == "oneshot" and cfg["repeat"] == repeat and cfg["physlab_cell"].endswith(f"|r{repeat}|-")
    if with_messages:
        roles = [m["role"] for m in entry["messages"]]
        assert roles == ["system", "user", "assistant"], roles
        asked = entry["messages"][1]["content"]
        # CritPt's one-step protocol: the problem, then its template in a fenced block
        assert entry["problem_id"].split("_main")[0].replace("_", " ") in asked and "```python\ndef answer" in asked
        assert "value = 0" in entry["messages"][-1]["content"]  # the reply the code came from
    else:
        assert entry["messages"] is None


async def test_export_of_the_70_public_challenges_is_critpts_format_field_for_field(tmp_path, capsys):
    """Generated like CritPt's public set, so this runs without ../shared (the real data: below)."""
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "public_test_challenges"), db)
    out, layout = tmp_path / "export" / "batch.json", tmp_path / "generations"
    code, stdout, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out), "--dir", str(layout),
                            "--messages")
    assert code == 0, err
    assert err == ""  # complete, every entry readable by CritPt's parser, every conversation found
    assert f"wrote 70 submissions (repeat 0, 0 without code) to {out}" in stdout

    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data) == ["submissions", "batch_metadata"]
    subs, meta = critpt.load_batch(data)  # SubmissionBatch.from_dict: Submission(**entry) for each
    assert [s.problem_id for s in subs] == list(PUBLIC_IDS)  # all 70, once each, in challenge order
    for entry in data["submissions"]:
        _check_entry(entry, repeat=0, with_messages=True)
    assert meta["num_submissions"] == 70 and meta["problem_ids"] == list(PUBLIC_IDS)

    folder = layout / "0"  # CritPt's per-epoch folder: <problem_id>.json + batch_metadata.json
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{i}.json" for i in PUBLIC_IDS] + ["batch_metadata.json"])
    assert sorted(s.problem_id for s in critpt.load_directory(folder)) == sorted(PUBLIC_IDS)
    for f in folder.glob("Challenge_*.json"):
        entry = json.loads(f.read_text(encoding="utf-8"))
        assert f.name == f"{entry['problem_id']}.json"
        _check_entry(entry, repeat=0, with_messages=True)
    assert json.loads((folder / "batch_metadata.json").read_text())["problem_ids"] == list(PUBLIC_IDS)
    # evaluate_all_results.py, pointed at the folder, would send exactly these 70
    assert [f.name for f in critpt.files_evaluate_all_results_sends(folder)] == \
        sorted(f"{i}.json" for i in PUBLIC_IDS)


async def test_examples_suite_export_is_refused_naming_the_missing_ids(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    await sweep("examples", db)
    out = tmp_path / "batch.json"
    code, _, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out))
    assert code == 2 and not out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: repeat 0: CritPt's server would refuse this batch"), err
    assert "70 of the 70 CritPt test ids missing (Challenge_{1-70}_main)" in lines[0]
    assert "20 ids that are not CritPt test problems (gr_circular_orbit_clock" in lines[0]
    assert "--allow-partial" in lines[0]

    code, stdout, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out), "--allow-partial")
    assert code == 0 and "wrote 20 submissions" in stdout
    assert "written anyway (--allow-partial): CritPt's server will refuse it" in err and "Challenge_{1-70}_main" in err
    assert len(json.loads(out.read_text())["submissions"]) == 20


async def test_one_batch_per_repeat_for_critpts_five_run_protocol(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c"), db, repeats=5)
    out, layout = tmp_path / "batch.json", tmp_path / "gen"
    code, stdout, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out), "--dir", str(layout))
    assert code == 0, err
    for r in range(5):
        data = json.loads((tmp_path / f"batch.r{r}.json").read_text())
        assert [e["problem_id"] for e in data["submissions"]] == list(PUBLIC_IDS)
        assert {e["generation_config"]["repeat"] for e in data["submissions"]} == {r}  # never mixed
        assert len(critpt.load_directory(layout / str(r))) == 70
    assert not out.exists()
    # one repeat alone keeps the file name it was given
    code, _, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out), "--repeat", "3")
    assert code == 0, err
    assert {e["generation_config"]["repeat"] for e in json.loads(out.read_text())["submissions"]} == {3}
    code, _, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out), "--repeat", "7")
    assert code == 2 and "no repeat 7 (repeats: 0, 1, 2, 3, 4)" in err


async def test_a_rerun_export_replaces_its_folder_and_leaves_other_files_alone(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    await sweep(write_public_challenges(tmp_path / "c"), db)
    layout = tmp_path / "gen"
    (layout / "0").mkdir(parents=True)
    (layout / "0" / "Challenge_99_main.json").write_text("{}")  # not ours: CritPt's loader would send it
    code, _, err = cli(capsys, "export-critpt", "--db", str(db), "--dir", str(layout))
    assert code == 2 and "not a PhysLab CritPt export" in err
    (layout / "0" / "Challenge_99_main.json").unlink()
    assert cli(capsys, "export-critpt", "--db", str(db), "--dir", str(layout))[0] == 0
    (layout / "0" / "Challenge_1_main.json").unlink()
    (layout / "0" / "stale_sub_0.json").write_text("{}")  # left by hand in our own folder
    assert cli(capsys, "export-critpt", "--db", str(db), "--dir", str(layout))[0] == 0
    assert sorted(p.name for p in (layout / "0").iterdir()) == sorted(
        [f"{i}.json" for i in PUBLIC_IDS] + ["batch_metadata.json"])
    code, _, err = cli(capsys, "export-critpt", "--db", str(db))
    assert code == 2 and "--out FILE" in err


def test_public_ids_are_the_70_challenges_of_critpts_data(shared_data):
    probs = load_directory(shared_data / "critpt" / "public_test_challenges", suite="critpt")
    assert sorted(p.id for p in probs) == sorted(PUBLIC_IDS)
    assert {p.extra["problem_type"] for p in probs} == {"main"}  # the public set has no sub-problems


@pytest.mark.slow
async def test_export_from_critpts_real_data_is_complete_and_parses(shared_data, tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    await sweep(shared_data / "critpt" / "public_test_challenges", db)
    out = tmp_path / "batch.json"
    code, _, err = cli(capsys, "export-critpt", "--db", str(db), "--out", str(out))
    assert code == 0 and err == "", err
    subs, _ = critpt.load_batch(json.loads(out.read_text()))
    assert [s.problem_id for s in subs] == list(PUBLIC_IDS)
    for s in subs:
        assert critpt.the_function(s.generated_code).name == "answer"


# -- the checks, one by one ------------------------------------------------------------------------


def test_sub_problems_when_carried_are_expected_for_every_challenge():
    subs = ["Challenge_3_sub_0", "Challenge_3_sub_1"]
    assert check_ids(PUBLIC_IDS, subs).complete  # a main-only batch is what the public set is
    c = check_ids([*PUBLIC_IDS, "Challenge_3_sub_0", "Challenge_3_sub_0", "Challenge_99_sub_0"], subs)
    assert c.missing == ["Challenge_3_sub_1"] and c.extra == ["Challenge_99_sub_0"]
    assert c.repeated == {"Challenge_3_sub_0": 2}
    assert "1 of the 72 CritPt test ids missing (Challenge_3_sub_1)" in c.describe()
    assert "1 ids more than once (Challenge_3_sub_0)" in c.describe()


def test_missing_ids_are_named_as_ranges():
    assert compress_ids([f"Challenge_{i}_main" for i in (*range(1, 21), 25, *range(30, 71))]) == \
        "Challenge_{1-20,25,30-70}_main"
    assert compress_ids(["Challenge_7_main", "qec"]) == "Challenge_7_main, qec"


@pytest.mark.parametrize("code, problem", [
    ("```python\ndef answer():\n    return 1\n```", None),
    ("```python\nimport sympy as sp\n\ndef answer():\n    return sp.pi\n```", None),  # imports go, one def stays
    ("```python\ndef helper():\n    return 1\n\ndef answer():\n    return helper()\n```", "2 top-level functions"),
    ("```python\ndef answer():\n    import numpy as np\n    return np.pi\n```", "an import inside a function"),
    ("```python\ndef answer(:\n```", "does not parse"),
    ("", "no code"),
])
def test_entries_critpts_parser_would_not_read_are_found(code, problem):
    got = parser_problem(code)
    assert (got is None) if problem is None else (problem in got)
    if problem is None:
        critpt.the_function(code)  # the published rules agree


def test_a_batch_mixing_two_suites_names_the_repeated_id(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    w = worker_id()
    for suite in ("critpt", "critpt-copy"):
        for pid in PUBLIC_IDS:
            spec = CellSpec(problem_id=pid, strategy="oneshot", model="scripted:a", repeat=0, suite=suite)
            st.add_cells([spec])
            st.claim(spec.key, w)
            st.finish(spec.key, w, CellResult(status="complete", answer_code="def answer():\n    return 0\n"))
    (batch,) = build_batches(st)
    assert batch.check.repeated == {pid: 2 for pid in PUBLIC_IDS}
    assert "70 ids more than once (Challenge_{1-70}_main)" in batch.refusal()


def test_export_asks_which_group_when_the_database_holds_several(tmp_path, capsys):
    st = ResultsStore(tmp_path / "r.sqlite")
    w = worker_id()
    for strategy in ("oneshot", "rsa"):
        for pid in PUBLIC_IDS:
            spec = CellSpec(problem_id=pid, strategy=strategy, model="scripted:a", repeat=0, suite="critpt")
            st.add_cells([spec])
            st.claim(spec.key, w)
            st.finish(spec.key, w, CellResult(status="complete", answer_code="def answer():\n    return 0\n"))
    st.close()
    out = tmp_path / "sub.json"
    code, _, err = cli(capsys, "export-critpt", "--db", str(tmp_path / "r.sqlite"), "--out", str(out))
    assert code == 2 and "2 strategy x model groups (oneshot/scripted:a, rsa/scripted:a)" in err
    code, _, err = cli(capsys, "export-critpt", "--db", str(tmp_path / "r.sqlite"), "--out", str(out),
                       "--strategy", "rsa", "--model", "scripted:a", "--model-label", "acme/physlab-rsa")
    assert code == 0, err
    entries = json.loads(out.read_text())["submissions"]
    assert {e["generation_config"]["strategy"] for e in entries} == {"rsa"}
    assert {e["model"] for e in entries} == {"acme/physlab-rsa"}


def test_a_repeat_with_unfinished_cells_says_to_run_the_sweep_again(tmp_path):
    st = ResultsStore(tmp_path / "r.sqlite")
    w = worker_id()
    for pid in PUBLIC_IDS:
        spec = CellSpec(problem_id=pid, strategy="oneshot", model="scripted:a", repeat=0, suite="critpt")
        st.add_cells([spec])
        if pid != "Challenge_42_main":  # this one crashed and waits for the re-run
            st.claim(spec.key, w)
            st.finish(spec.key, w, CellResult(status="complete", answer_code="def answer():\n    return 0\n"))
    (batch,) = build_batches(st)
    assert batch.refusal() == ("repeat 0: CritPt's server would refuse this batch: 1 of the 70 CritPt test ids "
                               "missing (Challenge_42_main) (1 cell of this repeat not finished: run the sweep again)")
