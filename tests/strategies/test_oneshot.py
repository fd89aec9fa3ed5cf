"""The `oneshot` strategy: one solver call, code extracted to answer.py, reply to ANSWER.md."""

from __future__ import annotations

import json

import pytest

from physlab.api import solve_async
from physlab.cli import main
from physlab.errors import UserError
from physlab.problems.model import Problem
from physlab.strategies.oneshot import extract_code

QEC = "examples/quantum_error_correction_main"


def test_extract_code_takes_the_final_block():
    reply = "First a sketch:\n```python\nx = 1\n```\nthen\n```python\ndef answer(p):\n    return 1\n```\n"
    code = extract_code(reply)
    assert code is not None and "def answer(p)" in code
    assert extract_code("no code at all") is None and extract_code(None) is None


async def test_prompt_is_public_problem_plus_template_with_images(tmp_path):
    img = tmp_path / "circuit.png"
    img.write_bytes(b"\x89PNG\r\n\x1a\nimg")
    prob = Problem(id="p", statement="Compute $F(p)$ for the circuit.", images=[img],
                   answer_template="def answer(p):\n    F = ...\n    return F\n",
                   solution="SECRET_SOLUTION")  # answer key without a reference: not graded (fast)
    att = await solve_async(prob, "oneshot", "scripted:oneshot-wrong", workspace=tmp_path / "w")
    rec = json.loads((tmp_path / "w" / "calls.jsonl").read_text().splitlines()[0])
    content = rec["request"]["messages"][0]["parts"][0]["content"]
    text = "\n".join(c for c in content if isinstance(c, str))
    assert "Compute $F(p)$" in text and "F = ..." in text and "```python" in text
    assert "SECRET" not in json.dumps(rec["request"])
    assert any(isinstance(c, dict) and c.get("media_type") == "image/png" for c in content)
    assert att.answer_code is not None and "F_logical = sp.Integer(1)" in att.answer_code
    assert (tmp_path / "w" / "answer.py").read_text() == att.answer_code


async def test_unknown_parameter_is_a_user_error(tmp_path):
    prob = Problem(id="p", statement="s")
    with pytest.raises(UserError, match="strategy oneshot: unknown --param 'n'; expected one of: temperature"):
        await solve_async(prob, "oneshot", "scripted:echo", workspace=tmp_path / "w", params={"n": 3})
    for bad in ("hot", 5):  # not a number, out of [0, 2]: bad input, not an errored run graded invalid
        with pytest.raises(UserError, match="--param temperature"):
            await solve_async(prob, "oneshot", "scripted:echo", workspace=tmp_path / str(bad), params={"temperature": bad})
        assert not (tmp_path / str(bad)).exists()


async def test_budget_before_the_only_call(tmp_path):
    from physlab.llm.usage import Budget

    prob = Problem(id="p", statement="s")
    att = await solve_async(prob, "oneshot", "scripted:echo", workspace=tmp_path / "w",
                           budget=Budget(max_wall_s=1e-9))
    assert att.status == "no_answer" and att.stop_reason == "budget:max_wall"
    assert not (tmp_path / "w" / "calls.jsonl").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("scenario,expected,code", [("oneshot-qec-correct", "correct", 0),
                                                    ("oneshot-wrong", "incorrect", 0)])
def test_qec_example_end_to_end_graded(tmp_path, capsys, scenario, expected, code):
    """`physlab solve examples/quantum_error_correction_main --strategy oneshot --model scripted:...`,
    then the same run replayed from its calls.jsonl: both graded by the real grader."""
    ws = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["solve", QEC, "--strategy", "oneshot", "--model", f"scripted:{scenario}", "--workspace", str(ws),
              "--json"])
    assert exc.value.code == code
    m = json.loads(capsys.readouterr().out)
    assert m["verdict"]["verdict"] == expected, m["verdict"]
    with pytest.raises(SystemExit) as exc:
        main(["solve", QEC, "--strategy", "oneshot", "--model", f"replay:{ws}", "--workspace",
              str(tmp_path / "replayed"), "--json"])
    m2 = json.loads(capsys.readouterr().out)
    assert m2["verdict"]["verdict"] == expected
    assert (ws / "answer.py").read_text() == (tmp_path / "replayed" / "answer.py").read_text()
    reference_bits = "253952"  # a coefficient of the reference answer
    assert reference_bits not in (ws / "PROBLEM.md").read_text()


async def test_the_lab_scenario_under_another_strategy_says_so(tmp_path):
    from physlab.problems import resolve_problem

    att = await solve_async(resolve_problem(QEC), "oneshot", "scripted:lab-qec", workspace=tmp_path / "w")
    assert att.status == "error" and not att.has_answer
    assert "plays the lab's roles, not 'solver'" in att.details["error"]  # not an AttributeError
