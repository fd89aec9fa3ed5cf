"""The engine's paths with scripted models through the real runner: completion, budgets,
pause/stop/human messages (inbox), resume and rewind."""

from __future__ import annotations

from physlab.lab import inbox
from physlab.lab.state.invariants import check
from physlab.lab.workspace import RunWorkspace
from physlab.llm.usage import Budget
from tests.lab.helpers import calls, git_subjects, solve, state_of
from tests.lab.mini import Mini, mini_problem, register


async def test_mini_run_completes_with_one_commit_per_iteration(tmp_path):
    model = register("lab-mini")
    a = await solve(tmp_path / "r", model, problem=mini_problem())
    assert a.status == "complete" and a.answer_code.strip().endswith("return value")
    assert "value = 42" in a.answer_code
    s = state_of(tmp_path / "r")
    assert check(s) == [] and s.iteration == 3
    assert git_subjects(tmp_path / "r")[0].startswith("iteration 3: complete")
    assert (tmp_path / "r" / "RESEARCH_STATE.md").read_text().count("ER-1") >= 1


async def test_max_iterations_forces_the_formatter(tmp_path):
    model = register("lab-mini-iter")
    a = await solve(tmp_path / "r", model, problem=mini_problem(), max_iterations=2)
    s = state_of(tmp_path / "r")
    assert a.stop_reason == "max_iterations"
    assert a.status == "partially_complete" and "42" in a.answer_code     # ER-1 existed after iteration 2
    assert s.status == "partially_complete" and check(s) == []


async def test_call_budget_ends_with_forced_formatter(tmp_path):
    model = register("lab-mini-budget")
    a = await solve(tmp_path / "r", model, problem=mini_problem(), budget=Budget(max_calls=6))
    assert a.stop_reason == "budget:max_calls"
    assert a.status in ("partially_complete", "no_answer")
    recs = calls(tmp_path / "r")
    assert len(recs) <= 6                               # the forced formatter within the budget, no grace
    assert recs[-1]["role"] == "formatter"
    s = state_of(tmp_path / "r")
    assert check(s) == [] and "interrupted (max_calls)" in " ".join(git_subjects(tmp_path / "r"))


async def test_human_messages_pause_resume_and_routing(tmp_path):
    ws = tmp_path / "r"

    class Pausing(Mini):
        seen: dict = {}
        hooks = {2: lambda: inbox.post(ws, "pause")}

    model = register("lab-mini-pause", Pausing)
    a = await solve(ws, model, problem=mini_problem())
    s = state_of(ws)
    assert s.status == "paused" and a.status == "paused" and a.verdict is None and s.iteration == 3
    er = s.active_ers()[0].id
    inbox.post(ws, "challenge", "UPHOLD: the product was never cross-checked", on=er)
    inbox.post(ws, "redirect", "Also derive it by repeated addition")
    inbox.post(ws, "comment", "looks plausible", on="WH-1")
    inbox.post(ws, "hint", "use integers only")
    a = await solve(ws, model, problem=mini_problem(), resume=True)
    s = state_of(ws)
    assert a.status == "complete", a.stop_reason
    routes = {h.kind: h.routed_to for h in s.human_messages}
    assert routes == {"pause": "engine", "challenge": "adjudicator", "redirect": "planner",
                      "comment": "orchestrator", "hint": "orchestrator"}
    chal = next(c for c in s.critiques if c.source == "human" and c.target_type == "ER")
    assert chal.status == "upheld" and s.er(er).status == "demoted"
    assert any(w.status == "established" for w in s.whs) and check(s) == []
    assert any("Also derive it by repeated addition" in p for p in Pausing.seen["planner"])
    assert any("looks plausible" in p and "use integers only" in p for p in Pausing.seen["orchestrator"])
    assert any("use integers only" in p for p in Pausing.seen["computer"])
    assert "from the physicist" in " ".join(git_subjects(ws))


async def test_stop_message_ends_the_run_with_best_answer(tmp_path):
    ws = tmp_path / "r"

    class Stopping(Mini):
        seen: dict = {}
        hooks = {3: lambda: inbox.post(ws, "stop")}

    a = await solve(ws, register("lab-mini-stop", Stopping), problem=mini_problem())
    # iteration 3 completes normally (the message is taken in at the next boundary) ...
    assert a.status == "complete"
    # ... so a stop posted earlier is what ends a run early:
    ws2 = tmp_path / "r2"

    class Stopping2(Mini):
        seen: dict = {}
        hooks = {2: lambda: inbox.post(ws2, "stop")}

    a = await solve(ws2, register("lab-mini-stop2", Stopping2), problem=mini_problem())
    assert a.stop_reason == "stopped by the physicist" and a.status == "partially_complete"
    assert state_of(ws2).status == "partially_complete"


async def test_rewind_and_resume_from_an_earlier_iteration(tmp_path):
    ws = tmp_path / "r"
    model = register("lab-mini-rewind")
    await solve(ws, model, problem=mini_problem())
    n_commits = len(git_subjects(ws))
    st = RunWorkspace(ws).rewind(1)
    assert st.iteration == 1 and not (ws / "answer.py").exists()
    a = await solve(ws, model, problem=mini_problem(), resume=True)
    assert a.status == "complete" and state_of(ws).iteration == 3
    subjects = git_subjects(ws)
    assert len(subjects) > n_commits and any(s.startswith("rewind to iteration 1") for s in subjects)
    # the superseded iterations stay in the history
    assert sum(s.startswith("iteration 3") for s in subjects) == 2


async def test_resume_param_from_iteration(tmp_path):
    ws = tmp_path / "r"
    model = register("lab-mini-rewind2")
    await solve(ws, model, problem=mini_problem())
    a = await solve(ws, model, problem=mini_problem(), resume=True, resume_iteration=2)
    assert a.status == "complete"
    assert any(s.startswith("rewind to iteration 2") for s in git_subjects(ws))
