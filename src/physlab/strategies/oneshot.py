"""`oneshot`: one request (role ``solver``) under CritPt's one-step protocol
(:mod:`physlab.strategies.critpt_protocol`): the system prompt's five rules, the problem followed by
its template; the reply derives, ends with "Final Answer:" and fills the template. The filled
template (last fenced Python block defining the template's function) goes to answer.py, the whole
reply to ANSWER.md. An open question (no template) gets the two-step system prompt and the problem.

Also registers the built-in scripted scenarios used by tests and demos:
``scripted:oneshot-qec-correct``, ``scripted:oneshot-wrong``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from physlab.grading.extract import extract_code
from physlab.llm.errors import BudgetExceeded, ModelFailure
from physlab.llm.prompt import image_parts
from physlab.llm.scripted import register_scenario
from physlab.llm.text import ask_text
from physlab.run.environment import RunEnvironment
from physlab.run.events import Step
from physlab.strategies.base import Attempt, AttemptStatus, Strategy
from physlab.strategies.critpt_protocol import CritptParams, Style, user_message
from physlab.strategies.sampling import model_settings


class OneShot(Strategy[CritptParams]):
    """One request: the problem and its template in, the derivation and the filled template out."""

    name = "oneshot"
    Params = CritptParams

    async def run(self, ctx: RunEnvironment) -> Attempt:
        started = time.monotonic()
        problem = ctx.problem
        # a prompt file is read now, when the run starts, and rendered in a child process (off the loop)
        protocol = await asyncio.to_thread(self.params.protocol)
        style: Style = "one-step" if problem.has_template else "two-step"
        system = await asyncio.to_thread(protocol.system, style, problem.answer_template or "")
        prompt: list[Any] = [user_message(problem, with_template=problem.has_template),
                             *image_parts(problem.images)]
        ctx.events(Step(strategy=self.name, step="solve"))
        status: AttemptStatus
        status, reason, reply, details = "complete", "answered", None, {}
        try:
            reply, _ = await ask_text(ctx.models.for_role("solver"), prompt, system=system,
                                      settings=model_settings(self.params))
        except BudgetExceeded as exc:
            status, reason = "no_answer", f"budget:{exc.limit}"
            details["error"] = str(exc)
        except ModelFailure as exc:
            status, reason = "error", "model_failure"
            details["error"] = str(exc)
        code = extract_code(reply) if problem.has_template else None
        if reply is not None and problem.has_template and code is None:
            status, reason = "no_answer", "no_code_in_reply"
        return Attempt(strategy=self.name, model=ctx.models.name, problem_id=problem.id, status=status,
                       stop_reason=reason, answer_text=reply, answer_code=code,
                       usage_by_role=ctx.usage.by_role(), wall_s=time.monotonic() - started,
                       details=details)


# ---- scripted scenarios (tests and demos) -------------------------------------------------

_QEC_CORRECT = '''I enumerate every Pauli fault after each CNOT (15 two-qubit Paulis per gate), propagate it
through the rest of the circuit, and sort the configurations into: flagged by the ancilla, detected
by the XXXX/ZZZZ stabilizers, harmless (a stabilizer), or an undetected logical error. Summing the
probabilities of the accepted configurations and normalising gives the post-selected fidelity.

```python
import sympy as sp

p = sp.symbols('p')

def answer(p):
    F_logical = 1 - (sp.Rational(16, 25)*p**2 - sp.Rational(128, 125)*p**3 + sp.Rational(2048, 3375)*p**4
                     - sp.Rational(32768, 253125)*p**5) / (1 - sp.Rational(68, 15)*p + sp.Rational(704, 75)*p**2
                     - sp.Rational(32768, 3375)*p**3 + sp.Rational(253952, 50625)*p**4
                     - sp.Rational(262144, 253125)*p**5)
    return F_logical
```
'''

_QEC_WRONG = '''Every single CNOT fault either trips the ancilla or anticommutes with a stabilizer, so
every error is detected and the post-selected state is perfect.

```python
import sympy as sp

p = sp.symbols('p')

def answer(p):
    F_logical = sp.Integer(1)
    return F_logical
```
'''


# The correct answer, reached the way the QEC example's solution is checked by brute force: the
# code enumerates every fault configuration of the five CNOT locations (16 two-qubit Paulis each,
# 16^5 in all) when it is loaded, about a CPU-second in the sandbox; a CPU-heavy cell for sweeps
# and their benchmarks (benchmarks/sweep_ray.py).
_QEC_ENUMERATE = _QEC_CORRECT.replace("""import sympy as sp
""", """import itertools

import sympy as sp

weights = [0] * 6  # fault configurations by the number of faulty CNOTs
for pattern in itertools.product(range(16), repeat=5):
    weights[sum(1 for f in pattern if f)] += 1
assert weights == [1, 75, 2250, 33750, 253125, 759375]
""")


def _fixed(reply: str):
    def factory():
        def respond(role, messages, info):
            return reply

        return respond

    return factory


register_scenario("oneshot-qec-correct", _fixed(_QEC_CORRECT),
                  description="replies to any role with the correct [[4,2,2]] QEC fidelity code")
register_scenario("oneshot-qec-enumerate", _fixed(_QEC_ENUMERATE),
                  description="the correct [[4,2,2]] QEC fidelity code, which enumerates the 16^5 fault patterns when "
                              "loaded (CPU-heavy in the sandbox)")
register_scenario("oneshot-wrong", _fixed(_QEC_WRONG),
                  description="replies with the classic wrong QEC answer F = 1")
