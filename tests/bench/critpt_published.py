"""CritPt's published format, written for these tests from its public source (CritPt-Benchmark/CritPt
at 17c2545), independently of physlab.bench.critpt_format, so an export is checked against what
CritPt's own tools do with it:

* ``src/critpt/submission.py``: ``Submission`` is a dataclass (problem_id, generated_code, model,
  timestamp, generation_config, messages=None) built with ``Submission(**entry)``;
  ``SubmissionBatch.from_dict`` reads ``data["submissions"]`` and ``data["batch_metadata"]``;
  ``from_directory`` loads ``directory.glob("*.json")`` except ``batch_metadata.json``, ``main.json``,
  ``sub_<i>.json`` and ``*_eval.json`` files.
* ``evaluate_all_results.py``: submits every file under the results directory (recursively) whose
  name holds ``_main.json`` or ``_sub_``, except the same skipped names.
* ``src/critpt/code_parser``: the code is the text after the first ```python up to the next ```
  (else the first plain fenced block, else the whole reply), with import lines deleted; it must
  parse and define exactly one top-level function.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SKIPPED = {"batch_metadata.json", "main.json", *(f"sub_{i}.json" for i in range(10))}


@dataclass
class Submission:
    problem_id: str
    generated_code: str
    model: str
    timestamp: str
    generation_config: dict
    messages: list | None = None


def load_batch(data: dict) -> tuple[list[Submission], dict]:
    return [Submission(**sub) for sub in data["submissions"]], data["batch_metadata"]


def load_directory(directory: Path) -> list[Submission]:
    out = []
    for f in directory.glob("*.json"):
        if f.name in SKIPPED or "_eval.json" in f.name:
            continue
        out.append(Submission(**json.loads(f.read_text(encoding="utf-8"))))
    return out


def files_evaluate_all_results_sends(results_dir: Path) -> list[Path]:
    return sorted(f for f in results_dir.rglob("*.json")
                  if f.name not in SKIPPED | {"evaluation_summary.json", "aggregate_report.json"}
                  and "_eval.json" not in f.name and ("_main.json" in f.name or "_sub_" in f.name))


def extracted_code(response: str) -> str:
    script = None
    if "```" in response:
        if "```python" in response:
            script = response.split("```python")[1].split("```")[0]
        elif re.search(r"```\s*\n", response):
            script = response.split("```")[1].split("```")[0]
    if script is None:
        script = response
    return re.sub(r"^\s*(import .*|from .*\s+import\s+.*)", "", script, flags=re.MULTILINE)


def the_function(response: str) -> ast.FunctionDef:
    """The one function CritPt's parser takes from ``response`` (AssertionError otherwise)."""
    tree = ast.parse(extracted_code(response))
    functions = [n for n in ast.iter_child_nodes(tree) if isinstance(n, ast.FunctionDef)]
    assert len(functions) == 1, f"CritPt's parser takes exactly one function, got {len(functions)}"
    return functions[0]


def run_answer(response: str, **kwargs: Any) -> Any:
    """Call the extracted function (the stand-in grader's way of reading an answer)."""
    namespace: dict[str, Any] = {}
    exec(compile(extracted_code(response), "<submission>", "exec"), namespace)  # test-only, our scripted code
    return namespace[the_function(response).name](**kwargs)
