"""HiPhO grading: boxed answers, numbers with units and intervals, expressions, relations, choices,
points, the points judge, and the built-in sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from physlab.grading.hipho import (
    HiPhOKey, check_answer, convert, extract_boxed, grade_boxed_answers, grade_hipho, judge_points,
    key_from_item, key_from_problem, parse_number, parse_points_reply,
)
from physlab.problems.model import Problem

SAMPLE = Path(__file__).resolve().parents[2] / "src/physlab/problems/data/hipho_sample"


def test_extract_boxed_nested_and_ordered():
    text = r"so \boxed{\frac{1}{2}} and also \boxed{v = \sqrt{a_{1}}}\, finally \fbox{3}"
    assert extract_boxed(text) == [r"\frac{1}{2}", r"v = \sqrt{a_{1}}", "3"]
    assert extract_boxed("no answer") == []


@pytest.mark.parametrize("latex,value,rest", [
    (r"5.31 \times 10^{-11}\,\mathrm{m}", 5.31e-11, "m"),
    ("-13.6 eV", -13.6, "eV"),
    ("10^{-10.5}", 10 ** -10.5, ""),
    ("$1.2e3$", 1200.0, ""),
])
def test_parse_number(latex, value, rest):
    v, r = parse_number(latex)
    assert v == pytest.approx(value) and r == rest


def test_unit_conversion():
    assert convert(6330, "m/s", "km/s") == pytest.approx(6.33)
    assert convert(770, "cm", "m") == pytest.approx(7.7)
    assert convert(0.32, r"\mu m", r"$\mathrm{\mu m}$") == pytest.approx(0.32)
    assert convert(2, "bar", "Pa") == pytest.approx(2e5)
    assert convert(1, "s", "m") is None
    assert convert(1, r"$M_{\odot}$", r"$M_{\odot}$") == 1  # unknown units compare as text


@pytest.mark.parametrize("cand,ref,kind,unit,ok", [
    (r"5.3\times10^{-11}\,\mathrm{m}", r"5.31 \times 10^{-11}", "Numerical Value", "m", True),
    (r"0.0531\ \mathrm{nm}", r"5.31 \times 10^{-11}", "Numerical Value", "m", True),
    (r"5.31\times 10^{-11}\,\mathrm{s}", r"5.31 \times 10^{-11}", "Numerical Value", "m", False),  # wrong unit
    ("-13.9", "-13.6", "Numerical Value", "eV", False),
    ("6330 m/s", r"[6.32, 6.34] for $v_{r,1}$", "Numerical Value", "km/s", True),  # interval + conversion
    ("7.0", "[6.32, 6.34]", "Numerical Value", "km/s", False),
    (r"0.32\,\mu m", "0.3", "Numerical Value", r"$\mathrm{\mu m}$", True),  # stated precision: +-0.05
    (r"\frac{1}{2}", r"$W^{\star} / W_{\mathrm{pr}}^{\star} = \frac{1}{2}$", "Numerical Value", None, True),
    (r"$v=\sqrt{\frac{e^2}{4\pi\epsilon_0 r m_e}}$", r"$v = \sqrt{\frac{e^2}{4 \pi \varepsilon_0 m_e r}}$",
     "Expression", None, True),
    (r"$v=\sqrt{\frac{e^2}{2\pi\epsilon_0 r m_e}}$", r"$v = \sqrt{\frac{e^2}{4 \pi \varepsilon_0 m_e r}}$",
     "Expression", None, False),
    (r"$2 < \xi + 2\lambda$", r"$\xi + 2\lambda > 2$", "Inequality", None, True),
    (r"$2 > \xi + 2\lambda$", r"$\xi + 2\lambda > 2$", "Inequality", None, False),
    (r"$2\ddot z = \frac{4z}{z_0^2}\varphi_0\ln(r/r_0) e^{-(z/z_0)^2}$",
     r"$\ddot{z} = \frac{2z}{z_{0}^{2}} \varphi_{0} \ln(\frac{r}{r_{0}}) \exp[-(\frac{z}{z_{0}})^{2}]$",
     "Equation", None, True),  # an equation up to a constant factor
    ("A, D", "A, D", "Multiple Choice", None, True),
    ("D", "A, D", "Multiple Choice", None, False),
])
def test_check_answer(cand, ref, kind, unit, ok):
    assert check_answer(cand, ref, kind, unit)[0] is ok


@pytest.mark.slow  # ~30 s: the LaTeX parser warms up on every new construct
def test_every_real_reference_matches_itself(shared_data):
    items = json.loads((shared_data / "hipho" / "IPhO_2025.json").read_text())[1:]
    for item in items:
        key = key_from_item(item)
        for i, ans in enumerate(key.answers):
            assert check_answer(ans, ans, key.type_of(i), key.unit_of(i))[0], (item["id"], i, ans)


KEY = HiPhOKey(answers=[r"$E_n = -\frac{e^2}{8 \pi \varepsilon_0 n^2 r_1}$", r"-13.6"],
               answer_types=["Expression", "Numerical Value"], units=[None, "eV"], points=[0.2, 0.1],
               marking=[["Award 0.1 pt if A. Otherwise, award 0 pt.", "Award 0.1 pt if B."],
                        ["Award 0.1 pt if C."]])


def test_grade_boxed_answers_points_and_order():
    good = r"... \boxed{-13.6\,\mathrm{eV}} and \boxed{E_n = -\frac{e^2}{8\pi\epsilon_0 r_1 n^2}}"
    s = grade_boxed_answers(good, KEY)  # boxes out of order still match, each used once
    assert s.all_correct and s.points_awarded == pytest.approx(0.3) and s.points_total == pytest.approx(0.3)
    half = r"\boxed{E_n = -\frac{e^2}{4\pi\epsilon_0 r_1 n^2}} \boxed{-13.6 eV}"
    s = grade_boxed_answers(half, KEY)
    assert not s.all_correct and s.points_awarded == pytest.approx(0.1)
    assert [c.correct for c in s.checks] == [False, True]
    v = s.verdict()
    assert v.verdict == "incorrect" and v.details["points"] == pytest.approx(0.1)
    one_box = grade_boxed_answers(r"\boxed{-13.6}", KEY)
    assert one_box.checks[0].correct is False and one_box.checks[1].correct is True


def _sample_problems() -> list[Problem]:
    from physlab.problems.hipho import load_hipho_data

    path = SAMPLE / "IPhO_2025.json"
    return load_hipho_data(json.loads(path.read_text()), path)


def test_sample_is_small_licensed_and_loads_with_figures():
    assert (SAMPLE / "LICENSE").read_text().startswith("MIT License")
    assert sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file()) < 400_000
    problems = _sample_problems()
    assert len(problems) == 5
    assert sum(bool(p.images) for p in problems) >= 2 and all(i.exists() for p in problems for i in p.images)


def test_grade_hipho_on_loaded_problem():
    p = next(p for p in _sample_problems() if p.id == "IPhO_2025_1_A_3")
    key = key_from_problem(p)
    assert len(key.answers) == 3 and key.units[2] == "eV" and key.marking
    assert key_from_problem(p.public()).marking == []  # the public view has no marking scheme
    right = (r"\boxed{E_n = -\frac{e^2}{8\pi\varepsilon_0 n^2 r_1}} \boxed{E_1 = -\frac{1}{2}\alpha^2 m_e c^2} "
             r"\boxed{-13.6\ \mathrm{eV}}")
    assert grade_hipho(p, right).verdict == "correct"
    wrong = right.replace(r"-\frac{1}{2}\alpha^2", r"-\alpha^2")
    v = grade_hipho(p, wrong)
    assert v.verdict == "incorrect" and "2/3" in v.reason
    assert grade_hipho(p, "E_1 = -13.6 eV").verdict == "invalid"


def test_points_reply_parsing_is_strict_and_clipped():
    ok = parse_points_reply('{"awarded": [[0.1, 0.5], [0.1]]}', KEY)
    assert ok.parsed and ok.awarded == [[0.1, 0.1], [0.1]] and ok.points == pytest.approx(0.3)
    for bad in ("10 points", '{"awarded": [[0.1]]}', '{"awarded": [[0.1, 0.1], [0.1, 0.1]]}', "{}"):
        r = parse_points_reply(bad, KEY)
        assert not r.parsed and r.points == 0 and r.raw == bad and r.error


async def test_points_judge_sees_marking_and_solution():
    seen = {}

    def respond(messages, info):
        seen["prompt"] = "\n".join(str(getattr(p, "content", "")) for m in messages for p in m.parts)
        return ModelResponse(parts=[TextPart('```json\n{"awarded": [[0.1, 0], [0.1]]}\n```')])

    r = await judge_points(FunctionModel(respond), "Bohr model problem", "my solution text", KEY)
    assert r.parsed and r.points == pytest.approx(0.2) and r.points_total == pytest.approx(0.3)
    assert "Award 0.1 pt if B." in seen["prompt"] and "my solution text" in seen["prompt"]


async def test_points_for_problem_uses_the_points_judge_role_and_the_marking_scheme():
    from physlab.grading.hipho import points_for_problem

    p = next(p for p in _sample_problems() if p.id == "IPhO_2025_3_A_1")
    roles, prompts = [], []

    class Models:
        def for_role(self, role):
            roles.append(role)

            def respond(messages, info):
                prompts.append("\n".join(str(getattr(x, "content", "")) for m in messages for x in m.parts))
                return ModelResponse(parts=[TextPart('{"awarded": [[0.2]]}')])

            return FunctionModel(respond)

    r = await points_for_problem(Models(), p, r"\boxed{P_b = P_0 + 2\sigma/a}")
    assert roles == ["points_judge"] and r.points == pytest.approx(0.2) and r.points_total == pytest.approx(0.2)
    assert "Award 0.2 pt" in prompts[0]
