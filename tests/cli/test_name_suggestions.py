"""A mistyped name gets a "did you mean" with the name meant: a model's provider (`opnai:gpt-4o`
means `openai:gpt-4o`, not a model of another provider), a strategy, a scripted model. Names that
are right, or a provider pydantic-ai knows that we do not list, are left alone."""

from __future__ import annotations

import pytest

from physlab.errors import UserError
from physlab.llm.models import check_model_name
from physlab.llm.scripted import get_scenario
from physlab.strategies import registry


def refusal(fn, *args) -> str:
    with pytest.raises(UserError) as exc:
        fn(*args)
    return str(exc.value)


@pytest.mark.parametrize("typed, meant", [("opnai:gpt-4o", "openai:gpt-4o"), ("openia:gpt-4o-mini", "openai:gpt-4o-mini"),
                                          ("antropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
                                          ("google-gl:gemini-2.5-pro", "google-gla:gemini-2.5-pro"),
                                          ("scripts:lab-qec", "scripted:lab-qec")])
def test_a_mistyped_provider_suggests_the_same_model_at_the_provider_meant(typed, meant):
    said = refusal(check_model_name, typed)
    assert f"did you mean '{meant}'?" in said and "snowflake" not in said and "--model" in said


def test_right_names_and_other_known_providers_pass():
    for spec in ("openai:gpt-4o", "anthropic:claude-sonnet-4-5", "google-gla:gemini-2.5-pro", "scripted:lab-qec",
                 "ollama:llama3.1", "groq:llama-3.3-70b-versatile"):
        check_model_name(spec)


def test_a_mistyped_strategy_or_scripted_model_gets_a_did_you_mean():
    assert "did you mean 'oneshot'?" in refusal(registry.get, "onesht")
    assert "did you mean 'tpbench-vote'?" in refusal(registry.get, "tpbench_vote")
    said = refusal(registry.get, "quantum")
    assert "did you mean" not in said and "lab, manager" in said           # nothing close: the list
    assert "did you mean 'scripted:lab-qec'?" in refusal(get_scenario, "lab-qc")
    assert "did you mean 'scripted:oneshot-qec-correct'?" in refusal(get_scenario, "oneshot-qec")


def physlab(capsys, *args: str) -> tuple[int, str]:
    """`physlab ARGS` as the entry point runs it (its exit code, what it wrote to stderr)."""
    from physlab.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0), capsys.readouterr().err
    return 0, capsys.readouterr().err


def test_solve_says_it_in_one_line_before_anything_runs(tmp_path, capsys):
    ws = tmp_path / "run"
    code, err = physlab(capsys, "solve", "examples/sm_ising_1d", "--model", "opnai:gpt-4o", "--workspace", str(ws))
    assert code == 2 and "did you mean 'openai:gpt-4o'?" in err and len(err.splitlines()) == 1 and not ws.exists()
    code, err = physlab(capsys, "solve", "examples/sm_ising_1d", "--model", "scripted:echo", "-s", "onesht")
    assert code == 2 and "did you mean 'oneshot'?" in err and len(err.splitlines()) == 1
