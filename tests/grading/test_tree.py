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
