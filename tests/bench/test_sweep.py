"""The sweep executor end to end: real strategies through the real runner, scripted models and the
project's stand-in server; kill -9 and resume; two workers sharing one database and one endpoint."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from physlab.bench.report import build_report
from physlab.bench.store import ResultsStore
from physlab.bench.sweep import Sweep, SweepConfig
from physlab.llm.standin import StandinServer
from physlab.problems import load_suite

ANSWER = "Here it is.\n\n```python\ndef answer(*args, **kwargs):\n    return 1\n```\n"


def _problem_dir(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "suite"
    d.mkdir()
    for i in range(n):
        (d / f"q{i:02d}.yaml").write_text(
            f"id: q{i:02d}\nproblem: What is {i} times zero plus one?\n"
            "answer_template: |\n  def answer():\n      return ...\n")
    return d


def _check_db_matches_workspaces(db: Path) -> None:
    """Every done cell: its calls rows are exactly its calls.jsonl, its totals the sum of them."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    for cell in con.execute("SELECT * FROM cells WHERE state='done'"):
        ws = Path(cell["workspace"])
        lines = [json.loads(x) for x in (ws / "calls.jsonl").read_text().splitlines() if x.strip()]
        rows = con.execute("SELECT * FROM calls WHERE cell_key=? ORDER BY idx", (cell["key"],)).fetchall()
        assert [(r["role"], r["input_tokens"], r["output_tokens"]) for r in rows] == \
            [(x["role"], x["input_tokens"], x["output_tokens"]) for x in lines]
        assert cell["calls"] == len(lines)
        assert cell["input_tokens"] == sum(x["input_tokens"] for x in lines)
        metrics = json.loads((ws / "metrics.json").read_text())
        assert metrics["status"] == cell["status"]
        assert (ws / "PROBLEM.md").read_text().startswith(f"# {cell['problem_id']}")


async def test_sweep_runs_every_cell_once_and_skips_them_on_rerun(tmp_path):
    problems = load_suite("examples")[:2]
    cfg = SweepConfig(suite="examples", strategies=["oneshot", "two-step"],
                      models=["scripted:oneshot-qec-correct", "scripted:oneshot-wrong"], repeats=2,
                      concurrency=4, db=tmp_path / "r.sqlite")
    s1 = await Sweep(cfg, problems=problems, progress=False).run()
    assert (s1.cells, s1.ran, s1.failed) == (16, 16, 0)
    assert s1.tokens > 0
    _check_db_matches_workspaces(tmp_path / "r.sqlite")
    s2 = await Sweep(cfg, problems=problems, progress=False).run()
    assert (s2.ran, s2.skipped_done) == (0, 16)
    con = sqlite3.connect(tmp_path / "r.sqlite")
    assert con.execute("SELECT COUNT(*), MIN(runs), MAX(runs) FROM cells").fetchone() == (16, 1, 1)
    # the seam's usage per role made it to the database
    roles = {r[0] for r in con.execute("SELECT DISTINCT role FROM cell_roles")}
    assert {"solver", "formatter"} <= roles
    # and the public problem, never the reference
    pub = json.loads(con.execute("SELECT public_json FROM problems LIMIT 1").fetchone()[0])
    assert pub.get("reference") is None and pub.get("solution") is None


async def test_model_requests_are_capped_globally_across_cells(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_KEY", "sk-local")
    d = _problem_dir(tmp_path, 12)
    with StandinServer(lambda body: ANSWER, latency_s=0.05) as srv:
        cfg = SweepConfig(suite=str(d), strategies=["oneshot"], models=["openai:standin"], repeats=1,
                          concurrency=12, max_inflight=3, db=tmp_path / "r.sqlite",
                          api_base=srv.base_url, api_key_env="STANDIN_KEY")
        s = await Sweep(cfg, progress=False).run()
        assert s.ran == 12
        assert srv.stats.max_in_flight == 3  # 12 cells at once, never more than 3 requests
        assert srv.stats.answered == 12
    con = sqlite3.connect(tmp_path / "r.sqlite")
    assert con.execute("SELECT SUM(input_tokens) FROM cells").fetchone()[0] == srv.stats.prompt_tokens


async def test_a_crashing_cell_is_recorded_failed_and_retried(tmp_path):
    problems = load_suite("examples")[:1]
    calls = {"n": 0}

    async def flaky_solve(*args, **kw):
        from physlab.run.runner import run

        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("infrastructure hiccup")
        return await run(*args, **kw)

    cfg = SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"],
                      db=tmp_path / "r.sqlite", concurrency=1)
    s1 = await Sweep(cfg, problems=problems, solve=flaky_solve, progress=False).run()
    assert (s1.failed, s1.ran) == (1, 0)
    st = ResultsStore(tmp_path / "r.sqlite")
    assert st.cells()[0]["state"] == "failed" and "infrastructure hiccup" in st.cells()[0]["error"]
    s2 = await Sweep(cfg, problems=problems, solve=flaky_solve, progress=False).run()
    assert (s2.failed, s2.ran) == (0, 1)
    assert st.cells()[0]["state"] == "done" and st.cells()[0]["runs"] == 2


def test_bad_sweep_input_exits_2(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for args in (["examples", "--models", "scripted:oneshot-wrong", "--strategies", "nope"],
                 [str(tmp_path / "missing_dir"), "--models", "scripted:oneshot-wrong"],
                 ["examples", "--models", " , "]):
        p = subprocess.run([sys.executable, "-m", "physlab", "bench", "run", *args, "--db",
                            str(tmp_path / "r.sqlite"), "--no-progress"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 2, (args, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.startswith("error:")


def test_bad_sweep_input_with_a_helper_worker_is_one_line_and_stops_the_helper(tmp_path):
    """With --workers 2 the helper process is still starting when the parent finds the bad input:
    it is stopped without the traceback of Python's start-up (a SIGINT mid-import prints one), and
    is not left running (the pipes would stay open and this run would time out)."""
    p = subprocess.run([sys.executable, "-m", "physlab", "bench", "run", str(tmp_path / "missing_dir"),
                        "--models", "scripted:oneshot-wrong", "--workers", "2", "--db", str(tmp_path / "r.sqlite"),
                        "--no-progress"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("error: unknown suite") for line in lines), p.stderr


# `python -m physlab` with SIGINT at Python's default handler, whatever this process inherited: a
# suite started as a background job by a non-interactive shell runs with SIGINT ignored, and its
# children too, so a Ctrl-C test would wait forever; a terminal's Ctrl-C reaches a default handler.
_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "runpy.run_module('physlab', run_name='__main__', alter_sys=True)")


def _bench(args: list[str], ctrl_c: bool = False, **kw) -> subprocess.Popen:
    launch = ["-c", _WITH_CTRL_C] if ctrl_c else ["-m", "physlab"]
    return subprocess.Popen([sys.executable, *launch, "bench", "run", *args, "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _abort_with_stacks(proc: subprocess.Popen) -> str:
    """SIGABRT to a hung `bench run` and its helper processes; run with PYTHONFAULTHANDLER=1, each
    prints the stack of every thread to stderr (shared with the parent) before it dies."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):  # the helpers: children of the parent
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == proc.pid:
                pids.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    for pid in [*pids, proc.pid]:
        try:
            os.kill(pid, signal.SIGABRT)
        except OSError:
            pass
    _, err = proc.communicate(timeout=30)
    return err[-20000:]


def _count(db: Path, where: str = "state='done'") -> int:
    try:
        con = sqlite3.connect(db, timeout=30)
        try:
            return con.execute(f"SELECT COUNT(*) FROM cells WHERE {where}").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_kill_9_mid_sweep_then_resume_loses_nothing_and_repeats_nothing(tmp_path):
    """examples x 3 strategies x 2 scripted models x 3 repeats, SIGKILLed mid-way, re-run."""
    db = tmp_path / "results.sqlite"
    args = ["examples", "--strategies", "oneshot,two-step,rsa",
            "--models", "scripted:oneshot-qec-correct,scripted:oneshot-wrong", "--repeats", "3",
            "--concurrency", "4", "--db", str(db)]
    n_problems = len(load_suite("examples"))
    total = n_problems * 3 * 2 * 3
    proc = _bench(args, cwd=tmp_path)
    deadline = time.monotonic() + 600
    while _count(db) < total // 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    con = sqlite3.connect(db)
    before = dict(con.execute("SELECT key, finished_at FROM cells WHERE state='done'").fetchall())
    running = con.execute("SELECT COUNT(*) FROM cells WHERE state='running'").fetchone()[0]
    assert 0 < len(before) < total, "the kill must land mid-sweep"
    assert running > 0  # the killed worker left claimed cells behind
    con.close()

    proc = _bench(args, cwd=tmp_path)
    out, err = proc.communicate(timeout=1500)
    assert proc.returncode == 0, err
    assert f"{len(before)} already done" in out and f"{total} done" in out
    con = sqlite3.connect(db)
    rows = con.execute("SELECT key, state, runs, finished_at FROM cells").fetchall()
    assert len(rows) == total and all(r[1] == "done" for r in rows)
    for key, _, runs, finished in rows:
        if key in before:  # finished before the kill: never run again
            assert runs == 1 and finished == before[key]
    assert max(r[2] for r in rows) <= 2  # a killed cell ran once more, nothing more
    con.close()
    _check_db_matches_workspaces(db)

    # the report's figures, recomputed independently from the database
    st = ResultsStore(db)
    rep = build_report(st)
    con = sqlite3.connect(db)
    assert {(g.strategy, g.model) for g in rep.groups} == set(con.execute("SELECT DISTINCT strategy, model FROM cells"))
    for g in rep.groups:
        n, tok = con.execute("SELECT COUNT(*), SUM(input_tokens+output_tokens) FROM cells WHERE strategy=? AND model=?",
                             (g.strategy, g.model)).fetchone()
        assert g.cells == n == n_problems * 3 and g.total_tokens == tok
        graded, correct = con.execute("SELECT COUNT(verdict), SUM(verdict='correct') FROM cells WHERE strategy=? "
                                      "AND model=?", (g.strategy, g.model)).fetchone()
        assert g.graded == graded and g.correct == (correct or 0)


@pytest.mark.slow
def test_two_workers_share_one_database(tmp_path):
    """Two worker processes, one SQLite file, one stand-in endpoint: every cell done exactly once."""
    d = _problem_dir(tmp_path, 10)
    db = tmp_path / "shared.sqlite"
    env = {**os.environ, "STANDIN_KEY": "sk-local"}
    with StandinServer(lambda body: ANSWER, latency_s=0.15) as srv:
        args = [str(d), "--strategies", "oneshot,two-step", "--models", "openai:standin", "--repeats", "2",
                "--concurrency", "4", "--db", str(db), "--api-base", srv.base_url, "--api-key-env", "STANDIN_KEY",
                "--workspace-root", str(tmp_path / "runs")]
        workers = [_bench(args, cwd=tmp_path, env=env) for _ in range(2)]
        outs = [w.communicate(timeout=300) for w in workers]
        assert all(w.returncode == 0 for w in workers), [o[1] for o in outs]
        served = srv.stats.answered
    con = sqlite3.connect(db)
    rows = con.execute("SELECT state, runs, worker FROM cells").fetchall()
    assert len(rows) == 40
    assert all(state == "done" and runs == 1 for state, runs, _ in rows)
    assert len({w.split(":")[1] for _, _, w in rows}) == 2  # both workers did part of the grid
    # the endpoint answered exactly the requests the database recorded: no cell was run twice
    assert con.execute("SELECT SUM(calls) FROM cells").fetchone()[0] == served
    assert con.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == served


async def test_ungraded_sweep_is_graded_later_and_exported(tmp_path, monkeypatch, capsys):
    """A suite without references: answers are recorded, graded by the real grader when the
    references arrive, and exported in CritPt's format (a batch its server would refuse: not its ids)."""
    monkeypatch.setenv("STANDIN_KEY", "sk-local")
    d = _problem_dir(tmp_path, 4)
    db = tmp_path / "r.sqlite"
    with StandinServer(lambda body: ANSWER, latency_s=0.0) as srv:
        cfg = SweepConfig(suite=str(d), strategies=["oneshot"], models=["openai:standin"], db=db,
                          api_base=srv.base_url, api_key_env="STANDIN_KEY")
        s = await Sweep(cfg, progress=False).run()
    assert s.ran == 4
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM cells WHERE verdict IS NULL AND answer_code LIKE '%return 1%'"
                       ).fetchone()[0] == 4
    answers = tmp_path / "answers.yaml"
    answers.write_text("q00: '1'\nq01: 1\nq02: '2'\nqO3: '1'\n")  # q03's has not arrived; qO3 is a typo
    from physlab.bench.answers import grade_db

    unknown: list[str] = []
    counts = await grade_db(ResultsStore(db), answers, on_unknown=unknown.extend)
    assert counts == {"correct": 2, "incorrect": 1} and unknown == ["qO3"]  # the typo is reported, not ignored
    got = dict(con.execute("SELECT problem_id, verdict FROM cells").fetchall())
    assert got == {"q00": "correct", "q01": "correct", "q02": "incorrect", "q03": None}
    rep = build_report(ResultsStore(db))
    assert (rep.groups[0].graded, rep.groups[0].correct) == (3, 2)

    from physlab.bench.critpt_export import build_batches

    (batch,) = build_batches(ResultsStore(db))
    assert [x.problem_id for x in batch.submissions] == ["q00", "q01", "q02", "q03"]
    assert all("return 1" in x.generated_code for x in batch.submissions)
    assert "70 of the 70 CritPt test ids missing" in batch.refusal()  # not CritPt's challenges


def test_bad_model_stops_the_sweep_with_one_line_and_leaves_cells_pending(tmp_path):
    d = _problem_dir(tmp_path, 3)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    p = subprocess.run([sys.executable, "-m", "physlab", "bench", "run", str(d), "--models", "openai:gpt-4o",
                        "--db", str(tmp_path / "r.sqlite"), "--no-progress"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error:") and "Traceback" not in p.stderr, p.stderr
    assert "OPENAI_API_KEY" in p.stderr
    con = sqlite3.connect(tmp_path / "r.sqlite")
    assert con.execute("SELECT COUNT(*) FROM cells WHERE state='pending'").fetchone()[0] == 3


@pytest.mark.slow
def test_workers_flag_splits_one_sweep_over_processes(tmp_path):
    d = _problem_dir(tmp_path, 6)
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "STANDIN_KEY": "sk-local"}
    with StandinServer(lambda body: ANSWER, latency_s=0.3) as srv:
        p = subprocess.run([sys.executable, "-m", "physlab", "bench", "run", str(d), "--strategies", "oneshot,two-step",
                            "--models", "openai:standin", "--api-base", srv.base_url, "--api-key-env", "STANDIN_KEY",
                            "--repeats", "3", "--workers", "2", "--concurrency", "2", "--budget-tokens", "50000",
                            "--db", str(db), "--no-progress"],
                           capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
        served = srv.stats.answered
    assert p.returncode == 0, p.stderr
    assert "36 cells: 36 done" in p.stdout
    con = sqlite3.connect(db)
    rows = con.execute("SELECT runs, worker, budget_json FROM cells").fetchall()
    assert len(rows) == 36 and all(r[0] == 1 for r in rows)
    assert all(json.loads(r[2]) == {"max_tokens": 50000} for r in rows)  # the helper got the same budget
    assert len({r[1].split(":")[1] for r in rows}) == 2
    assert con.execute("SELECT SUM(calls) FROM cells").fetchone()[0] == served


async def test_sweep_records_its_worker_run_and_counts_live_tokens_per_call(tmp_path):
    problems = load_suite("examples")[:2]
    cfg = SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-qec-correct"],
                      concurrency=1, db=tmp_path / "r.sqlite")
    snapshots: list[tuple[int, int]] = []

    async def solve(*args, **kw):
        from physlab.run.runner import run

        attempt = await run(*args, **kw)
        snapshots.append((sweep.live.done, sweep.live.tokens))  # the cell has not been written yet
        return attempt

    sweep = Sweep(cfg, problems=problems, solve=solve, progress=False)
    s = await sweep.run()
    assert (s.cells, s.ran, s.failed) == (2, 2, 0)

    con = sqlite3.connect(tmp_path / "r.sqlite")
    runs = con.execute("SELECT worker, sweep, started_at, finished_at, cells_ran, cells_failed, cpu_s "
                       "FROM worker_runs").fetchall()
    assert len(runs) == 1
    worker, name, started, finished, ran, failed, cpu = runs[0]
    assert (worker, name, ran, failed) == (sweep.worker, "examples", s.cells, 0)
    assert cpu > 0 and cpu == pytest.approx(s.cpu_s)
    assert started <= finished
    cells = con.execute("SELECT input_tokens + output_tokens, started_at, finished_at FROM cells "
                        "ORDER BY finished_at").fetchall()
    assert started <= min(c[1] for c in cells) and max(c[2] for c in cells) <= finished

    per_cell = [c[0] for c in cells]
    assert all(t > 0 for t in per_cell)
    assert sweep.live.tokens == sum(per_cell) == s.tokens
    # counted as each call was recorded: when a cell's solve returned (one cell at a time here),
    # its tokens were already counted though its result was not yet in the database
    assert snapshots == [(0, per_cell[0]), (1, per_cell[0] + per_cell[1])]

    s2 = await Sweep(cfg, problems=problems, progress=False).run()  # nothing left to run
    assert s2.ran == 0
    runs = con.execute("SELECT cells_ran FROM worker_runs ORDER BY started_at").fetchall()
    assert runs == [(2,), (0,)]  # one row per worker run


def test_per_worker_splits_the_machine_totals():
    import math

    from physlab.cli.bench import per_worker

    cfg = SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"],
                      concurrency=7, max_inflight=5, sandbox_workers=3)
    before = cfg.model_dump()
    half = per_worker(cfg, 2)
    assert (half.concurrency, half.max_inflight, half.sandbox_workers) == (
        math.ceil(7 / 2), math.ceil(5 / 2), math.ceil(3 / 2))
    assert half.model_dump(exclude={"concurrency", "max_inflight", "sandbox_workers"}) == \
        cfg.model_dump(exclude={"concurrency", "max_inflight", "sandbox_workers"})
    assert cfg.model_dump() == before  # the caller's config is not changed
    assert per_worker(cfg, 1) == cfg
    assert per_worker(cfg, 1).model_dump() == before

    # unset totals: no in-flight cap of its own (it follows concurrency); the sandbox pool is the
    # machine's CPUs, split
    cfg = SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:oneshot-wrong"],
                      concurrency=1)
    half = per_worker(cfg, 2)
    assert (half.concurrency, half.max_inflight) == (1, None)  # never below one cell
    assert half.sandbox_workers == math.ceil((os.cpu_count() or 2) / 2)
    assert per_worker(cfg, 1).sandbox_workers is None


@pytest.mark.slow
def test_interrupting_a_multi_worker_sweep_stops_every_worker_and_gives_cells_back(tmp_path):
    """Ctrl-C on `bench run --workers 2` (SIGINT to the parent only, as `kill -INT` would): the
    helper stops too, nothing is left running, every claimed cell is pending again."""
    d = _problem_dir(tmp_path, 8)
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "STANDIN_KEY": "sk-local", "PYTHONFAULTHANDLER": "1"}
    with StandinServer(lambda body: ANSWER, latency_s=30) as srv:
        proc = _bench([str(d), "--strategies", "two-step", "--models", "openai:standin", "--api-base", srv.base_url,
                       "--api-key-env", "STANDIN_KEY", "--workers", "2", "--concurrency", "8", "--db", str(db)],
                      ctrl_c=True, cwd=tmp_path, env=env)
        deadline = time.monotonic() + 120
        while srv.stats.in_flight < 8 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert srv.stats.in_flight == 8, "both workers should have their cells waiting on the model"
        assert _count(db, "state='running'") == 8
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("`bench run --workers 2` did not stop within 60 s of Ctrl-C; the stacks of its "
                        "processes:\n" + _abort_with_stacks(proc))
    assert proc.returncode == 130
    assert err.startswith("interrupted: ") and "run the same command again to resume" in err, err
    assert err.count("interrupted") == 1, err  # the parent says it, not each worker
    assert "Traceback" not in err
    assert _count(db, "state='pending'") == 8
    assert _count(db, "state='running'") == 0
    con = sqlite3.connect(db)
    assert len({w for (w,) in con.execute("SELECT DISTINCT worker FROM cells WHERE worker IS NOT NULL")}) == 0


async def test_prompt_cache_tokens_reach_the_database_and_the_report_per_role(tmp_path, monkeypatch):
    """The cached tokens the server reports (vLLM's prefix cache) are stored per call and per role
    and the report shows, per role, the share of input read from the cache (issue #26)."""
    from physlab.bench.report import summary_rows
    from physlab.llm.standin import Habits

    monkeypatch.setenv("STANDIN_KEY", "sk-local")
    d = _problem_dir(tmp_path, 3)
    with StandinServer(lambda body: ANSWER, habits=Habits(prefix_cache=True)) as srv:
        cfg = SweepConfig(suite=str(d), strategies=["oneshot"], models=["openai:standin"], repeats=2,
                          concurrency=1, db=tmp_path / "r.sqlite", api_base=srv.base_url, api_key_env="STANDIN_KEY")
        assert (await Sweep(cfg, progress=False).run()).ran == 6
    served = sum(u["prompt_tokens_details"]["cached_tokens"] for u in srv.usages)
    assert served > 0                      # the strategy's instructions come back as a prefix
    con = sqlite3.connect(tmp_path / "r.sqlite")
    assert con.execute("SELECT SUM(cache_read_tokens) FROM calls").fetchone()[0] == served
    per_role = dict(con.execute("SELECT role, 1.0 * SUM(cache_read_tokens) / SUM(input_tokens) FROM cell_roles "
                                "GROUP BY role").fetchall())
    (g,) = build_report(ResultsStore(tmp_path / "r.sqlite")).groups
    assert g.cache_read_tokens == served and g.role_cached == pytest.approx(per_role)
    (row,) = summary_rows(build_report(ResultsStore(tmp_path / "r.sqlite")))
    assert row["cache_read_tokens"] == str(served) and row["role_cached_input"].startswith(next(iter(per_role)))
