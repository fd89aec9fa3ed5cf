"""A typo in `--resume` is one line naming the folder, before anything else is asked for (issue
44: "runs/does-not-exist" led on to --model, then --strategy, then PROBLEM)."""

from __future__ import annotations

import pytest

from physlab.cli import main


@pytest.fixture
def resume(capsys):
    def resume(path, *flags):
        with pytest.raises(SystemExit) as exc:
            main(["solve", "--resume", str(path), "--console", "quiet", *flags])
        out = capsys.readouterr()
        return exc.value.code, (out.out + out.err).strip()

    return resume


@pytest.mark.parametrize("flags", [(), ("--model", "scripted:lab-qec"), ("--model", "scripted:lab-qec", "-s", "lab")])
def test_a_folder_that_does_not_exist_is_one_line_first(tmp_path, flags, resume):
    code, out = resume(tmp_path / "runs" / "does-not-exist", *flags)
    assert code == 2 and len(out.splitlines()) == 1, out
    assert "does-not-exist" in out and "no such run directory" in out
    assert "--model" not in out and "--strategy" not in out and "PROBLEM" not in out


def test_a_folder_or_file_that_is_not_a_run_is_one_line_first(tmp_path, resume):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("not a run\n")
    code, out = resume(tmp_path / "notes", "--model", "scripted:lab-qec")
    assert code == 2 and len(out.splitlines()) == 1 and "not a run directory" in out, out
    code, out = resume(tmp_path / "notes" / "todo.txt")
    assert code == 2 and len(out.splitlines()) == 1 and "not a run directory" in out, out


def test_a_run_from_before_options_were_recorded_still_asks_for_its_model(tmp_path, resume):
    """The hard negative: a real run's folder (it has its calls.jsonl) passes the check and goes on
    to what the resume needs."""
    ws = tmp_path / "old-run"
    ws.mkdir()
    (ws / "calls.jsonl").write_text("")
    code, out = resume(ws)
    assert code == 2 and "give --model" in out, out
