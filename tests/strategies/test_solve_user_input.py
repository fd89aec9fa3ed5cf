"""`physlab solve` as a physicist types it: bad --config files, --resume of the wrong run, replaying a
run with another strategy and --replace are one line on stderr and exit 2, and never cost earlier work."""

from __future__ import annotations

import json

import pytest

from physlab.cli import main
from physlab.llm.scripted import register_scenario

CODE_REPLY = "Work.\n\n```python\ndef answer(x):\n    y = 2 * x\n    return y\n```\n"
register_scenario("test-input-code", lambda: (lambda role, m, i: CODE_REPLY))
MODEL = "scripted:test-input-code"
YAML = "id: {id}\nproblem: Return twice x.\nanswer_template: |\n  def answer(x):\n      y = ...\n      return y\n"


def cli(capsys, *args: str) -> tuple[int, str]:
    """Exit code and stderr of `physlab ARGS`."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code, capsys.readouterr().err


def one_error_line(err: str) -> bool:
    lines = err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err


@pytest.fixture
def problems(tmp_path):
    a, b = tmp_path / "double.yaml", tmp_path / "other.yaml"
    a.write_text(YAML.format(id="double"))
    b.write_text(YAML.format(id="other"))
    return a, b


@pytest.fixture
def finished(tmp_path, capsys, problems):
    """A finished oneshot run with its answer."""
    ws = tmp_path / "done"
    code, _ = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--workspace", str(ws), "-q")
    assert code == 0
    return ws


def snapshot(ws):
    return {p.name: p.read_bytes() for p in ws.iterdir() if p.is_file()}


@pytest.mark.parametrize("content", [b"\xff\xfe\x00bad", b"1: 2\n"])
def test_config_file_that_is_not_utf8_or_has_non_name_keys_is_one_line(tmp_path, capsys, problems, content):
    cfg = tmp_path / "params.yaml"
    cfg.write_bytes(content)
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--config", str(cfg),
                    "--workspace", str(tmp_path / "w"))
    assert code == 2 and one_error_line(err) and "params.yaml" in err
    assert not (tmp_path / "w").exists()


def test_resume_with_another_strategy_or_problem_is_refused_and_the_run_untouched(capsys, problems, finished):
    before = snapshot(finished)
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "two-step", "-m", MODEL, "--resume", str(finished))
    assert code == 2 and one_error_line(err) and "--strategy oneshot" in err
    code, err = cli(capsys, "solve", str(problems[1]), "-s", "oneshot", "-m", MODEL, "--resume", str(finished))
    assert code == 2 and one_error_line(err) and "'double'" in err
    assert snapshot(finished) == before


def test_resume_of_a_finished_run_of_a_strategy_that_cannot_continue_keeps_its_answer(capsys, problems, finished):
    before = snapshot(finished)
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--resume", str(finished))
    assert code == 2 and one_error_line(err) and "already has its answer" in err
    assert snapshot(finished) == before


def test_replaying_a_run_with_another_strategy_is_bad_input_before_any_workspace(tmp_path, capsys, problems,
                                                                                  finished):
    ws = tmp_path / "again"
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "two-step", "-m", f"replay:{finished}",
                    "--workspace", str(ws))
    assert code == 2 and one_error_line(err) and "--strategy oneshot" in err
    assert not ws.exists()
    code, err = cli(capsys, "solve", str(problems[1]), "-s", "oneshot", "-m", f"replay:{finished / 'calls.jsonl'}",
                    "--workspace", str(ws))
    assert code == 2 and one_error_line(err) and not ws.exists()


def test_replace_starts_a_run_over_but_never_deletes_a_directory_that_is_not_a_run(tmp_path, capsys, problems,
                                                                                   finished):
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--workspace", str(finished))
    assert code == 2 and "--replace" in err
    (finished / "notes.txt").write_text("old")
    code, _ = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--workspace", str(finished),
                  "--replace", "-q")
    assert code == 0 and not (finished / "notes.txt").exists()
    assert len((finished / "calls.jsonl").read_text().splitlines()) == 1
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("precious")
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--workspace", str(mine),
                    "--replace")
    assert code == 2 and one_error_line(err) and (mine / "chapter1.tex").read_text() == "precious"
    code, err = cli(capsys, "solve", str(problems[0]), "-s", "oneshot", "-m", MODEL, "--resume", str(finished),
                    "--replace")
    assert code == 2 and one_error_line(err)
    assert json.loads((finished / "metrics.json").read_text())["has_answer"] is True


def test_resume_at_a_non_numeric_iteration_names_the_problem(capsys, problems, finished):
    code, err = cli(capsys, "solve", str(problems[0]), "-m", MODEL, "--resume", f"{finished}@last")
    assert code == 2 and one_error_line(err) and "iteration number" in err
