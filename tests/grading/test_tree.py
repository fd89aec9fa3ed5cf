"""The safe answer tree: whitelist, limits, round trip, and the per-step guard."""

from __future__ import annotations

import json
import time

import pytest
import sympy as sp

from physlab.grading.rt import tree as T
from physlab.grading.rt.guard import StepTimeout, run_guarded, run_steps


def roundtrip(value):
    return T.from_tree(json.loads(json.dumps(T.to_tree(value))))


def test_roundtrip_expressions_and_containers():
    x = sp.Symbol("x", positive=True)
    f = sp.Function("f")
    values = [
        sp.Rational(1, 3) * sp.exp(-x) * sp.cosh(x) + sp.pi * sp.I,
        (sp.Integer(2) ** 200, sp.Float("0.1234567890123456789", 30)),
        {"a": x, "b": [1, 2.5, True]},
        sp.Matrix([[x, 1], [0, sp.sqrt(2)]]),
        sp.Piecewise((x, x < 1), (x ** 2, True)),
        sp.Eq(x, 2),
        f(x) + sp.Derivative(f(x), x),
        sp.Integral(sp.exp(-x ** 2), (x, 0, sp.oo)),
    ]
    for v in values:
        back = roundtrip(v)
        if isinstance(v, sp.MatrixBase):
            assert sp.ImmutableMatrix(v) == back
        else:
            assert back == v or str(back) == str(v), (v, back)
    assert roundtrip(x).assumptions0.get("positive") is True


def test_refuses_non_whitelisted_and_subclasses():
    class Evil(sp.Symbol):
        pass

    with pytest.raises(T.TreeError):
        T.to_tree(object())
    with pytest.raises(T.TreeError):
        T.to_tree(Evil("x"))
    with pytest.raises(T.TreeError):
        T.to_tree(sp.Lambda(sp.Symbol("x"), 1))
    assert T.validate({"t": "fn", "f": "__import__", "a": []}) is not None
    with pytest.raises(T.TreeError):
        T.from_tree({"t": "fn", "f": "__import__", "a": []})
    assert T.validate({"t": "bogus"}) is not None


def test_limits():
    deep = []
    for _ in range(2000):
        deep = [deep]
    with pytest.raises(T.TreeError, match="deep"):
        T.to_tree(deep)
    with pytest.raises(T.TreeError, match="large"):
        T.to_tree(list(range(T.MAX_NODES + 10)))
    with pytest.raises((T.TreeError, ValueError)):
        T.to_tree(10 ** 5000)
    assert T.contains_ellipsis(T.to_tree((1, ...)))


def _forever(_):
    while True:
        pass


def _quick(_):
    return [True, "fine"]


def test_guard_kills_a_hanging_step():
    start = time.monotonic()
    with pytest.raises(StepTimeout):
        run_guarded(_forever, 0.5, None)
    assert time.monotonic() - start < 3


def _hang_step(_):
    while True:
        pass


def _undecided(_):
    return [None, ""]


def test_run_steps_resumes_after_a_timeout():
    start = time.monotonic()
    out = run_steps([_undecided, _hang_step, _quick], None, [1, 0.5, 1], fatal=())
    assert [name for name, _, _ in out] == ["_undecided", "_hang_step", "_quick"]
    assert out[-1][1] is True and "timed out" in out[1][2]
    assert time.monotonic() - start < 4


# ----------------------------------------------------------------- issue #32: typed, data only


def test_validate_checks_every_field_of_every_node():
    bad = [
        {"t": "int", "v": "1+1"}, {"t": "int", "v": 3}, {"t": "rat", "p": "1", "q": "0"},
        {"t": "float", "v": "__import__('os')"}, {"t": "float", "v": "1.5", "prec": "53"},
        {"t": "complex", "re": "1", "im": "x"}, {"t": "bool", "v": "True"}, {"t": "str", "v": 5},
        {"t": "const", "v": "os"}, {"t": "sym", "name": ["x"]}, {"t": "sym", "name": "x", "assumptions": {"real": "yes"}},
        {"t": "sym", "name": "x", "assumptions": {"evil": True}},
        {"t": "fn", "f": "Pow", "a": [{"t": "int", "v": "2"}]},  # Pow takes two
        {"t": "fn", "f": "Equality", "a": [{"t": "int", "v": "2"}]},
        {"t": "ufn", "name": 7, "a": []}, {"t": "matrix", "rows": 2, "cols": 2, "a": [{"t": "int", "v": "1"}]},
        {"t": "matrix", "rows": "1", "cols": 1, "a": [{"t": "int", "v": "1"}]},
        {"t": "dict", "items": [[{"t": "str", "v": "a"}]]}, {"t": "tuple", "a": {"t": "int", "v": "1"}},
    ]
    for node in bad:
        assert T.validate(node) is not None, node


@pytest.mark.parametrize("parent", [
    lambda leaf: {"t": "fn", "f": "Max", "a": [leaf]},
    lambda leaf: {"t": "fn", "f": "sin", "a": [leaf]},
    lambda leaf: {"t": "fn", "f": "Tuple", "a": [leaf]},
    lambda leaf: {"t": "ufn", "name": "f", "a": [leaf]},
    lambda leaf: {"t": "matrix", "rows": 1, "cols": 1, "a": [leaf]},
    lambda leaf: {"t": "fn", "f": "FiniteSet", "a": [{"t": "set", "a": [leaf]}]},
])
@pytest.mark.parametrize("leaf", [{"t": "str", "v": "1 + 1"}, {"t": "none"}, {"t": "ellipsis"},
                                  {"t": "tuple", "a": []}, {"t": "dict", "items": []}])
def test_no_string_or_container_inside_an_expression(parent, leaf):
    tree = parent(leaf)
    assert T.validate(tree) is not None
    with pytest.raises(T.TreeError):
        T.from_tree(tree)


def test_to_tree_refuses_what_validate_refuses():
    """A SymPy object made to hold a Python string (``Basic.__new__`` skips sympify) is refused at
    serialization too, so a returned value can never carry what a forged file cannot."""
    evil = sp.Basic.__new__(sp.Max, "__import__('os')")
    with pytest.raises(T.TreeError, match="string"):
        T.to_tree(evil)


def test_every_value_to_tree_makes_validates():
    x = sp.Symbol("x", positive=True)
    f = sp.Function("f")
    for v in [sp.Piecewise((x, x < 1), (x ** 2, True)), sp.Interval(0, 1, True, False),
              sp.Union(sp.FiniteSet(1), sp.Interval(2, 3)), sp.Integral(sp.exp(-x), (x, 0, sp.oo)),
              f(x).diff(x, 2), sp.Matrix([[x, 1], [2, sp.pi]]), {"a": (x, [1, 2.5, None])}, sp.Eq(x, 2),
              sp.Limit(sp.sin(x) / x, x, 0), sp.besselj(0, x), 1 + 2j, sp.Float("1e-300")]:
        tree = json.loads(json.dumps(T.to_tree(v)))
        assert T.validate(tree) is None, (v, T.validate(tree))
        T.from_tree(tree)


def test_rebuilt_values_are_never_sympified():
    """compare rebuilds both sides from validated trees and never sympifies what it rebuilt: a
    string that reaches the rebuild stays a string (not an expression), never text for SymPy's parser."""
    from physlab.grading.rt import compare as C

    job = {"c": {"t": "str", "v": "1"}, "r": {"t": "int", "v": "1"}, "symbols": {}}
    assert C.step_rebuild(job) == (False, "expected an expression, got a string")


# Hypothesis: random answer trees holding hostile strings, through the host's check of the stage-1
# result and the trusted stage, in this process. Never correct, never an exception escaping, never
# the reference in the reason, and the strings are never run.

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from physlab.grading.grader import Grader  # noqa: E402
from physlab.grading.jobs import grade_job, verdict_from  # noqa: E402
from physlab.grading.rt import stages  # noqa: E402
from physlab.grading.rt.stages import RESULT_FILE  # noqa: E402
from physlab.grading.template import template_spec  # noqa: E402
from physlab.problems.model import Problem  # noqa: E402

from .attacks import LEAK, REFERENCE, canary  # noqa: E402

PROP_TEMPLATE = "import sympy as sp\n\np = sp.Symbol('p')\n\ndef answer(p):\n    F = ...\n    return F\n"
PROP_PROBLEM = Problem(id="prop", statement="s", answer_template=PROP_TEMPLATE,
                       reference="F = 1 - sp.Rational(7919, 7) * p**3", reference_format="python")
REF_TEXTS = ("7919", "7/7919", "REF<")


def _hostile_strings(path):
    return st.sampled_from([REFERENCE, LEAK, canary(str(path)), "x" * 5000, "{0.__class__}", "%s%s%n",
                            "\\boxed{1}", "p", "1 - 7919*p**3/7", "__import__('os').system('true')", ""])


def _trees(strings):
    name = st.sampled_from(["p", "x", "F", "p_1", "\\omega"])
    leaves = st.one_of(
        st.builds(lambda v: {"t": "str", "v": v}, strings),
        st.builds(lambda v: {"t": "int", "v": v}, st.one_of(strings, st.integers(-10 ** 6, 10 ** 6).map(str))),
        st.builds(lambda v: {"t": "float", "v": v, "prec": 53}, st.one_of(strings, st.sampled_from(["0.5", "1e308", "nan"]))),
        st.builds(lambda n, a: {"t": "sym", "name": n, "assumptions": a}, st.one_of(name, strings),
                  st.one_of(st.just({}), st.dictionaries(st.sampled_from(["real", "positive", "x"]), st.one_of(st.booleans(), strings)))),
        st.builds(lambda v: {"t": "const", "v": v}, st.one_of(st.sampled_from(["pi", "E", "I"]), strings)),
        st.sampled_from([{"t": "none"}, {"t": "ellipsis"}, {"t": "bool", "v": True}, {"t": "rat", "p": "1", "q": "3"}]),
    )

    def inner(children):
        fn = st.sampled_from(["Max", "sin", "Add", "Mul", "Pow", "Abs", "Tuple", "FiniteSet", "Equality",
                              "Piecewise", "ExprCondPair", "Integral", "exp", "floor"])
        return st.one_of(
            st.builds(lambda f, a: {"t": "fn", "f": f, "a": a}, fn, st.lists(children, max_size=3)),
            st.builds(lambda n, a: {"t": "ufn", "name": n, "a": a}, st.one_of(name, strings), st.lists(children, max_size=2)),
            st.builds(lambda t, a: {"t": t, "a": a}, st.sampled_from(["tuple", "list", "set"]), st.lists(children, max_size=3)),
            st.builds(lambda a: {"t": "dict", "items": [[{"t": "str", "v": str(i)}, v] for i, v in enumerate(a)]},
                      st.lists(children, max_size=2)),
            st.builds(lambda a: {"t": "matrix", "rows": 1, "cols": len(a), "a": a}, st.lists(children, min_size=1, max_size=2)),
        )

    return st.recursive(leaves, inner, max_leaves=8)


class _Res:
    def __init__(self, data: bytes):
        self.files, self.timed_out, self.stderr, self.exit_code = {RESULT_FILE: data}, False, "", 0


def _grade_forged(tree) -> tuple[str, str]:
    """What the grader makes of a stage-1 result file holding ``tree``: the host's check, then
    (when it passes) the trusted stage and the verdict."""
    answer = Grader._read_result(None, _Res(json.dumps({"ok": True, "tree": tree}).encode()), 0.0)
    if not answer.ok:
        return "invalid", answer.reason
    spec = template_spec(PROP_TEMPLATE)
    job = json.loads(json.dumps(grade_job(PROP_PROBLEM, spec, answer.tree, None, step_timeout=2.0)))
    out = stages.run_trusted(job)
    assert "error" not in out, out
    v = verdict_from(out, job, {"stage": "compare"})
    return v.verdict, v.reason


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_answer_trees_are_never_correct_and_never_run(tmp_path, data):
    path = tmp_path / "canary"
    tree = data.draw(_trees(_hostile_strings(path)))
    verdict, reason = _grade_forged(tree)
    assert verdict != "correct", (tree, reason)
    assert not any(r in reason for r in REF_TEXTS), reason
    assert not path.exists(), tree


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_strings_anywhere_inside_an_expression_of_the_right_shape(tmp_path, data):
    """The attacker's tree has the answer's shape (one expression); the strings sit at any depth."""
    path = tmp_path / "canary"
    strings = _hostile_strings(path)
    leaf = data.draw(st.builds(lambda v: {"t": "str", "v": v}, strings))
    for _ in range(data.draw(st.integers(1, 4))):
        f = data.draw(st.sampled_from(["Max", "Min", "sin", "re", "conjugate", "Abs", "Add", "Tuple"]))
        leaf = {"t": "fn", "f": f, "a": [leaf]}
    verdict, reason = _grade_forged(leaf)
    assert verdict == "invalid" and "string" in reason, reason
    assert not path.exists()
