"""Scripted students of the built-in examples (``scripted:examples-strong``, ``scripted:examples-weak``):
offline models whose answers are right on some problems and samples and wrong on others, so a
sweep of the sampling scaffolds over ``examples`` gives a report worth reading without a network.

    physlab bench run examples --strategies oneshot,rsa,multi-round,tpbench-vote \\
        --models scripted:examples-strong,scripted:examples-weak --repeats 3

A student knows each example's answer as a SymPy expression (below) and writes it, or the same
expression off by a factor of 2, into the template the prompt shows. Whether a sample is right is
a fixed function of the student's skill, the problem and the sample's number, so every run plays
the same and no answer key is read: the grader still grades what was written. Aggregators (RSA)
keep the majority of the candidates they are shown (a tie goes the strong student's way);
multi-round's conclusions get better round by round. It plays the roles of oneshot, two-step, RSA,
multi-round and the TPBench generators; verifiers say yes.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from physlab.llm.scripted import Reply, first_user_text, last_user_text, register_scenario

# What the student writes for each placeholder, by (template parameters, placeholder names).
ANSWERS: dict[tuple[str, str], dict[str, str]] = {
    ("M, r", "ratio"): {"ratio": "sp.sqrt(1 - 3*M/r)"},
    ("G, M, c, a, e", "delta_phi"): {"delta_phi": "6*sp.pi*G*M/(c**2*a*(1 - e**2))"},
    ("M", "r_ph,b_c"): {"r_ph": "3*M", "b_c": "3*sp.sqrt(3)*M"},
    ("", "r_isco,eta"): {"r_isco": "6", "eta": "1 - sp.sqrt(sp.Rational(8, 9))"},
    ("E, m, c, theta", "E_prime"): {"E_prime": "E/(1 + E*(1 - sp.cos(theta))/(m*c**2))"},
    ("alpha, s", "sigma"): {"sigma": "4*sp.pi*alpha**2/(3*s)"},
    ("lam", "beta"): {"beta": "3*lam**2/(16*sp.pi**2)"},
    ("e, alpha", "beta_e,beta_alpha"): {"beta_e": "e**3/(12*sp.pi**2)", "beta_alpha": "2*alpha**2/(3*sp.pi)"},
    ("", "S_classical,S_quantum"): {"S_classical": "2", "S_quantum": "2*sp.sqrt(2)"},
    ("q", "F"): {"F": "1 - q/2"},
    ("p", "S"): {"S": "-(1 + 3*p)/4*sp.log((1 + 3*p)/4, 2) - 3*(1 - p)/4*sp.log((1 - p)/4, 2)"},
    ("", "C"): {"C": "3.3125020094"},
    ("N, k_B, T, Theta_D", "C_V"): {"C_V": "sp.Rational(12, 5)*sp.pi**4*N*k_B*(T/Theta_D)**3"},
    ("E_F, k_B, T", "mu"): {"mu": "k_B*T*sp.log(sp.exp(E_F/(k_B*T)) - 1)"},
    ("N, J, beta", "Z,f"): {"Z": "(2*sp.cosh(beta*J))**N + (2*sp.sinh(beta*J))**N",
                            "f": "-sp.log(2*sp.cosh(beta*J))/beta"},
    ("n", "g"): {"g": "(n + 1)*(n + 2)/2"},
}

_FENCE = re.compile(r"```python[ \t]*\n(.*?)```", re.DOTALL)
_PLACEHOLDER = re.compile(r"^(\s*)(\w+)\s*=\s*\.\.\.\s*$", re.MULTILINE)


def template_in(text: str) -> str | None:
    """The answer template a prompt shows: its python block with ``name = ...`` placeholders."""
    return next((b for b in _FENCE.findall(text) if _PLACEHOLDER.search(b)), None)


def _key(template: str) -> tuple[str, str]:
    m = re.search(r"def \w+\(([^)]*)\)", template)
    params = ", ".join(p.strip() for p in (m.group(1) if m else "").split(",") if p.strip())
    return params, ",".join(name for _, name in _PLACEHOLDER.findall(template))


def fill(template: str, right: bool) -> str | None:
    """The template with every placeholder filled, right or off by a factor of 2; None for a
    template the student does not know."""
    answers = ANSWERS.get(_key(template))
    if answers is None:
        return None
    return _PLACEHOLDER.sub(lambda m: f"{m.group(1)}{m.group(2)} = "
                            + (answers[m.group(2)] if right else f"2*({answers[m.group(2)]})"), template)


def _chance(*parts: Any) -> float:
    """A fixed number in [0, 1) for these parts (the same in every run)."""
    return zlib.crc32("|".join(map(str, parts)).encode()) / 2**32


def student(skill: float, name: str):
    """A scenario factory: a student that gets a sample right with probability about ``skill``,
    more on easy problems and less on hard ones."""

    def factory():
        samples: dict[str, int] = {}  # per role: how many replies so far

        def right(template: str, n: int) -> bool:
            key = _key(template)
            ease = _chance("ease", key) - 0.5  # some problems are easier for everyone
            return _chance(name, key, n) < skill + 0.6 * ease

        def answer(template: str, ok: bool, prose: str) -> str:
            code = fill(template, ok)
            if code is None:
                return prose + "\nI cannot solve this one.\nFinal Answer: unknown"
            return f"{prose}\nFinal Answer: see the code.\n\n```python\n{code}```\n"

        def respond(role: str, messages: list[ModelMessage], info: AgentInfo) -> Reply:
            prompt = last_user_text(messages)
            template = template_in(prompt) or template_in(first_user_text(messages))
            n = samples.get(role, 0)
            samples[role] = n + 1
            if role == "verifier":
                return '{"is_solution_correct": "yes"}'
            if template is None:
                return f"[{role}] Step-by-step reasoning about the problem (no template shown)."
            if role == "reasoner":
                return "Step-by-step reasoning: set up the model, solve it, check the limits."
            if role == "summarizer":  # right from round 0, or from a later round on, never wrong again
                ok = right(template, 100) or _chance(name, _key(template), "rounds") < 0.12 * n
                return answer(template, ok, "Concluding the reasoning so far.")
            if role == "aggregator":
                shown = [c for c in _FENCE.findall(prompt) if not _PLACEHOLDER.search(c)]
                good = sum(c == fill(template, True) for c in shown)
                ok = good * 2 > len(shown) or (good * 2 == len(shown) and skill >= 0.5)
                return answer(template, ok, "Comparing the candidates and keeping what holds.")
            return answer(template, right(template, n), "Working through the problem step by step.")

        return respond

    return factory


register_scenario("examples-strong", student(0.7, "strong"),
                  description="a strong student of the built-in examples (right on most samples)")
register_scenario("examples-weak", student(0.35, "weak"),
                  description="a weak student of the built-in examples (right on some samples)")
