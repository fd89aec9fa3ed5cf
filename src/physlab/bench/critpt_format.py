"""CritPt's submission format and what its grading server accepts, as CritPt's public code defines
them (CritPt-Benchmark/CritPt: ``src/critpt/submission.py``, ``src/critpt/evaluation/eval_client.py``,
``src/critpt/code_parser/``, ``evaluate_all_results.py``, README). Facts only; no code of theirs.

* One entry is CritPt's ``Submission``: ``problem_id``, ``generated_code``, ``model``, ``timestamp``
  (ISO 8601), ``generation_config`` and optional ``messages``; its loader builds it with
  ``Submission(**entry)``, so any other key (or a missing required one) makes it refuse the file.
* A batch is ``{"submissions": [...], "batch_metadata": {...}}``; on disk, CritPt's tools also read a
  directory of ``<problem_id>.json`` files with a ``batch_metadata.json`` beside them.
* The server grades only complete batches: each of the 70 public test challenges exactly once and
  nothing else; ten submissions per account in 24 hours.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

# CritPt's public test set (data/public_test_challenges: Challenge_1 ... Challenge_70, each a main
# problem without sub-problems). tests/bench/test_critpt_export.py checks this against the data.
PUBLIC_CHALLENGES: tuple[str, ...] = tuple(f"Challenge_{i}" for i in range(1, 71))
PUBLIC_IDS: tuple[str, ...] = tuple(f"{c}_main" for c in PUBLIC_CHALLENGES)

BATCH_METADATA_FILE = "batch_metadata.json"

_SUB_RE = re.compile(r"^(?P<challenge>.+)_sub_\d+$")


class Submission(BaseModel):
    """One entry, field for field as CritPt's ``Submission`` dataclass (same order, same default)."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str
    generated_code: str
    model: str
    timestamp: str
    generation_config: dict[str, Any]
    messages: list[dict[str, Any]] | None = None

    def wire(self) -> dict[str, Any]:
        """The entry as CritPt's own client posts it (its ``_serialize_submission``: no timestamp)."""
        return {"problem_id": self.problem_id, "generated_code": self.generated_code, "model": self.model,
                "generation_config": self.generation_config, "messages": self.messages}


def batch_dict(submissions: list[Submission], metadata: dict[str, Any]) -> dict[str, Any]:
    """The batch file (CritPt's ``SubmissionBatch.to_dict``)."""
    return {"submissions": [s.model_dump() for s in submissions], "batch_metadata": metadata}


def wire_payload(submissions: list[Submission], metadata: dict[str, Any]) -> dict[str, Any]:
    """The body CritPt's client posts to the grading endpoint."""
    return {"submissions": [s.wire() for s in submissions], "batch_metadata": metadata}


def model_label(spec: str) -> str:
    """CritPt names models ``api/name`` (``openai/gpt-5``); PhysLab writes ``provider:name``."""
    return spec.replace(":", "/", 1)


# -- generated_code ------------------------------------------------------------------------------


def fence(code: str) -> str:
    """``generated_code`` as CritPt's generation writes it: the reply holding one ```python block."""
    code = code.strip()
    return f"```python\n{code}\n```" if code else ""


def parser_problem(generated_code: str) -> str | None:
    """What CritPt's code parser would object to in ``generated_code`` (None: it reads one function).

    Its rules, restated: the text between the first ```python fence and the next ``` (else the first
    plain fenced block, else the whole text); every line that looks like an import deleted; the rest
    must parse and hold exactly one top-level ``def``."""
    text = generated_code
    if not text:
        return "no code (the server grades an empty answer as wrong)"
    script = text
    if "```" in text:
        if "```python" in text:
            script = text.split("```python")[1].split("```")[0]
        elif re.search(r"```\s*\n", text):
            script = text.split("```")[1].split("```")[0]
    if re.search(r"^[ \t]+(import |from \S+\s+import\s)", script, flags=re.MULTILINE):
        return "an import inside a function (CritPt's parser deletes every import line)"
    script = re.sub(r"^\s*(import .*|from .*\s+import\s+.*)", "", script, flags=re.MULTILINE)
    try:
        tree = ast.parse(script)
    except SyntaxError as exc:
        return f"does not parse once extracted ({exc.msg}, line {exc.lineno})"
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(functions) != 1:
        return (f"{len(functions)} top-level functions ({', '.join(functions) or 'none'}); "
                "CritPt's parser takes exactly one")
    return None


# -- which ids a batch must hold -----------------------------------------------------------------


def challenge_of(problem_id: str) -> str | None:
    """The public challenge a main problem or sub-problem id belongs to (None: not a test challenge)."""
    if problem_id.endswith("_main"):
        base = problem_id[: -len("_main")]
    elif m := _SUB_RE.match(problem_id):
        base = m["challenge"]
    else:
        return None
    return base if base in PUBLIC_CHALLENGES else None


class IdCheck(BaseModel):
    """How a batch's ids compare with what the server grades."""

    missing: list[str]
    extra: list[str]
    repeated: dict[str, int]
    expected: int

    @property
    def complete(self) -> bool:
        return not (self.missing or self.extra or self.repeated)

    def describe(self) -> str:
        """One line naming every missing id (as ranges), the extra and the repeated ones."""
        parts = []
        if self.missing:
            parts.append(f"{len(self.missing)} of the {self.expected} CritPt test ids missing "
                         f"({compress_ids(self.missing)})")
        if self.extra:
            parts.append(f"{len(self.extra)} ids that are not CritPt test problems "
                         f"({_first(self.extra, 10)})")
        if self.repeated:
            parts.append(f"{len(self.repeated)} ids more than once ({compress_ids(self.repeated)})")
        return "; ".join(parts)


def check_ids(ids: Iterable[str], known_subs: Iterable[str] = ()) -> IdCheck:
    """Every public challenge's main id exactly once, and nothing else. When the batch carries
    sub-problems of the test challenges, every sub-problem the suite holds for them (``known_subs``)
    is expected too: the server grades a challenge's checkpoints together."""
    ids = list(ids)
    counts = Counter(ids)
    expected = set(PUBLIC_IDS)
    if any(_SUB_RE.match(i) and challenge_of(i) for i in counts):
        expected |= {s for s in known_subs if challenge_of(s)}
    return IdCheck(missing=sorted(expected - set(counts), key=natural_key),
                   extra=sorted(set(counts) - expected, key=natural_key),
                   repeated={i: n for i, n in counts.items() if n > 1 and i in expected},
                   expected=len(expected))


def natural_key(s: str) -> list:
    """Challenge_2 before Challenge_10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _first(ids: list[str], n: int) -> str:
    shown = ", ".join(ids[:n])
    return shown + (f", ... ({len(ids) - n} more)" if len(ids) > n else "")


def compress_ids(ids: Iterable[str]) -> str:
    """``Challenge_1_main ... Challenge_70_main`` as ``Challenge_{1-70}_main``: every id named, in
    a line that stays readable (ids sharing the text around their first number are grouped)."""
    groups: dict[tuple[str, str], list[int]] = {}
    plain: list[str] = []
    for i in ids:
        m = re.match(r"^(\D*)(\d+)(.*)$", i)
        if m:
            groups.setdefault((m[1], m[3]), []).append(int(m[2]))
        else:
            plain.append(i)
    out = []
    for (head, tail), nums in sorted(groups.items()):
        nums = sorted(set(nums))
        if len(nums) == 1:
            out.append(f"{head}{nums[0]}{tail}")
            continue
        runs: list[str] = []
        start: int | None = nums[0]
        for a, b in zip(nums, nums[1:] + [None]):
            if b != a + 1:
                runs.append(f"{start}-{a}" if a != start else f"{a}")
                start = b
        out.append(f"{head}{{{','.join(runs)}}}{tail}")
    return ", ".join(out + sorted(plain))
