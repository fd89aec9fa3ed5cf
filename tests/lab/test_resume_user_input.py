"""Resuming and talking to a finished lab run: a message sent after the end is taken in on --resume,
bad resume input is one line and exit 2 and leaves the run as it was."""

from __future__ import annotations

import shutil

import pytest

from physlab.cli import main
from physlab.cli.solve import parse_params
from physlab.errors import UserError
from physlab.lab import inbox
from physlab.problems.model import Problem
from tests.lab.helpers import git_subjects, solve, state_of
from tests.lab.mini import TEMPLATE, mini_problem, register


def cli(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    try:
        main(list(args))
    except SystemExit as exc:
        return exc.code, capsys.readouterr().err
    return 0, capsys.readouterr().err


def one_error_line(err: str) -> bool:
    lines = err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("error: ")


@pytest.fixture
async def finished(tmp_path):
    ws = tmp_path / "run"
    await solve(ws, register("lab-mini-input"), problem=mini_problem())
    return ws


def snapshot(ws):
    return {p.name: p.read_bytes() for p in ws.iterdir() if p.is_file()}


async def test_a_challenge_sent_after_the_run_completed_reaches_the_adjudicator_on_resume(finished):
    assert state_of(finished).status == "complete"
    er = state_of(finished).active_ers()[0].id
    inbox.post(finished, "challenge", "UPHOLD: the product was never cross-checked", on=er)
    a = await solve(finished, register("lab-mini-input"), problem=mini_problem(), resume=True)
    s = state_of(finished)
    assert a.status == "complete" and s.inbox_consumed
    chal = next(c for c in s.critiques if c.source == "human")
    assert chal.status == "upheld" and s.er(er).status == "demoted"
    assert "from the physicist" in " ".join(git_subjects(finished))
    assert any(e.kind == "reopened" for e in s.events)
    # while it ran again, the old answer was not presented as standing: the commit that took the
    # challenge in carries a provisional answer (the old result, now demoted, is not its source)
    import subprocess
    sha = next(line.split()[0] for line in subprocess.run(["git", "log", "--format=%H %s"], cwd=finished,
               capture_output=True, text=True).stdout.splitlines() if "from the physicist" in line)
    md = subprocess.run(["git", "show", f"{sha}:ANSWER.md"], cwd=finished, capture_output=True, text=True).stdout
    assert "Standing: complete" not in md


async def test_stop_alone_does_not_reopen_a_completed_run(finished):
    before = git_subjects(finished)
    inbox.post(finished, "stop")
    a = await solve(finished, register("lab-mini-input"), problem=mini_problem(), resume=True)
    assert a.status == "complete" and git_subjects(finished) == before


@pytest.mark.parametrize("value", ["abc", "1.5", "true", "-1"])
async def test_resume_iteration_must_be_a_whole_number(finished, value):
    before = snapshot(finished)
    params = parse_params([f"resume_iteration={value}"], None)  # as `--param resume_iteration=...` gives it
    with pytest.raises(UserError, match="iteration"):
        await solve(finished, register("lab-mini-input"), problem=mini_problem(), resume=True, **params)
    assert snapshot(finished) == before


async def test_a_damaged_state_is_bad_input_on_resume_and_keeps_the_files(finished):
    (finished / "state.json").write_text("{bad")
    shutil.rmtree(finished / ".git")
    before = snapshot(finished)
    with pytest.raises(UserError, match="state.json cannot be read"):
        await solve(finished, register("lab-mini-input"), problem=mini_problem(), resume=True)
    assert snapshot(finished) == before


async def test_messages_on_an_unknown_claim_are_refused(finished, capsys):
    for args in (["comment", str(finished), "sign?", "--on", "WH-99"],
                 ["challenge", str(finished), "doubt", "--on", "ER-7"],
                 ["hint", str(finished), "try", "--on", "RQ-42"]):
        code, err = cli(capsys, "runs", *args)
        assert code == 2 and one_error_line(err) and "not in this run" in err
    assert inbox.read(finished) == []
    code, _ = cli(capsys, "runs", "comment", str(finished), "sign?", "--on", "WH-1")
    assert code == 0 and len(inbox.read(finished)) == 1


async def test_resume_with_another_problem_is_refused(finished):
    other = Problem(id="other", statement="Compute 6 times 8.", answer_template=TEMPLATE)
    before = snapshot(finished)
    with pytest.raises(UserError, match="'mini'"):
        await solve(finished, register("lab-mini-input"), problem=other, resume=True)
    assert snapshot(finished) == before


async def test_resuming_a_completed_open_question_does_not_run_it_again(tmp_path):
    ws = tmp_path / "question"
    question = Problem(id="mini", statement="Compute 6 times 7 exactly.")  # no template: answered in ANSWER.md
    first = await solve(ws, register("lab-mini-input"), problem=question)
    assert first.status == "complete" and state_of(ws).final_answer_code is None
    before, answer = git_subjects(ws), (ws / "ANSWER.md").read_text()
    again = await solve(ws, register("lab-mini-input"), problem=question, resume=True)
    assert again.status == "complete" and git_subjects(ws) == before
    assert (ws / "ANSWER.md").read_text() == answer
