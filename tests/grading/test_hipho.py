"""HiPhO grading: boxed answers, numbers with units and ranges, expressions, relations, choices,
points, the points judge, the built-in sample graded against its marking scheme's restatements,
and every official answer of the full IPhO 2025 set against itself.

The grading runs both sandbox stages' code in-process (``helpers.grade_text_in_process``: the same
jobs the Grader sends); ``test_hipho_dispatch.py`` goes through the real sandbox."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from physlab.grading.extract import extract_boxed
from physlab.grading.hipho import HiPhOKey, judge_points, key_from_problem, parse_points_reply
from physlab.problems.model import Problem

from .helpers import grade_text_in_process

SAMPLE = Path(__file__).resolve().parents[2] / "src/physlab/problems/data/hipho_sample"


def item(answers, types, units=None, points=None, pid="item") -> Problem:
    """A HiPhO item as the loader makes it (answer key in ``extra``)."""
    units = units or [None] * len(answers)
    points = points or [0.1] * len(answers)
    return Problem(id=pid, statement="s", reference="\n".join(answers), reference_format="latex",
                   extra={"format": "hipho", "answer_types": types, "units": units, "points": points,
                          "answer_key_answers": answers})


def test_extract_boxed_nested_and_ordered():
    text = r"so \boxed{\frac{1}{2}} and also \boxed{v = \sqrt{a_{1}}}\, finally \fbox{3}"
    assert extract_boxed(text) == [r"\frac{1}{2}", r"v = \sqrt{a_{1}}", "3"]
    assert extract_boxed("no answer") == []


@pytest.mark.parametrize("cand,ref,kind,unit,ok", [
    # numbers: relative tolerance 1 %, or the reference's stated precision, after unit conversion
    (r"5.3\times10^{-11}\,\mathrm{m}", r"5.31 \times 10^{-11}", "Numerical Value", "m", True),
    (r"0.0531\ \mathrm{nm}", r"5.31 \times 10^{-11}", "Numerical Value", "m", True),
    (r"5.31\times 10^{-11}\,\mathrm{s}", r"5.31 \times 10^{-11}", "Numerical Value", "m", False),  # wrong unit
    (r"5.31\times 10^{-11}\,\mathrm{mm}", r"5.31 \times 10^{-11}", "Numerical Value", "m", False),  # prefix
    ("-13.9", "-13.6", "Numerical Value", "eV", False),
    ("-13.6 eV", "-13.6", "Numerical Value", "eV", True),
    (r"-2.18 \times 10^{-18}\,\mathrm{J}", "-13.6", "Numerical Value", "eV", True),
    ("6330 m/s", r"[6.32, 6.34] for $v_{r,1}$", "Numerical Value", "km/s", True),  # range + conversion
    ("7.0", "[6.32, 6.34]", "Numerical Value", "km/s", False),
    (r"[6.325, 6.335]", "[6.32, 6.34]", "Numerical Value", "km/s", True),  # a range inside the range
    (r"[6.0, 6.5]", "[6.32, 6.34]", "Numerical Value", "km/s", False),
    (r"0.32\,\mu m", "0.3", "Numerical Value", r"$\mathrm{\mu m}$", True),  # stated precision: +-0.05
    (r"4.7\,\mathrm{k\Omega}", "4700", "Numerical Value", r"$\Omega$", True),
    (r"2\,\mathrm{mF}", "0.002", "Numerical Value", "F", True),
    (r"2\,\mathrm{\mu F}", "0.002", "Numerical Value", "F", False),
    (r"\frac{1}{2}", r"$W^{\star} / W_{\mathrm{pr}}^{\star} = \frac{1}{2}$", "Numerical Value", None, True),
    ("None", "None", "Numerical Value", "cm", True),
    ("2", "None", "Numerical Value", "cm", False),
    # expressions, equations, inequalities
    (r"$v=\sqrt{\frac{e^2}{4\pi\epsilon_0 r m_e}}$", r"$v = \sqrt{\frac{e^2}{4 \pi \varepsilon_0 m_e r}}$",
     "Expression", None, True),
    (r"$v=\sqrt{\frac{e^2}{2\pi\epsilon_0 r m_e}}$", r"$v = \sqrt{\frac{e^2}{4 \pi \varepsilon_0 m_e r}}$",
     "Expression", None, False),
    (r"$2 < \xi + 2\lambda$", r"$\xi + 2\lambda > 2$", "Inequality", None, True),
    (r"$2 > \xi + 2\lambda$", r"$\xi + 2\lambda > 2$", "Inequality", None, False),
    (r"$4 < 2\xi + 4\lambda$", r"$\xi + 2\lambda > 2$", "Inequality", None, True),  # times a positive number
    (r"$2\ddot z = \frac{4z}{z_0^2}\varphi_0\ln(r/r_0) e^{-(z/z_0)^2}$",
     r"$\ddot{z} = \frac{2z}{z_{0}^{2}} \varphi_{0} \ln(\frac{r}{r_{0}}) \exp[-(\frac{z}{z_{0}})^{2}]$",
     "Equation", None, True),  # an equation up to a constant factor
    (r"$\ddot z = \frac{4z}{z_0^2}\varphi_0\ln(r/r_0) e^{-(z/z_0)^2}$",
     r"$\ddot{z} = \frac{2z}{z_{0}^{2}} \varphi_{0} \ln(\frac{r}{r_{0}}) \exp[-(\frac{z}{z_{0}})^{2}]$",
     "Equation", None, False),
    ("A, D", "A, D", "Multiple Choice", None, True),
    ("D", "A, D", "Multiple Choice", None, False),
])
def test_one_answer(cand, ref, kind, unit, ok):
    v = grade_text_in_process(item([ref], [kind], [unit]), rf"\boxed{{{cand}}}")
    assert (v.verdict == "correct") is ok, v.reason
    assert v.details["answers"][0]["method"]


KEY = HiPhOKey(answers=[r"$E_n = -\frac{e^2}{8 \pi \varepsilon_0 n^2 r_1}$", r"-13.6"],
               answer_types=["Expression", "Numerical Value"], units=[None, "eV"], points=[0.2, 0.1],
               marking=[["Award 0.1 pt if A. Otherwise, award 0 pt.", "Award 0.1 pt if B."],
                        ["Award 0.1 pt if C."]])


def _key_item():
    return item(KEY.answers, KEY.answer_types, KEY.units, KEY.points)


def test_boxes_answer_by_label_then_in_order_each_used_once():
    good = r"... \boxed{-13.6\,\mathrm{eV}} and \boxed{E_n = -\frac{e^2}{8\pi\epsilon_0 r_1 n^2}}"
    v = grade_text_in_process(_key_item(), good)  # the labelled box answers E_n wherever it is
    assert v.verdict == "correct", v.reason
    assert v.details["points"] == pytest.approx(0.3) and v.details["points_total"] == pytest.approx(0.3)
    half = r"\boxed{E_n = -\frac{e^2}{4\pi\epsilon_0 r_1 n^2}} \boxed{-13.6 eV}"
    v = grade_text_in_process(_key_item(), half)
    assert v.verdict == "incorrect" and v.details["points"] == pytest.approx(0.1)
    assert [a["correct"] for a in v.details["answers"]] == [False, True]
    assert "1/2" in v.reason
    one_box = grade_text_in_process(_key_item(), r"\boxed{-13.6}")
    assert [a["correct"] for a in one_box.details["answers"]] == [False, True]
    assert one_box.details["answers"][0]["reason"] == "no answer for it"


def test_unlabelled_parts_in_the_wrong_order_are_wrong():
    """Two numbers for two parts, swapped: positions decide when nothing names the quantity."""
    prob = item(["2.5", "7.0"], ["Numerical Value", "Numerical Value"], ["m", "s"])
    assert grade_text_in_process(prob, r"\boxed{2.5} \boxed{7.0}").verdict == "correct"
    assert grade_text_in_process(prob, r"\boxed{7.0} \boxed{2.5}").verdict == "incorrect"


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


def test_grade_loaded_problem():
    p = next(p for p in _sample_problems() if p.id == "IPhO_2025_1_A_3")
    key = key_from_problem(p)
    assert len(key.answers) == 3 and key.units[2] == "eV" and key.marking
    assert key_from_problem(p.public()).marking == []  # the public view has no marking scheme
    right = (r"\boxed{E_n = -\frac{e^2}{8\pi\varepsilon_0 n^2 r_1}} \boxed{E_1 = -\frac{1}{2}\alpha^2 m_e c^2} "
             r"\boxed{-13.6\ \mathrm{eV}}")
    assert grade_text_in_process(p, right).verdict == "correct"
    wrong = right.replace(r"-\frac{1}{2}\alpha^2", r"-\alpha^2")
    v = grade_text_in_process(p, wrong)
    assert v.verdict == "incorrect" and "2/3" in v.reason and "E_1" in v.reason
    assert grade_text_in_process(p, "E_1 is about minus thirteen eV").verdict == "invalid"


# Where the official marking scheme restates an item's answer: (criterion, which $...$ of it).
# The multiple-choice answer is restated in words ("Model 2"), so it is given as its letter.
RESTATED = {
    "IPhO_2025_1_A_1": [(1, -1)],
    "IPhO_2025_1_A_3": [(0, -1), (1, -1), (2, -1)],
    "IPhO_2025_3_A_1": [(0, -1)],
    "IPhO_2025_3_A_2": [(1, -1), (2, -1)],
    "IPhO_2025_3_A_3": [(0, -1), (3, -1), (4, -1), None, (7, -1)],
}


@pytest.mark.parametrize("pid", list(RESTATED))
def test_official_answers_grade_correct_as_the_marking_scheme_restates_them(pid):
    p = next(p for p in _sample_problems() if p.id == pid)
    marking = p.extra["answer_key_marking"][0]
    boxes = []
    for i, where in enumerate(RESTATED[pid]):
        if where is None:
            boxes.append(r"\boxed{" + extract_boxed(p.extra["answer_key_answers"][i])[0] + "}")
            continue
        criterion, k = where
        boxes.append(r"\boxed{" + re.findall(r"\$([^$]+)\$", marking[criterion])[k] + "}")
    v = grade_text_in_process(p, "Results:\n" + "\n".join(boxes))
    assert v.verdict == "correct", (v.reason, v.details["answers"])
    assert v.details["points"] == pytest.approx(v.details["points_total"])
    assert all(a["reference"] and a["candidate"] for a in v.details["answers"])


@pytest.mark.slow  # every answer of the full IPhO 2025 set
def test_every_official_answer_grades_correct_against_itself(shared_data):
    from physlab.problems.hipho import load_hipho_data

    path = shared_data / "hipho" / "IPhO_2025.json"
    for p in load_hipho_data(json.loads(path.read_text()), path):
        v = grade_text_in_process(p, "\n".join(p.extra["answer_key_answers"]))
        assert v.verdict == "correct", (p.id, v.reason)


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
