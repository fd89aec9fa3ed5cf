"""What the CritPt tests share: 70 challenge files shaped like CritPt's public test set (so the tests
run on a fresh clone without ../shared), a scripted model that fills any answer template, and a
sweep of it through the real runner."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from physlab.bench.sweep import Sweep, SweepConfig
from physlab.cli import main
from physlab.llm.scripted import last_user_text, register_scenario

FILL = "critpt-fill-zero"
TEMPLATE = '''def answer():
    r"""
    Return the number asked for.
    """
    # ------------------ FILL IN YOUR RESULTS BELOW ------------------
    value = ...
    # ---------------------------------------------------------------

    return value
'''


def write_public_challenges(d: Path, n: int = 70) -> Path:
    """``Challenge_<i>.json`` as CritPt publishes them: one main problem each, no answers."""
    d.mkdir(parents=True, exist_ok=True)
    for i in range(1, n + 1):
        item = {"problem_id": f"Challenge_{i}_main", "problem_type": "main", "problem_index": None,
                "problem_description": f"\n\n# Problem setup:\nChallenge {i}.\n\n# Main problem:\nFind the value.\n",
                "code_template": TEMPLATE, "answer_code": None, "answer_only_code": None,
                "metadata": {"settings": {}, "tag": ""}, "testcases": None}
        (d / f"Challenge_{i}.json").write_text(json.dumps(
            {"dataset_name": f"Challenge_{i}", "source_notebook": f"data/public_test_challenges/Challenge_{i}.ipynb",
             "problems": [item]}), encoding="utf-8")
    return d


def answer_key() -> dict[str, int]:
    """The stand-in server's private answers: 0 is right for every third challenge (23 of 70),
    which is what the scripted model answers everywhere."""
    return {f"Challenge_{i}_main": 0 if i % 3 == 0 else 1 for i in range(1, 71)}


def _fill_zero():
    def respond(role, messages, info):
        prompt = last_user_text(messages)
        blocks = re.findall(r"```python\n(.*?)```", prompt, flags=re.DOTALL)
        if not blocks:
            return "I cannot find a template."
        filled = re.sub(r"(=\s*)\.\.\.", r"\g<1>0", blocks[-1])
        return f"Working it through, the value is zero.\n\n```python\n{filled}```\n"

    return respond


register_scenario(FILL, _fill_zero, description="fills every `= ...` of the answer template with 0 (tests)")


async def sweep(suite: str | Path, db: Path, *, repeats: int = 1, strategy: str = "oneshot") -> None:
    cfg = SweepConfig(suite=str(suite), strategies=[strategy], models=[f"scripted:{FILL}"], repeats=repeats,
                      db=db, concurrency=8)
    s = await Sweep(cfg, progress=False).run()
    assert s.failed == 0 and s.ran == s.cells


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["bench", *args])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err
