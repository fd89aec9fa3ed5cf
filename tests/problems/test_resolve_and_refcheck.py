from __future__ import annotations

import pytest
import sympy as sp

from physlab.errors import UserError
from physlab.grading.refcheck import evaluate_reference
from physlab.problems import Problem, load_file, load_suite, resolve_problem
from physlab.problems.templates import parse_template

from .conftest import SYMBOLIC_YAML


def test_resolve_suite_id_file_and_dir(write, tmp_path, monkeypatch):
    p = resolve_problem("examples/gr_photon_sphere")
    assert p.id == "gr_photon_sphere" and p.suite == "examples" and p.qualified_id == "examples/gr_photon_sphere"
    f = write("isco.yaml", SYMBOLIC_YAML)
    assert resolve_problem(str(f)).id == "isco"
    assert resolve_problem(f"{tmp_path}/isco").id == "isco"  # DIR/ID
    assert resolve_problem(f"{tmp_path}#isco").id == "isco"
    assert resolve_problem("gr_photon_sphere").suite == "examples"  # bare id of a built-in problem
    # a local directory named like a suite does not hide the suite's problems
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "local.yaml").write_text("problem: local one\n")
    assert resolve_problem("examples/quantum_error_correction_main").suite == "examples"
    assert resolve_problem("examples/local").statement == "local one"


def test_unknown_id_lists_close_matches():
    with pytest.raises(UserError) as exc:
        resolve_problem("examples/sm_isign_1d")
    msg = str(exc.value)
    assert "sm_ising_1d" in msg and "\n" not in msg


def test_template_info():
    info = parse_template("import sympy as sp\ndef answer(a, b, *, c):\n    x = ...\n    y: float = ...\n    return (x, y)\n")
    assert info.params == ("a", "b", "c") and info.filled == ("x", "y") and info.returned == ("x", "y")
    assert info.return_expr == "(x, y)"


def test_every_builtin_reference_is_wellformed_sympy():
    """Not grading: each built-in reference evaluates (in the template's scope) to SymPy numbers or
    expressions whose free symbols are parameters of answer(...)."""
    probs = [p for name in ("examples",) for p in load_suite(name)]
    assert len(probs) >= 16
    for p in probs:
        assert p.gradable and p.has_template, p.id
        r = evaluate_reference(p)
        assert r.issues == [], (p.id, r.issues)
        leaves = list(r.value.values()) if isinstance(r.value, dict) else list(r.value) if isinstance(r.value, (tuple, list)) else [r.value]
        for leaf in leaves:
            expr = sp.sympify(leaf)
            assert {s.name for s in expr.free_symbols} <= set(r.params), p.id
            # and a finite number at a generic point of the parameters
            point = {s: sp.Rational(3, 10) for s in expr.free_symbols}
            val = complex(sp.N(expr.subs(point)))
            assert val == val and abs(val) < 1e300, (p.id, val)


def test_refcheck_catches_a_stray_symbol(write):
    [p] = load_file(write("bad.yaml", SYMBOLIC_YAML.replace("r_isco = 6*M", "r_isco = 6*M*sp.Symbol('G')")))
    assert "not answer() parameters: G" in " ".join(evaluate_reference(p).issues)
    [p] = load_file(write("bad2.yaml", SYMBOLIC_YAML.replace("r_isco = 6*M", "r_isco = 6*M*G")))
    with pytest.raises(ValueError, match="bad2: reference does not evaluate: NameError"):
        evaluate_reference(p)


def test_builtin_suite_covers_the_four_fields_and_answer_shapes():
    probs = {p.id: p for p in load_suite("examples")}
    own = [p for p in probs.values() if p.extra["format"] == "yaml"]
    for prefix in ("gr_", "sm_", "qft_", "qi_"):
        assert sum(p.id.startswith(prefix) for p in own) >= 2, prefix
    assert any(p.rtol for p in own) and any(p.reference_format == "number" for p in own)
    shapes = {type(evaluate_reference(p).value).__name__ for p in own}
    assert {"tuple", "dict"} <= shapes
    assert "positive=True" in probs["gr_photon_sphere"].answer_template
    assert {f"quantum_error_correction_{s}" for s in ("main", "sub_0", "sub_1", "sub_2")} <= set(probs)


def test_public_is_a_problem_without_key():
    p = resolve_problem("examples/sm_ising_1d")
    pub = p.public()
    assert isinstance(pub, Problem) and pub.reference is None and pub.answer_template == p.answer_template
    assert pub.public() is pub  # already public: no copy (a sweep asks for it several times per cell)
    keyed = pub.model_copy(update={"extra": {"answer_key_points": 3}})
    assert keyed.public() is not keyed and "answer_key_points" not in keyed.public().extra


def test_refcheck_accepts_a_parameter_declared_under_another_symbol_name(write, capsys):
    """`w = sp.symbols('omega')` as the parameter w: omega is the parameter, not a stray symbol."""
    from physlab.cli import main

    f = write("photon.yaml", """
        problem: Energy and momentum of a photon of angular frequency w.
        answer_template: |
          import sympy as sp
          hbar, w, c = sp.symbols('hbar omega c', positive=True)
          def answer(hbar, w, c):
              E = ...
              p = ...
              return E, p
        answer: |
          E = hbar*w
          p = hbar*w/c
        """)
    prob = load_file(f)[0]
    assert evaluate_reference(prob).issues == []
    with pytest.raises(SystemExit) as exc:
        main(["problems", "check", str(f)])
    assert exc.value.code in (0, None)
    assert "photon: ok (python)" in capsys.readouterr().out
    stray = prob.model_copy(update={"reference": "E = hbar*w*sp.Symbol('q')\np = sp.Symbol('q')"})
    assert evaluate_reference(stray).issues == ["uses symbols that are not answer() parameters: q"]
