"""How often the grader agrees with other people's labels, on material nobody on the project wrote.

    python benchmarks/grader_agreement.py --data DIR [--source NAME] [--jobs N] [--sandbox]
                                          [--show N] [--out FILE]

DIR holds JSON Lines files (kept apart from the project: real model answers with their publishers'
labels, and other projects' grading cases). One case a line:

    {"source": "physics", "id": "atomic/4-14", "statement": "...", "reference": "...",
     "reference_format": "latex" | "python" | "number" (optional), "template": "...", "choices": [...],
     "rtol": ..., "format": "critpt" (optional), "candidate": "<a model's whole reply, or an answer>",
     "label": "correct" | "incorrect", "kind": "answers" (real model replies) | "cases" (the default:
     other projects' grading cases)}

A label found wrong on inspection is corrected in ``DIR/*.corrections.json`` (a list of ``{"source",
"id", "label", "why"}``: the why says what the publisher's checker got wrong, or which documented
convention of PhysLab's grader differs from the other project's); the figures are printed against
the labels as published and against the corrected ones, and every correction is listed.

Or, instead of the problem's fields, ``"problem": "FILE#ID"`` (a problem file beside the cases, read by the
project's loaders). ``"candidate_is_answer": true`` marks a candidate that is the final answer itself
(other projects' grading cases): a bare answer is graded as the reply ``\boxed{<answer>}``, one with
its own math delimiters or words as the reply it is.

Each case is graded as ``physlab grade`` grades it (``Grader.grade`` on a ``Problem`` built from the
case; the problem's loader-time reading, options in the statement and prose references included).
By default both stages run in this process for written answers (the same stage code the sandbox runs;
a candidate whose answer is code is always run in the sandbox); ``--sandbox`` sends every case through
the sandbox, as ``physlab grade`` does. Prints, per source and in total: agreement with the labels,
right answers recognised (labelled correct, graded correct), false "correct" (labelled incorrect,
graded correct), how many were ``ungraded`` (a prose reference: no rule reads it; left out of
agreement and listed) and the disagreements, with the grader's reason.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any


def load_corrections(data: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for path in sorted(data.rglob("*.corrections.json")):
        for c in json.loads(path.read_text(encoding="utf-8")):
            out[(c["source"], str(c["id"]))] = c
    return out


def load_cases(data: Path, sources: set[str] | None = None) -> list[dict]:
    cases = []
    for path in sorted(data.rglob("*.jsonl")):
        if path.name.endswith(".out.jsonl"):  # a previous run's verdicts (--out)
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            case = json.loads(line)
            case.setdefault("source", path.stem)
            case.setdefault("id", f"{path.stem}:{n}")
            if case.get("problem"):  # FILE#ID, relative to the cases' file: loaded by the project's loaders
                file_part, _, pid = case["problem"].rpartition("#")
                case["problem"] = f"{(path.parent / file_part).resolve()}#{pid}"
            if sources and case["source"] not in sources:
                continue
            cases.append(case)
    return cases


@functools.lru_cache(maxsize=64)
def _problems_in(path: str) -> dict:
    from physlab.problems.suites import load_file

    return {p.id: p for p in load_file(Path(path))}


def problem_of(case: dict):
    from physlab.problems.model import Problem

    if case.get("problem"):
        file_part, _, pid = case["problem"].rpartition("#")
        return _problems_in(file_part)[pid]

    extra = {"format": case["format"]} if case.get("format") else {}
    return Problem(id=str(case["id"])[:200], statement=case.get("statement") or "", reference=case["reference"],
                   reference_format=case.get("reference_format"), answer_template=case.get("template"),
                   choices=case.get("choices"), rtol=case.get("rtol"), extra=extra)


class InProcessStages:
    """A stand-in for the sandbox that runs the grader's stages in this process -- for written answers
    only. A stage-1 job that would run candidate code goes to the real sandbox (model-written code is
    never run outside it)."""

    def __init__(self) -> None:
        self._sandbox: Any = None
        self.trusted = self

    def _real(self):
        if self._sandbox is None:
            from physlab.sandbox import default_sandbox
            self._sandbox = default_sandbox()
        return self._sandbox

    async def run(self, code, *, limits=None, files=None, collect=None):
        from physlab.grading.rt import stages
        from physlab.sandbox import SandboxResult

        job = json.loads(files["job.json"])
        if job.get("mode") == "candidate":
            if job.get("code") is not None:
                return await self._real().run(code, limits=limits, files=files, collect=collect)
            out = stages.run_candidate(job)
            return SandboxResult(exit_code=0, stdout="", stderr="", timed_out=False, duration_s=0.0, truncated=False,
                                 files={stages.RESULT_FILE: json.dumps(out).encode()})
        lines: list[str] = []
        try:
            result = stages.run_trusted(job, lambda: lines.append(stages.REFERENCE_MARK))
        except Exception as exc:  # noqa: BLE001 - reported as the sandbox would report it
            return SandboxResult(exit_code=1, stdout="\n".join(lines), stderr=f"{type(exc).__name__}: {exc}",
                                 timed_out=False, duration_s=0.0, truncated=False)
        lines.append(stages.RESULT_MARK + json.dumps(result))
        return SandboxResult(exit_code=0, stdout="\n".join(lines), stderr="", timed_out=False, duration_s=0.0,
                             truncated=False)


def reply_of(case: dict) -> str:
    """The reply graded: a grading case's bare answer (no math delimiters, no sentence) boxed, as the
    final answer it is; anything else (a reply with its own delimiters or words) as written."""
    text = case["candidate"]
    if not case.get("candidate_is_answer"):
        return text
    m = re.fullmatch(r"\s*(?:\$\$(.*)\$\$|\$(.*)\$|\\\[(.*)\\\]|\\\((.*)\\\))\s*\.?\s*", text, re.S)
    inner = next((g for g in m.groups() if g is not None), "") if m else text  # "$[0,1)$": the math inside
    if re.search(r"\\boxed|\$|\\\[|\\\(|[A-Za-z]{2,}\s+[A-Za-z]{2,}\s+[A-Za-z]{2,}", inner):
        return text  # a reply of its own (delimiters, a box, words): graded as written
    return "\\boxed{" + inner + "}"


def _grade_batch(batch: list[dict], in_sandbox: bool) -> list[dict]:
    from physlab.errors import UserError
    from physlab.grading.grader import Grader

    async def main():
        if in_sandbox:
            from physlab.sandbox import default_sandbox
            grader = Grader(default_sandbox())
        else:
            grader = Grader(InProcessStages())  # type: ignore[arg-type]
        out = []
        for case in batch:
            try:
                v = await grader.grade(problem_of(case), reply_of(case))
                out.append({"verdict": v.verdict, "reason": v.reason,
                            "compared": [v.details.get("candidate_normalized", ""),
                                         v.details.get("reference_normalized", "")]})
            except UserError as exc:
                out.append({"verdict": "error", "reason": str(exc)[:300], "compared": ["", ""]})
        return out

    return asyncio.run(main())


def grade_all(cases: list[dict], jobs: int, in_sandbox: bool) -> list[dict]:
    if jobs <= 1:
        return _grade_batch(cases, in_sandbox)
    chunks = [cases[i::jobs] for i in range(jobs)]
    with ProcessPoolExecutor(jobs) as pool:
        parts = list(pool.map(_grade_batch, chunks, [in_sandbox] * jobs))
    out: list[dict] = [{}] * len(cases)
    for i, part in enumerate(parts):
        for k, res in enumerate(part):
            out[i + k * jobs] = res
    return out


def figures(rows: list[tuple[dict, dict]], key: str = "label") -> dict:
    graded = [(c, r) for c, r in rows if r["verdict"] != "ungraded"]
    agree = sum((r["verdict"] == "correct") == (c[key] == "correct") for c, r in graded)
    right = [r for c, r in graded if c[key] == "correct"]
    wrong = [r for c, r in graded if c[key] != "correct"]
    return {"n": len(rows), "graded": len(graded), "ungraded": len(rows) - len(graded),
            "agreement": agree / len(graded) if graded else float("nan"),
            "recognised": sum(r["verdict"] == "correct" for r in right) / len(right) if right else float("nan"),
            "right": len(right), "false_correct": sum(r["verdict"] == "correct" for r in wrong), "wrong": len(wrong),
            "verdicts": dict(Counter(r["verdict"] for _, r in rows))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="folder of *.jsonl cases")
    ap.add_argument("--source", action="append", help="only these sources (repeatable)")
    ap.add_argument("--jobs", type=int, default=2, help="processes grading side by side")
    ap.add_argument("--sandbox", action="store_true", help="run every stage in the sandbox (as physlab grade)")
    ap.add_argument("--show", type=int, default=40, help="disagreements listed per source (0: none)")
    ap.add_argument("--out", type=Path, help="write every case's verdict here (JSON Lines)")
    args = ap.parse_args()
    cases = load_cases(args.data, set(args.source) if args.source else None)
    if not cases:
        sys.exit(f"no cases under {args.data}")
    corrections = load_corrections(args.data)
    for c in cases:
        fix = corrections.get((c["source"], str(c["id"])))
        c["corrected"] = fix["label"] if fix else c["label"]
    start = time.monotonic()
    results = grade_all(cases, args.jobs, args.sandbox)
    took = time.monotonic() - start
    by_source: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for c, r in zip(cases, results):
        by_source[c["source"]].append((c, r))
    if args.out:
        args.out.write_text("".join(json.dumps({"source": c["source"], "id": c["id"], "label": c["label"], **r}) + "\n"
                                    for c, r in zip(cases, results)))
    for key, title in (("label", "labels as published"), ("corrected", "labels corrected (see the list below)")):
        print(f"\n{title}\n{'source':<22}{'cases':>7}{'graded':>8}{'agree':>9}{'right recognised':>19}"
              f"{'false correct':>15}{'ungraded':>10}")
        totals = [(f"TOTAL {kind}", [(c, r) for c, r in zip(cases, results) if c.get("kind", "cases") == kind])
                  for kind in ("answers", "cases")]
        for name, rows in sorted(by_source.items()) + [t for t in totals if t[1]]:
            f = figures(rows, key)
            print(f"{name:<22}{f['n']:>7}{f['graded']:>8}{f['agreement']:>9.1%}{f['recognised']:>10.1%} of "
                  f"{f['right']:<5}{f['false_correct']:>8} of {f['wrong']:<5}{f['ungraded']:>8}")
        if key == "label" and not corrections:
            break
    print(f"({len(cases)} cases in {took:.0f} s, {'sandbox' if args.sandbox else 'in process'}; "
          f"verdicts {dict(Counter(r['verdict'] for r in results))})")
    fixed = [(c, corrections[(c["source"], str(c["id"]))]) for c in cases if (c["source"], str(c["id"])) in corrections]
    if fixed:
        print(f"\n== {len(fixed)} labels corrected")
        for c, fix in fixed:
            print(f"- {c['source']} {c['id']}: {c['label']} -> {fix['label']}: {fix['why']}")
    for name, rows in sorted(by_source.items()):
        bad = [(c, r) for c, r in rows if r["verdict"] != "ungraded"
               and (r["verdict"] == "correct") != (c["corrected"] == "correct")]
        if not bad or not args.show:
            continue
        print(f"\n== {name}: {len(bad)} disagreements (label -> verdict: reason)")
        for c, r in bad[:args.show]:
            tail = c["candidate"].strip().replace("\n", " ")[-160:]
            print(f"- {c['id']}  {c['corrected']} -> {r['verdict']}: {r['reason'][:200]}\n"
                  f"    reference: {(c.get('reference') or c.get('problem') or '')[:160]!r}\n    candidate: ...{tail!r}"
                  + (f"\n    compared: {r['compared'][0][:120]!r} with {r['compared'][1][:120]!r}"
                     if any(r["compared"]) else ""))


if __name__ == "__main__":
    main()
