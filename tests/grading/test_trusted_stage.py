"""Issue #32, the trusted stage: a candidate that knows nothing is never graded correct, cannot
read the answer key, and what a strategy is shown never carries the reference.

The attack (``attacks.zero_knowledge``): fill the template with zeros, call it for the shape,
replace each leaf with a whitelisted function of a string, write the stage-1 result file itself.
Before the fix the trusted stage rebuilt such a leaf with SymPy, whose non-strict ``sympify`` of
the string is ``eval`` in the process that holds the reference: ``correct`` on every problem below.
"""

from __future__ import annotations

import json

import pytest

from physlab.errors import ProblemFileError
from physlab.grading import Grader, bind
from physlab.grading.rt.stages import REFERENCE_MARK, RESULT_MARK
from physlab.llm.scripted import register_scenario
from physlab.problems.model import Problem
from physlab.problems.suites import resolve_problem
from physlab.sandbox import SandboxResult

from .attacks import LEAK, REFERENCE, zero_knowledge
from .helpers import fill

DICT_TEMPLATE = '''import sympy as sp

N = sp.symbols("N", integer=True, positive=True)
J = sp.symbols("J", real=True)
beta = sp.symbols("beta", positive=True)

def answer(N, J, beta):
    Z = ...
    f = ...
    return {"Z": Z, "f": f}
'''
DICT = Problem(id="ising_dict", statement="Ising chain", answer_template=DICT_TEMPLATE,
               reference="Z = (2*sp.cosh(beta*J))**N + (2*sp.sinh(beta*J))**N\nf = -sp.log(2*sp.cosh(beta*J))/beta",
               reference_format="python")
LATEX_TEMPLATE = '''import sympy as sp

G, M, c = sp.symbols("G M c", positive=True)

def answer(G, M, c):
    r_ph = ...
    return r_ph
'''
LATEX = Problem(id="photon_sphere_latex", statement="Photon sphere radius", answer_template=LATEX_TEMPLATE,
                reference=r"\boxed{r_{ph} = \frac{3 G M}{c^2}}", reference_format="latex")


def _problems() -> dict[str, Problem]:
    return {"dict": DICT, "tuple": resolve_problem("examples/gr_photon_sphere"),
            "critpt qec": resolve_problem("examples/quantum_error_correction_main"), "latex reference": LATEX}


PROBLEMS = _problems()


@pytest.mark.parametrize("name", list(PROBLEMS))
async def test_a_candidate_that_knows_nothing_is_not_graded_correct(grader, name):
    problem = PROBLEMS[name]
    v = await grader.grade(problem, zero_knowledge(problem.answer_template))
    assert v.verdict == "invalid", (name, v.verdict, v.reason)
    assert "string" in v.reason, v.reason
    assert v.details["stage"] == "candidate"  # refused on the host, before the trusted stage


@pytest.mark.parametrize("wrapper", ["sin", "Tuple", "FiniteSet", "conjugate"])
async def test_every_non_strict_constructor_is_closed(grader, wrapper):
    problem = PROBLEMS["critpt qec"]
    v = await grader.grade(problem, zero_knowledge(problem.answer_template, wrapper=wrapper))
    assert v.verdict == "invalid", (wrapper, v.reason)


@pytest.mark.parametrize("name", ["critpt qec", "latex reference"])
async def test_what_a_strategy_is_shown_never_carries_the_reference(grader, name):
    problem = PROBLEMS[name]
    shown = await bind(problem, grader).grade(zero_knowledge(problem.answer_template, LEAK))
    blob = shown.model_dump_json()
    assert shown.verdict != "correct"
    assert "REF<" not in blob and '"t": "fn"' not in blob


async def test_a_forged_written_answer_on_the_code_path_is_refused(grader):
    """Code answers have no written part; one in the result file is forged, and refused."""
    problem = PROBLEMS["critpt qec"]
    written = json.dumps({"boxes": [{"ok": True, "parts": [{"value": {"t": "bogus"}}]}], "final": [0]})
    cand = zero_knowledge(problem.answer_template, leaf={"t": "int", "v": "1"}, extra=f'"written": {written}')
    v = await grader.grade(problem, cand)
    assert v.verdict == "invalid", v.reason


async def test_a_well_formed_forged_result_is_no_stronger_than_a_returned_value(grader):
    """Writing result.json by hand gives what returning the value gives: here, a wrong answer."""
    problem = PROBLEMS["critpt qec"]
    v = await grader.grade(problem, zero_knowledge(problem.answer_template, leaf={"t": "int", "v": "0"}))
    assert v.verdict == "incorrect", v.reason


class _Scripted:
    """A trusted sandbox that answers stage 2 with fixed output (the grader's host logic alone)."""

    def __init__(self, real, stdout: str):
        self.real, self.stdout = real, stdout
        self.trusted = self

    async def run(self, code, **kw):
        if b'"mode": "candidate"' in kw["files"]["job.json"]:
            return await self.real.run(code, **kw)
        return SandboxResult(exit_code=1, stdout=self.stdout, stderr="Traceback ...\nIndexError: boom",
                             timed_out=False, duration_s=0.1, truncated=False)


async def test_a_trusted_stage_that_dies_after_the_reference_blames_the_answer(grading_sandbox):
    """The reference had been evaluated when stage 2 died: the candidate's data did it -> invalid,
    never "the problem file is broken"."""
    problem = PROBLEMS["critpt qec"]
    good = fill(problem.answer_template, "return 1 - p")
    g = Grader(_Scripted(grading_sandbox, REFERENCE_MARK + "\n"), timeout_s=4.0)
    v = await g.grade(problem, good)
    assert v.verdict == "invalid" and "could not be compared" in v.reason, v.reason
    # before the reference was evaluated, the problem file is to blame (exit 2 in the CLI)
    g = Grader(_Scripted(grading_sandbox, ""), timeout_s=4.0)
    with pytest.raises(ProblemFileError):
        await g.grade(problem, good)
    assert RESULT_MARK not in REFERENCE_MARK


# ------------------------------------------------------------------ what strategies are shown

WRONG = {
    # reference 0.785 against 1: "relative difference 0.215" gives the reference back
    "number": (Problem(id="n", statement="s", answer_template="def answer():\n    x = ...\n    return x\n",
                       reference="0.785", reference_format="number"), "return 1", ["0.215", "785", "relative"]),
    # a dict missing a key names the reference's keys
    "dict keys": (DICT, "return {'Z': 1}", ["'f'", "missing"]),
    # a wrong unit names the reference's
    "unit": (Problem(id="u", statement="s", reference=r"\boxed{3.0\,\mathrm{m}}", reference_format="latex"),
             None, ["length", "m)"]),
}


@pytest.mark.parametrize("name", list(WRONG))
async def test_a_strategy_sees_the_verdict_not_what_it_was_compared_with(grader, name):
    problem, body, derived = WRONG[name]
    cand = fill(problem.answer_template, body) if body else r"Final answer: \boxed{3.0\,\mathrm{s}}"
    full = await grader.grade(problem, cand)
    assert full.verdict == "incorrect", full.reason
    assert any(d in json.dumps(full.contract_json()) for d in derived)  # the run's record keeps it
    shown = await bind(problem, grader).grade(cand)
    assert shown.verdict == "incorrect"
    blob = json.dumps(shown.contract_json())
    assert not any(d in blob for d in derived), blob
    assert set(shown.details) <= {"stage", "path", "duration_s", "candidate_s", "points", "points_total"}


# ---------------------------------------------------------------- through `physlab solve`


def _replying(text: str):
    def factory():
        def respond(role, messages, info):
            return text
        return respond
    return factory


@pytest.mark.slow
async def test_solve_with_a_model_whose_python_block_is_the_attack(tmp_path):
    """`physlab solve examples/quantum_error_correction_main --strategy oneshot` with a scripted model
    whose ordinary python block is the attack: the run's verdict, in metrics.json, is not correct."""
    from physlab.api import solve_async

    problem = PROBLEMS["critpt qec"]
    register_scenario("test-attack-zero-knowledge",
                      _replying("```python\n" + zero_knowledge(problem.answer_template, REFERENCE) + "```\n"))
    attempt = await solve_async(problem, "oneshot", "scripted:test-attack-zero-knowledge", workspace=tmp_path / "w")
    metrics = json.loads((tmp_path / "w" / "metrics.json").read_text())
    assert attempt.verdict is not None and attempt.verdict.verdict == "invalid", attempt.verdict
    assert metrics["verdict"]["verdict"] == "invalid"


@pytest.mark.slow
async def test_best_of_n_oracle_verdicts_carry_no_reference(tmp_path):
    """TPBench best-of-N holds the reference-bound grader as its oracle: the verdicts it keeps (and
    writes into the run's details) say correct/incorrect, nothing the reference could be read from."""
    from physlab.api import solve_async

    problem = PROBLEMS["critpt qec"]
    wrong = fill(problem.answer_template, "return 1 - p")
    register_scenario("test-bon-leak", _replying(
        "Final Answer: see code\n\n```python\n" + zero_knowledge(problem.answer_template, LEAK) + "```\n"))
    register_scenario("test-bon-wrong", _replying("Final Answer: F = 1 - p\n\n```python\n" + wrong + "```\n"))
    leak = await solve_async(problem, "tpbench-bon", "scripted:test-bon-leak", workspace=tmp_path / "leak",
                           params={"n_samples": 2})
    assert "253125" not in json.dumps(leak.details) and leak.verdict is not None and not leak.verdict.correct
    wrong = await solve_async(problem, "tpbench-bon", "scripted:test-bon-wrong", workspace=tmp_path / "wrong",
                            params={"n_samples": 2})
    verdicts = wrong.details["oracle_verdicts"]
    assert verdicts and all(v["verdict"] == "incorrect" for v in verdicts)
    blob = json.dumps(verdicts)
    assert "relative difference" not in blob and "differs at" not in blob, blob
    # the run's own record keeps what was compared
    assert "differs at" in wrong.verdict.reason


async def test_scalar_keeps_the_verdict_a_strategy_may_see(grader):
    """SCALAR stores the grader's verdict beside its Judge's, turn by turn: the public one."""
    from types import SimpleNamespace

    from physlab.strategies.scalar.strategy import grade_turn

    problem = PROBLEMS["critpt qec"]
    stored = await grade_turn(SimpleNamespace(grader=bind(problem, grader)), "",
                              fill(problem.answer_template, "return 1 - p"))
    assert stored is not None and stored["verdict"] == "incorrect"
    assert "differs" not in json.dumps(stored) and "relative" not in json.dumps(stored)
