from typer.testing import CliRunner

from physlab.cli import app


def test_models_lists_every_strategy_and_the_demo_models():
    out = CliRunner().invoke(app, ["models"])
    assert out.exit_code == 0, out.output
    for strategy in ("lab", "oneshot", "two-step", "rsa", "manager", "tpbench-vote", "tpbench-bon",
                     "tpbench-weak", "tpbench-sympy", "multi-round", "minions", "scalar"):
        assert strategy in out.output.split("\n")[0]
    for scenario in ("lab-qec", "oneshot-qec-correct", "minions-demo", "scalar-demo"):
        assert f"  {scenario} " in out.output


def test_strategies_show_lists_every_parameter_with_its_default_and_its_paper():
    out = CliRunner().invoke(app, ["strategies", "show", "rsa"])
    assert out.exit_code == 0, out.output
    text = out.output
    assert text.startswith("rsa: Recursive Self-Aggregation")
    for line in ("population = 6  (integer >= 1)", "subset_size = 2  (integer >= 1)", "rounds = 4  (integer >= 1)",
                 "temperature = unset  (number in [0, 2] or unset)", "concurrency = 8  (integer in [1, 256])"):
        assert f"  {line}\n" in text, line
    assert text.count("default from: the physics-intern paper §4") == 3     # the paper, not its seed file


def test_every_default_says_where_it_comes_from_and_the_seeds_numbers_are_the_defaults():
    import json

    defaults = {}
    for name in ("lab", "oneshot", "two-step", "rsa", "manager", "tpbench-vote", "tpbench-bon", "tpbench-weak",
                 "tpbench-sympy", "multi-round", "minions", "scalar"):
        out = CliRunner().invoke(app, ["strategies", "show", name, "--json"])
        assert out.exit_code == 0, out.output
        params = json.loads(out.output)["params"]
        assert all(p["source"] and p["description"] for p in params.values()), name
        defaults[name] = {key: (p.get("default"), p["source"]) for key, p in params.items()}
    papers = {  # (strategy, parameter): (the seed's number, its paper)
        ("minions", "cv"): (2, "PhysicsMinions"), ("minions", "max_iterations"): (5, "PhysicsMinions"),
        ("minions", "temperature"): (0.6, "PhysicsMinions"), ("tpbench-weak", "n_samples"): (50, "TPBench"),
        ("tpbench-weak", "n_points"): (5, "TPBench"), ("tpbench-weak", "k_verif"): (10, "TPBench"),
        ("tpbench-sympy", "delta"): (0.05, "TPBench"), ("multi-round", "extra_rounds"): (4, "TPBench"),
        ("rsa", "population"): (6, "physics-intern paper"), ("rsa", "subset_size"): (2, "physics-intern paper"), ("rsa", "rounds"): (4, "physics-intern paper"),
        ("manager", "scratchpad_window"): (5, "physics-intern paper"), ("scalar", "max_iterations"): (4, "SCALAR"),
        ("scalar", "temperature"): (0.7, "SCALAR"), ("scalar", "stagnation_delta"): (5.0, "SCALAR"),
    }
    for (strategy, key), (number, seed) in papers.items():
        default, source = defaults[strategy][key]
        assert default == number and seed in source, (strategy, key, default, source)


def test_strategies_list_and_an_unknown_name(capsys):
    import pytest

    from physlab.cli import main

    out = CliRunner().invoke(app, ["strategies", "list"])
    listed = {line.split()[0]: line for line in out.output.splitlines()}
    assert out.exit_code == 0 and {"lab", "oneshot", "rsa", "tpbench-sympy", "minions", "scalar"} <= set(listed)
    assert "Judge" in listed["scalar"] and "Recursive Self-Aggregation" in listed["rsa"]
    with pytest.raises(SystemExit) as exc:
        main(["strategies", "show", "rsaa"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: ") and "unknown strategy 'rsaa'" in err and "\n" not in err


def test_a_bad_parameter_is_one_line_and_exit_2_before_any_workspace(tmp_path, capsys):
    import pytest

    from physlab.cli import main

    yml = tmp_path / "p.yaml"
    yml.write_text("id: double\nproblem: Return twice x.\n")
    for bad, needle in ((["-s", "rsa", "-p", "population=0"], "strategy rsa: --param population: input should be "
                                                               "greater than or equal to 1 (got 0)"),
                        (["-s", "rsa", "-p", "populaton=3"], "strategy rsa: unknown --param 'populaton'; "
                                                             "expected one of: temperature, concurrency, population"),
                        (["-s", "rsa", "-p", "population=2", "-p", "subset_size=3"], "expected at most population"),
                        (["-s", "tpbench-weak", "-p", "k_verif=true"], "--param k_verif: input should be a valid "
                                                                       "integer (got True)")):
        with pytest.raises(SystemExit) as exc:
            main(["solve", str(yml), "-m", "scripted:echo", "--workspace", str(tmp_path / "w"), *bad])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and err == f"error: {err[7:]}" and needle in err and "\n" not in err, err
        assert not (tmp_path / "w").exists()


def test_models_points_at_every_strategys_parameters_with_their_defaults():
    import json

    from physlab.strategies import registry

    out = CliRunner().invoke(app, ["models"])
    assert "see `physlab strategies show NAME`" in out.output.splitlines()[0]
    for name in registry.names():
        res = CliRunner().invoke(app, ["strategies", "show", name, "--json"])
        assert res.exit_code == 0, (name, res.output)
        params = json.loads(res.output)["params"]
        assert all("default" in p or p.get("anyOf") or p.get("type") for p in params.values()), name
        text = CliRunner().invoke(app, ["strategies", "show", name]).output
        assert all(f"  {key} = " in text for key in params), name       # every parameter with its default


def test_strategies_show_says_the_output_cap_a_request_carries_by_role():
    """Issue #47 item 3: a request to a local server carries an output cap even when the registry
    gives none (a small model otherwise writes to the end of its window); the default is said, per role,
    with where it comes from."""
    import json

    text = CliRunner().invoke(app, ["strategies", "show", "lab"]).output
    cap_line = next(line for line in text.splitlines() if line.startswith("output cap"))
    assert "no max_output_tokens: 16,384 tokens (orchestrator 4,096; formatter 8,192)" in cap_line
    assert "seed 000 §5" in cap_line
    res = CliRunner().invoke(app, ["strategies", "show", "oneshot", "--json"])
    cap = json.loads(res.output)["output_cap"]
    assert cap["default"] == 16_384 and cap["by_role"]["orchestrator"] == 4_096
