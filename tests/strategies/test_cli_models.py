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
