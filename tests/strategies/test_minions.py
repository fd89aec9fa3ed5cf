"""PhysicsMinions with scripted models: CV counting and reset, verifier order, the visual loop
(descriptions and reviews through output tools, malformed ones retried), iteration cap, budget end,
answer extraction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stub_ctx import NoUsage, Script, ScriptModels

from physlab.llm.usage import Budget
from physlab.problems.model import Problem
from physlab.run.environment import RunEnvironment
from physlab.sandbox.core import Sandbox
from physlab.strategies.base import Strategy
from physlab.strategies.minions import Minions
from physlab.strategies.minions.visual import FigureDescription
from physlab.strategies.sampling import OUTPUT_RETRIES

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")


def make_ctx(tmp_path: Path, script: Script, problem: Problem) -> RunEnvironment:
    tmp_path.mkdir(parents=True, exist_ok=True)  # the runner makes the workspace
    return RunEnvironment(problem=problem.public(), workspace=tmp_path, models=ScriptModels(script), usage=NoUsage(),
                      budget=Budget(), sandbox=Sandbox(), grader=None, equivalence=None)


PASS = '{"verdict": "pass", "issues": []}'
FAIL_PHYS = '{"verdict": "fail", "issues": ["eq. 3 is dimensionally inconsistent"]}'
FAIL_GEN = '{"verdict": "fail", "issues": ["arithmetic slip in step 4"]}'
SOL = "## Summary\nv = sqrt(2gh)\n\n## Detailed Solution\n...\n\\boxed{v=\\sqrt{2gh}}"
FIG = json.dumps({"figure_type": "plot", "summary": "a line", "axes": [{"name": "x"}],
                  "curves": [{"label": "c1", "points": [[0, 1]]}], "labelled_quantities": [],
                  "geometry": [], "notes": ""})

OPEN = Problem(id="p1", statement="A ball falls from height h. Find its speed at the ground.",
               reference=r"\boxed{\sqrt{2gh}}", reference_format="latex")


async def test_accepts_after_two_consecutive_passes_and_runs_general_only_after_physics(tmp_path):
    script = Script({"solver": [SOL], "introspector": [SOL], "physics_verifier": [PASS],
                     "general_verifier": [PASS]})
    attempt = await Minions().run(make_ctx(tmp_path, script, OPEN))
    assert isinstance(Minions(), Strategy)
    assert attempt.status == "complete" and attempt.stop_reason == "accepted"
    assert attempt.details["accepted"] is True
    assert script.roles() == ["solver", "introspector", "physics_verifier", "general_verifier",
                              "physics_verifier", "general_verifier"]
    assert "\\boxed{v=\\sqrt{2gh}}" in attempt.answer_text
    trace = json.loads((tmp_path / "minions_trace.json").read_text())
    assert [i["consecutive_passes"] for i in trace["iterations"]] == [1, 2]


async def test_general_verifier_never_called_when_physics_fails_and_bug_report_reaches_introspector(tmp_path):
    script = Script({"solver": [SOL], "introspector": [SOL, "fixed solution \\boxed{1}", SOL, SOL, SOL],
                     "physics_verifier": [FAIL_PHYS], "general_verifier": [PASS]})
    attempt = await Minions.configured({"max_iterations": 3}).run(make_ctx(tmp_path, script, OPEN))
    assert "general_verifier" not in script.roles()
    assert attempt.stop_reason == "iteration_cap" and attempt.details["accepted"] is False
    assert attempt.status == "complete" and attempt.answer_text  # last solution returned, said so
    fix_prompts = [c.prompt for c in script.calls if c.role == "introspector" and "Bug report" in c.prompt]
    assert len(fix_prompts) == 2  # refinements after failures 1 and 2; none after the last round
    assert "dimensionally inconsistent" in fix_prompts[0]
    assert "Physics check" in fix_prompts[0]


async def test_failure_resets_consecutive_count(tmp_path):
    # physics always passes; general: pass, fail, pass, pass -> accepted at iteration 4
    script = Script({"solver": [SOL], "introspector": [SOL],
                     "physics_verifier": [PASS], "general_verifier": [PASS, FAIL_GEN, PASS, PASS]})
    attempt = await Minions().run(make_ctx(tmp_path, script, OPEN))
    review = attempt.details["review"]
    assert [r["consecutive_passes"] for r in review] == [1, 0, 1, 2]
    assert [r["stage"] for r in review] == ["general"] * 4
    assert attempt.details["accepted"] and attempt.details["iterations"] == 4
    fixes = [c.prompt for c in script.calls if c.role == "introspector" and "Bug report" in c.prompt]
    assert len(fixes) == 1 and "arithmetic slip" in fixes[0] and "General check" in fixes[0]


async def test_iteration_cap_with_alternating_verdicts(tmp_path):
    script = Script({"solver": [SOL], "introspector": [SOL],
                     "physics_verifier": [PASS], "general_verifier": [PASS, FAIL_GEN] * 3})
    attempt = await Minions().run(make_ctx(tmp_path, script, OPEN))
    assert attempt.details["iterations"] == 5 and not attempt.details["accepted"]
    assert attempt.stop_reason == "iteration_cap"


async def test_cv_param_and_a_verifier_without_a_valid_review_is_a_failure(tmp_path):
    # prose, then a verdict outside the schema, then prose again: after its retries the check fails
    unreadable = ["looks fine I guess", '{"verdict": "fine", "issues": []}', "really fine"]
    assert len(unreadable) == 1 + OUTPUT_RETRIES
    script = Script({"solver": [SOL], "introspector": [SOL],
                     "physics_verifier": [*unreadable, PASS], "general_verifier": [PASS]})
    attempt = await Minions.configured({"cv": 3, "self_improve": False}).run(make_ctx(tmp_path, script, OPEN))
    review = attempt.details["review"]
    assert review[0]["passed"] is False and review[0]["parsed"] is False
    assert [r["consecutive_passes"] for r in review] == [0, 1, 2, 3]
    assert script.roles()[:2] == ["solver", "physics_verifier"]  # no self-improvement call
    assert script.roles().count("physics_verifier") == len(unreadable) + 3


async def test_a_malformed_review_is_retried_with_its_validation_error(tmp_path):
    script = Script({"solver": [SOL], "introspector": [SOL],
                     "physics_verifier": ['{"verdict": "PASS"}', PASS], "general_verifier": [PASS]})
    attempt = await Minions.configured({"cv": 1, "self_improve": False}).run(make_ctx(tmp_path, script, OPEN))
    assert attempt.details["accepted"] is True and attempt.details["review"][0]["parsed"] is True
    assert script.roles() == ["solver", "physics_verifier", "physics_verifier", "general_verifier"]


async def test_visual_studio_validates_json_and_loops_until_cv_passes(tmp_path):
    img = tmp_path / "fig.png"
    img.write_bytes(PNG)
    problem = Problem(id="p2", statement="Read the plot.", images=[img], reference="1",
                      reference_format="latex")
    bad = "here is the figure: axes x and y"  # prose, not the output tool: retried, then a schema failure
    wrong_shape = json.dumps({"summary": "missing figure_type"})  # retried with the error, then a failure
    script = Script({
        "visual_inspector": [bad],
        "visual_introspector": [wrong_shape] * (1 + OUTPUT_RETRIES) + [FIG, FIG, FIG],
        "visual_verifier": ['{"verdict": "fail", "issues": ["y axis is logarithmic"]}', PASS, PASS],
        "solver": [SOL], "introspector": [SOL], "physics_verifier": [PASS], "general_verifier": [PASS],
    })
    ws = tmp_path / "ws"
    attempt = await Minions().run(make_ctx(ws, script, problem))
    trace = json.loads((ws / "minions_trace.json").read_text())
    fig = trace["figures"][0]
    assert fig["verified"] is True
    # prose -> schema failure; wrong shape -> schema failure; then the Verifier: fail, pass, pass
    assert [r["stage"] for r in fig["rounds"]] == ["schema", "schema", "verifier", "verifier", "verifier"]
    assert [r["consecutive_passes"] for r in fig["rounds"]] == [0, 0, 0, 1, 2]
    assert "tool call" in fig["rounds"][0]["issues"][0]
    assert "figure_type: Field required" in fig["rounds"][1]["issues"][0]
    assert script.roles().count("visual_verifier") == 3  # schema failures cost no Verifier call
    # the refinement after the verifier failure carries its issue
    intro = [c.prompt for c in script.calls if c.role == "visual_introspector"]
    assert any("logarithmic" in t for t in intro)
    # the paper's main configuration: the Logic and Review studios read the JSON, not the pixels
    studios = [c for c in script.calls if c.role in ("solver", "introspector", "physics_verifier",
                                                     "general_verifier")]
    assert all('"figure_type": "plot"' in c.prompt and c.images == 0 for c in studios)
    assert attempt.details["figures_verified"] == [True]


async def test_the_raw_figure_goes_to_the_studios_only_in_the_ablations(tmp_path):
    img = tmp_path / "fig.png"
    img.write_bytes(PNG)
    problem = Problem(id="p3", statement="Read the plot.", images=[img])

    def studio_images(params):
        script = Script({"visual_inspector": [FIG], "visual_introspector": [FIG], "visual_verifier": [PASS],
                         "solver": [SOL], "introspector": [SOL], "physics_verifier": [PASS],
                         "general_verifier": [PASS]})
        return script, Minions.configured(params).run(make_ctx(tmp_path / str(len(params)), script, problem))

    script, run = studio_images({"send_images": True})  # JSON and pixels
    await run
    solver = next(c for c in script.calls if c.role == "solver")
    assert '"figure_type": "plot"' in solver.prompt and solver.images == 1
    script, run = studio_images({"visual": False, "send_images": False, "cv": 1})  # pixels, no JSON
    await run
    assert not any(r.startswith("visual") for r in script.roles())
    assert all(c.images == 1 for c in script.calls)  # without a description the figure itself goes


def test_figure_description_schema_is_what_the_inspector_is_asked_for():
    assert FigureDescription.model_validate_json(FIG).figure_type == "plot"
    schema = FigureDescription.model_json_schema()
    assert {"figure_type", "summary"} <= set(schema["required"])
    assert "plot | diagram" in schema["properties"]["figure_type"]["description"]


async def test_budget_end_keeps_best_solution(tmp_path):
    script = Script({"solver": [SOL], "introspector": [SOL + " (improved)"], "physics_verifier": [FAIL_PHYS]},
                    max_calls=3)
    ctx = make_ctx(tmp_path, script, OPEN)
    attempt = await Minions().run(ctx)
    assert attempt.status == "partially_complete" and attempt.stop_reason == "budget:max_calls"
    assert attempt.answer_text == SOL + " (improved)"
    # checkpoints: the Solver's solution, then the Introspector's
    assert [c.step for c in ctx.checkpoints] == ["solver", "self_improve"]


async def test_budget_before_any_solution_is_no_answer(tmp_path):
    script = Script({"solver": [SOL]}, max_calls=0)
    attempt = await Minions().run(make_ctx(tmp_path, script, OPEN))
    assert attempt.status == "no_answer"


async def test_template_problem_fills_template_and_formatter_when_missing(tmp_path):
    problem = Problem(id="p4", statement="Find x.", answer_template="def answer():\n    return ...\n",
                      reference="1", reference_format="python")
    script = Script({"solver": ["## Summary\nx=1\n## Detailed Solution\nno code here"],
                     "introspector": ["## Summary\nx=1\n## Detailed Solution\nstill no code"],
                     "physics_verifier": [PASS], "general_verifier": [PASS],
                     "formatter": ["```python\ndef answer():\n    return 1\n```"]})
    attempt = await Minions().run(make_ctx(tmp_path, script, problem))
    assert "return ..." in script.calls[0].prompt  # the template is in the solver's prompt
    assert attempt.answer_code is not None and "return 1" in attempt.answer_code
    assert script.roles()[-1] == "formatter"


async def test_reference_never_in_prompts(tmp_path):
    secret = Problem(id="p5", statement="Compute the thing.", reference=r"\boxed{SECRET_42}",
                     reference_format="latex", solution="SECRET_SOLUTION",
                     extra={"answer_key_answers": ["SECRET_42"], "answer_types": ["Expression"]})
    script = Script({"solver": [SOL], "introspector": [SOL], "physics_verifier": [PASS],
                     "general_verifier": [PASS]})
    await Minions().run(make_ctx(tmp_path, script, secret))
    assert all("SECRET" not in c.prompt for c in script.calls)
    assert "1. Expression" in script.calls[0].prompt  # public answer types still guide the format


def test_params_are_the_papers_and_bad_ones_are_one_line_errors():
    from physlab.errors import UserError

    p = Minions().params
    assert (p.cv, p.max_iterations, p.temperature, p.visual_cv, p.visual_max_iterations) == (2, 5, 0.6, 2, 5)
    assert Minions.configured({"cv": 3}).params.visual_cv == 3  # the visual loop follows cv unless set
    with pytest.raises(UserError, match="strategy minions: unknown --param 'cvv'; expected one of: "):
        Minions.configured({"cvv": 3})
    with pytest.raises(UserError, match=r"--param cv: input should be greater than or equal to 1 \(got 0\)"):
        Minions.configured({"cv": 0})
    with pytest.raises(UserError, match=r"--param cv: input should be a valid integer \(got True\)"):
        Minions.configured({"cv": True})


async def test_visual_failure_falls_back_to_text_only(tmp_path):
    img = tmp_path / "fig.png"
    img.write_bytes(PNG)
    problem = Problem(id="p6", statement="Read the plot.", images=[img])

    def refuse(_prompt: str) -> str:
        raise RuntimeError("this model does not accept images")

    script = Script({"visual_inspector": [refuse], "solver": [SOL], "introspector": [SOL],
                     "physics_verifier": [PASS], "general_verifier": [PASS]})
    attempt = await Minions().run(make_ctx(tmp_path, script, problem))
    assert attempt.status == "complete" and attempt.details["figures_verified"] == [False]
    assert all(c.images == 0 for c in script.calls if c.role != "visual_inspector")
