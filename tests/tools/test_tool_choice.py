"""--tools: which tools a run gives the lab, parsed once into RunOptions and recorded with the run."""

from __future__ import annotations

import pytest

from physlab.errors import UserError
from physlab.run.options import RunOptions, differences, merge
from physlab.tools.choice import ToolChoice


def test_the_flag_reads_each_tool_and_writes_itself_back(tmp_path):
    c = ToolChoice.parse(f"cas, literature ,corpus={tmp_path},web")
    assert (c.cas, c.literature, c.corpus, c.web) == (True, True, str(tmp_path.resolve()), True)
    assert ToolChoice.parse(str(c)) == c
    assert str(ToolChoice.parse("none")) == "none"
    assert ToolChoice.parse("literature") == ToolChoice(cas=False, literature=True)     # exactly what was named
    standin = ToolChoice.parse("literature=http://127.0.0.1:8001/")
    assert standin.literature_url == "http://127.0.0.1:8001" and ToolChoice.parse(str(standin)) == standin


@pytest.mark.parametrize("value, says", [
    ("cas,mathematica", "unknown tool 'mathematica'"),
    ("corpus", "corpus needs a folder"),
    ("corpus=/no/such/folder/here", "no such folder"),
    ("literature=ftp://x", "http(s) URL"),
    ("none,cas", "'none' cannot be combined"),
    ("", "comma-separated list"),
])
def test_a_bad_value_is_one_line_naming_the_flag(value, says):
    with pytest.raises(UserError) as err:
        ToolChoice.parse(value)
    assert says in str(err.value) and "--tools" in str(err.value) and "\n" not in str(err.value)


def test_defaults_computer_algebra_on_literature_only_for_a_physicists_question():
    assert ToolChoice.default(open_question=False) == ToolChoice(cas=True, literature=False)
    assert ToolChoice.default(open_question=True) == ToolChoice(cas=True, literature=True)


def test_run_options_record_the_choice_and_a_resume_says_what_a_new_flag_changes():
    before = RunOptions(strategy="lab", model="scripted:x", tools=ToolChoice())
    again = RunOptions.model_validate_json(before.model_dump_json())
    assert again.tools == ToolChoice()
    after = merge(before, {"tools": ToolChoice.parse("cas,literature")})
    assert differences(before, after) == ["--tools cas,literature overrides the recorded cas"]


def cli(capsys, *args: str) -> tuple[int, str]:
    from physlab.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code, capsys.readouterr().err


def test_solve_refuses_a_bad_tools_value_with_one_line(tmp_path, capsys):
    q = tmp_path / "q.md"
    q.write_text("# What is 2+2?\n")
    code, err = cli(capsys, "solve", str(q), "--model", "scripted:x", "--tools", "cas,telescope")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "unknown tool 'telescope'" in err and "--tools" in err


def test_bench_run_refuses_a_bad_tools_value_with_one_line(tmp_path, capsys):
    code, err = cli(capsys, "bench", "run", "examples", "--models", "scripted:x", "--tools", "web,??",
                    "--db", str(tmp_path / "r.sqlite"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "unknown tool '??'" in err


def test_a_run_without_tools_gets_its_problems_default(tmp_path):
    from physlab.problems.files import load_file
    from physlab.problems.model import Problem
    from physlab.run.runner import default_tools

    q = tmp_path / "question.md"
    q.write_text("# Why is the sky blue?\n\nExplain Rayleigh scattering's frequency dependence.\n")
    (question,) = load_file(q)
    assert default_tools(question) == ToolChoice(cas=True, literature=True)      # a physicist's own question
    benchmark = Problem(id="b", statement="Compute 6*7.", answer_template="def answer():\n    return ...\n")
    assert default_tools(benchmark) == ToolChoice(cas=True, literature=False)    # could find the answer key


def test_a_sweep_with_two_tool_arms_has_cells_for_each(tmp_path):
    from physlab.bench.sweep import Sweep, SweepConfig

    config = SweepConfig(suite="examples", strategies=["oneshot"], models=["scripted:x"], db=tmp_path / "r.sqlite",
                         tools=[ToolChoice.parse("none"), ToolChoice.parse("cas")])
    _, specs = Sweep(config).plan()
    arms = {spec.tools for spec in specs}
    assert arms == {ToolChoice.parse("none"), ToolChoice.parse("cas")}
    assert len({s.key for s in specs}) == len(specs) == 2 * len({s.problem_id for s in specs})
    assert any("@tools=" in s.key and "none" in s.key for s in specs)


def test_extra_sweep_workers_get_the_same_arms():
    from physlab.bench.sweep import SweepConfig
    from physlab.cli.bench import worker_argv

    config = SweepConfig(suite="examples", strategies=["lab"], models=["scripted:x"],
                         tools=[ToolChoice.parse("none"), ToolChoice.parse("cas,web")])
    argv = worker_argv(config)
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--tools"] == ["none", "cas,web"]
