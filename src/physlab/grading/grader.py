"""The grader: candidate code runs only in the sandbox; the reference never shares a process with it.

Stage 1 (sandbox, candidate only): run the candidate, call ``answer(...)`` with the template's
parameters as SymPy symbols, return the answer as a safe JSON tree (``rt/tree.py``).
Stage 2 (a separate sandbox run, trusted code only): evaluate the reference, rebuild the answer
from the tree and compare (``rt/compare.py``), every step in a killable child with a timeout.

Both stages run the modules of ``physlab.grading.rt`` shipped as files into the sandbox.
Everything here is per call / per instance: a Grader is safe to use concurrently from asyncio
tasks or threads (no globals, no signals).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import time
import weakref
from pathlib import Path
from typing import Any

from physlab.errors import ProblemFileError, UserError
from physlab.grading import rt as _rt_pkg
from physlab.grading.extract import extract_written
from physlab.grading.jobs import candidate_job, grade_job, is_hipho, read_stage1, trusted_job, verdict_from
from physlab.grading.rt.stages import REFERENCE_MARK, RESULT_FILE, RESULT_MARK
from physlab.grading.template import TemplateSpec, template_spec
from physlab.grading.verdict import Verdict
from physlab.problems.model import Problem
from physlab.sandbox import Sandbox, SandboxLimits, default_sandbox

RT_PACKAGE = "physlab_grading_rt"
_MAIN = (
    "import os, sys\n"
    "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
    "sys.path.insert(0, os.getcwd())\n"
    f"from {RT_PACKAGE}.stages import main\n"
    "main()\n"
)
MAX_RESULT_BYTES = 20_000_000


@functools.lru_cache(maxsize=1)
def _runtime_files() -> dict[str, bytes]:
    # Package files do not change while the process runs: read them once, not per Grader.
    base = Path(_rt_pkg.__file__).parent
    return {f"{RT_PACKAGE}/{p.name}": p.read_bytes() for p in sorted(base.glob("*.py"))}


def trusted_run_sync(job: dict, *, sandbox: Sandbox | None = None, timeout_s: float = 120.0,
                     memory_mb: int = 2048) -> dict | None:
    """A stage-2 job on the sandbox's pool for trusted code, from synchronous code (``problems
    check`` evaluates references this way, as grading does): its result, or None when the run
    ended without one."""
    box = sandbox or default_sandbox()
    files = dict(_runtime_files())
    files["job.json"] = json.dumps(job).encode()
    limits = SandboxLimits(timeout_s=timeout_s, memory_mb=memory_mb, max_output_bytes=MAX_RESULT_BYTES)
    res = getattr(box, "trusted", box).run_sync(_MAIN, limits=limits, files=files)
    for line in reversed((res.stdout or "").splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                return json.loads(line[len(RESULT_MARK):])
            except ValueError:
                return None
    return None


class CandidateAnswer:
    """Stage-1 outcome: the answer tree, or why there is none. ``written``: for an answer written
    in LaTeX (no code), every box as the sandbox parsed it (``rt/latex.py``), which stage 2 picks from."""

    def __init__(self, tree: dict | None, reason: str = "", duration_s: float = 0.0, written: dict | None = None):
        self.tree, self.reason, self.duration_s, self.written = tree, reason, duration_s, written

    @property
    def ok(self) -> bool:
        return self.tree is not None


class Grader:
    """Grades candidates against a problem's reference; compares candidates with each other.

    ``timeout_s``: wall limit for running a candidate (stage 1). ``compare_timeout_s``: wall limit
    for the trusted comparison (stage 2). ``step_timeout_s``: limit for each symbolic/numeric step
    inside stage 2 (numeric and simplify get twice that). ``memory_mb``: per stage."""

    def __init__(self, sandbox: Sandbox | None = None, *, timeout_s: float = 30.0,
                 compare_timeout_s: float = 120.0, step_timeout_s: float = 5.0,
                 memory_mb: int = 2048, max_concurrency: int = 4) -> None:
        self.sandbox = sandbox or default_sandbox()
        # Stage 2 holds the reference: it runs on the sandbox's pool for trusted code, never on
        # workers that run candidates (a test double without one is used for both).
        self.trusted_sandbox = getattr(self.sandbox, "trusted", self.sandbox)
        self.timeout_s = timeout_s
        self.compare_timeout_s = compare_timeout_s
        self.step_timeout_s = step_timeout_s
        self.memory_mb = memory_mb
        self._files = _runtime_files()
        self._max_concurrency = max_concurrency
        self._sems: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # one per event loop
        self._cache: dict[str, CandidateAnswer] = {}  # stage-1 results by (code, template spec)
        self._verdicts: dict[str, Verdict] = {}  # stage-2 verdicts by (answer key, answer tree)

    # ------------------------------------------------------------------------ public API

    async def grade(self, problem: Problem, candidate: str) -> Verdict:
        """Verdict for ``candidate`` (Python source, or model text with fenced blocks / a written
        final answer). Raises UserError when the problem has no reference or its reference fails.

        Two answer paths, one comparison: code runs in the sandbox (stage 1) and its answer tree
        is compared in stage 2; a written answer (no code: ``\\boxed{}``, a "Final answer" line,
        display math; HiPhO items) is parsed in the sandbox by the physics-aware LaTeX reader and
        compared in stage 2 the same way, with units, labels and several parts."""
        start = time.monotonic()
        if problem.reference is None:
            raise ProblemFileError(f"problem '{problem.id}' has no reference answer: nothing to grade against",
                                   path=problem.path)
        if problem.reference_format == "prose":
            return prose_verdict(candidate, time.monotonic() - start)
        spec = template_spec(problem.answer_template)
        answer = await self.run_candidate(problem, candidate, spec=spec)
        if not answer.ok:
            path = "hipho" if is_hipho(problem) else "latex" if answer.written is not None else "code"
            return Verdict(verdict="invalid", reason=answer.reason,
                           details={"stage": "candidate", "path": path,
                                    "duration_s": round(time.monotonic() - start, 3)})
        job = grade_job(problem, spec, answer.tree, answer.written, step_timeout=self.step_timeout_s)
        key = hashlib.sha256(json.dumps([job, problem.rtol], sort_keys=True, default=str).encode()).hexdigest()
        if key in self._verdicts:  # same answer, same key: the comparison is deterministic
            return self._verdicts[key].model_copy(deep=True)
        out = await self._trusted(job)
        path = "hipho" if "hipho" in job else "latex" if answer.written is not None else "code"
        details: dict[str, Any] = {"stage": "compare", "path": path, "candidate_s": round(answer.duration_s, 3),
                                   "duration_s": round(time.monotonic() - start, 3)}
        if out is None:
            return Verdict(verdict="incorrect", details=details,
                           reason=f"could not be shown equivalent: the comparison did not finish in "
                                  f"{self.compare_timeout_s:g} s")
        if "error" in out:
            raise ProblemFileError(f"problem '{problem.id}': {out['error']}", path=problem.path,
                                   field=_reference_field(problem))
        verdict = verdict_from(out, job, details)
        if len(self._verdicts) > 2048:
            self._verdicts.clear()
        self._verdicts[key] = verdict
        return verdict.model_copy(deep=True)

    def grade_sync(self, problem: Problem, candidate: str) -> Verdict:
        """``grade`` from synchronous code (also works when an event loop is already running)."""
        return _run_sync(self.grade(problem, candidate))

    async def equivalent(self, problem: Problem, code_a: str, code_b: str) -> bool:
        """Reference-free: do two candidates give equivalent answers? (False if either has none.)"""
        classes = await self.equivalence_classes(problem, [code_a, code_b])
        return [0, 1] in classes

    async def equivalence_classes(self, problem: Problem, codes: list[str], *,
                                  n_points: int | None = None) -> list[list[int]]:
        """Group candidates by equivalent answers (reference-free), with the comparison that grades
        them. Candidates without a valid answer are left out of every class, and two answers the
        comparison cannot show equal (e.g. neither evaluates to a number) are never in one class.
        ``n_points``: how many test points the numeric comparison needs (default: the grader's).
        Classes are in order of their first member."""
        spec = template_spec(problem.answer_template)
        answers = await asyncio.gather(*(self.run_candidate(problem, c, spec=spec) for c in codes))
        valid = [i for i, a in enumerate(answers) if a.ok]
        if len(valid) <= 1:
            return [[i] for i in valid]
        job = trusted_job("classes", [answers[i].tree for i in valid], spec, problem, step_timeout=self.step_timeout_s)
        if n_points is not None:
            job["n_points"] = n_points
        out = await self._trusted(job)
        if out is None or "classes" not in out:  # could not compare: nothing is shown equivalent
            return [[i] for i in valid]
        return [[valid[j] for j in cls] for cls in out["classes"]]

    async def answer_latex(self, problem: Problem, candidate: str) -> str | None:
        """The value of ``candidate``'s code answer as LaTeX, without a reference: stage 1 reads its
        answer tree in the sandbox, the trusted stage rebuilds it from that tree (data, never the
        code) and writes it with ``sympy.latex``. None for a written answer (LaTeX already), or a
        candidate without a valid answer. A graded answer has it in its verdict (``candidate_latex``)."""
        spec = template_spec(problem.answer_template)
        answer = await self.run_candidate(problem, candidate, spec=spec)
        if not answer.ok or answer.written is not None or answer.tree is None:
            return None
        out = await self._trusted(trusted_job("latex", [answer.tree], spec, problem, step_timeout=self.step_timeout_s))
        latex = (out or {}).get("latex")
        return latex if isinstance(latex, str) and latex else None

    async def evaluate_at_points(self, problem: Problem, code: str, n_points: int = 5,
                                 seed: int = 0) -> list[complex | None] | None:
        """Numeric fingerprint: the candidate's answer at ``n_points`` random points of the
        template's parameters (the same points for every candidate of a problem and seed). A
        container answer gives, per point, the values of its scalar leaves in order. None when the
        candidate has no valid answer; a None entry is a point where it is not a finite number."""
        spec = template_spec(problem.answer_template)
        answer = await self.run_candidate(problem, code, spec=spec)
        if not answer.ok or answer.tree is None:
            return None
        job = trusted_job("points", [answer.tree], spec, problem, step_timeout=self.step_timeout_s)
        job.update(n_points=n_points, seed=seed, params_names=[d for _, d, _ in spec.params or []])
        out = await self._trusted(job)
        if out is None or "values" not in out:
            return [None] * n_points
        return [None if v is None else complex(v[0], v[1]) for v in out["values"][0]]

    # ------------------------------------------------------------------------- stages

    async def run_candidate(self, problem: Problem, candidate: str, *,
                            spec: TemplateSpec | None = None) -> CandidateAnswer:
        """Stage 1: run the candidate in the sandbox and read back its answer tree."""
        spec = spec or template_spec(problem.answer_template)
        job = candidate_job(problem, candidate, spec, step_timeout=self.step_timeout_s)
        if isinstance(job, str):
            return CandidateAnswer(None, job)
        code = job["code"]
        key = hashlib.sha256(json.dumps(job, sort_keys=True).encode()).hexdigest()
        if key in self._cache:
            return self._cache[key]
        limits = SandboxLimits(timeout_s=self.timeout_s, memory_mb=self.memory_mb, max_output_bytes=65_536,
                               max_return_file_bytes=MAX_RESULT_BYTES)
        start = time.monotonic()
        res = await self._run(_MAIN, limits, job, collect=[RESULT_FILE])
        took = time.monotonic() - start
        answer = self._read_candidate(res, took, written=code is None)
        if len(self._cache) > 512:
            self._cache.clear()
        self._cache[key] = answer
        return answer

    def _read_candidate(self, res, took: float, written: bool = False) -> CandidateAnswer:
        answer = self._read_result(res, took, written)
        if written and not answer.ok and answer.written is None:
            answer.written = {}
            answer.reason = answer.reason.replace("the candidate code", "reading the answer")
        return answer

    def _read_result(self, res, took: float, written: bool = False) -> CandidateAnswer:
        if res.timed_out:
            return CandidateAnswer(None, f"timed out: the candidate code ran longer than {self.timeout_s:g} s", took)
        data = res.files.get(RESULT_FILE)
        if data is None:
            tail = (res.stderr or "").strip().splitlines()[-1:] or [""]
            hint = " (memory limit?)" if res.exit_code is not None and res.exit_code < 0 else ""
            return CandidateAnswer(None, f"the candidate code ended without an answer (exit code "
                                         f"{res.exit_code}{hint}) {tail[0][:200]}".strip(), took)
        if len(data) > MAX_RESULT_BYTES:
            return CandidateAnswer(None, "the answer is too large", took)
        tree, parsed, reason = read_stage1(data, written_path=written)
        if tree is None:
            return CandidateAnswer(None, reason, took)
        return CandidateAnswer(tree, "", took, written=parsed)

    async def _trusted(self, job: dict) -> dict | None:
        """Stage 2: trusted comparison in its own sandbox run. None when it did not finish."""
        limits = SandboxLimits(timeout_s=self.compare_timeout_s, memory_mb=self.memory_mb,
                               max_output_bytes=4_000_000)
        res = await self._run(_MAIN, limits, job, sandbox=self.trusted_sandbox)
        lines = (res.stdout or "").splitlines()
        for line in reversed(lines):
            if line.startswith(RESULT_MARK):
                try:
                    return json.loads(line[len(RESULT_MARK):])
                except ValueError:
                    return None
        if res.timed_out:
            return None
        err = (res.stderr or "").strip().splitlines()[-1:] or [f"exit code {res.exit_code}"]
        if getattr(res, "error", "") and res.exit_code is None:
            raise RuntimeError(f"the sandbox failed while grading: {res.error}")
        if REFERENCE_MARK in lines:
            # the reference had been evaluated: what ended the comparison came with the answer
            kind = err[0].split(":", 1)[0] if ":" in err[0] else f"exit code {res.exit_code}"
            return {"verdict": "invalid", "method": "compare",
                    "reason": f"the answer could not be compared with the reference (the comparison "
                              f"ended without a verdict: {kind[:80]})"}
        return {"error": f"the grading process failed: {err[0][:300]}"}

    async def _run(self, code: str, limits: SandboxLimits, job: dict, collect: list[str] | None = None,
                   sandbox: Sandbox | None = None):
        files = dict(self._files)
        files["job.json"] = json.dumps(job).encode()
        for _ in range(3):
            res = await self._run_once(sandbox or self.sandbox, code, limits, files, collect)
            # a sandbox-side failure (worker lost, not the code's doing): try again on a fresh one
            if not (getattr(res, "error", "") and res.exit_code is None and not res.timed_out):
                break
        return res

    async def _run_once(self, sandbox: Sandbox, code: str, limits: SandboxLimits, files: dict,
                        collect: list[str] | None):
        if not self._max_concurrency:
            return await sandbox.run(code, limits=limits, files=files, collect=collect)
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            sem = self._sems[loop] = asyncio.Semaphore(self._max_concurrency)
        async with sem:
            return await sandbox.run(code, limits=limits, files=files, collect=collect)


UNGRADED_REASON = ("the reference answer is in words: no rule reads it, and no judge model was named "
                   "(--judge MODEL grades it)")


def prose_verdict(candidate: str, took: float = 0.0) -> Verdict:
    """The rules' verdict on an answer to a problem whose reference is prose: ``ungraded`` (not wrong),
    with the final answer a judge would see; ``invalid`` when there is no final answer at all."""
    written = extract_written(candidate)
    if written is None:
        return Verdict(verdict="invalid", reason="no written final answer (\\boxed{}, a 'Final answer:' line)",
                       details={"stage": "candidate", "path": "prose", "duration_s": round(took, 3)})
    return Verdict(verdict="ungraded", reason=UNGRADED_REASON,
                   details={"stage": "rules", "path": "prose", "method": "none", "duration_s": round(took, 3),
                            "candidate_normalized": final_answer_text(written)[:2000]})


def final_answer_text(written) -> str:
    """The final answer of a written reply as one text (its final group of boxes joined)."""
    return "; ".join(written.boxes[k] for k in written.final)


def _reference_field(problem: Problem) -> str:
    """The name the problem's file gives its reference answer (what a user must go and fix)."""
    return {"critpt": "answer_only_code"}.get(problem.extra.get("format"), "answer")


def _run_sync(coro):
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


# ---------------------------------------------------------------------- run-context adapters


class BoundGrader:
    """The grader bound to one problem (implements runs.context.BoundGrader): strategies
    get verdicts, never the reference."""

    def __init__(self, problem: Problem, grader: Grader) -> None:
        if problem.reference is None:
            raise UserError(f"problem '{problem.id}' has no reference answer: it cannot be graded")
        self._problem = problem
        self._grader = grader

    async def grade(self, candidate_code: str) -> Verdict:
        """The verdict a strategy (and through it a model) may see: ``public_verdict``. A grader
        failure is an invalid verdict here, not an exception whose message could quote the
        reference (the run's own grading, ``grade_full``, still raises it)."""
        try:
            verdict = await self._grader.grade(self._problem, candidate_code)
        except Exception as exc:  # noqa: BLE001 - its message may come from evaluating the reference
            return Verdict(verdict="invalid", reason=f"the grader could not grade this answer ({type(exc).__name__})",
                           details={"stage": "grader"})
        return public_verdict(verdict)

    async def grade_full(self, candidate_code: str) -> Verdict:
        """The verdict for the run's record (metrics.json): with what was compared."""
        return await self._grader.grade(self._problem, candidate_code)


# What a public verdict keeps of the details: where grading ended, how long it took, the points.
PUBLIC_DETAILS = ("stage", "path", "duration_s", "candidate_s", "points", "points_total")
PUBLIC_REASONS = {"correct": "equivalent to the reference answer",
                  "incorrect": "not equivalent to the reference answer",
                  "invalid": "the answer could not be compared with the reference",
                  "ungraded": "the answer was not graded (no rule reads the reference)"}


def public_verdict(verdict: Verdict) -> Verdict:
    """``verdict`` as a strategy may see it: nothing that is, or was derived from, the reference.

    A comparison's reason can give the reference back (its keys, its unit, a relative difference
    to a number), so a verdict from the comparison says only correct / incorrect / invalid; a
    verdict from stage 1 (the candidate's own code or text, which never meets the reference) keeps
    its reason ("syntax error in the candidate code ...")."""
    details = {k: verdict.details[k] for k in PUBLIC_DETAILS if k in verdict.details}
    stage1 = verdict.details.get("stage") == "candidate"
    return Verdict(verdict=verdict.verdict, reason=verdict.reason if stage1 else PUBLIC_REASONS[verdict.verdict],
                   details=details)


class Equivalence:
    """Reference-free comparison bound to one run's problem (implements runs.context.Equivalence):
    the one equivalence every clustering of a run uses. Keeps only the public view of the problem.

    It remembers, for the run, which class each answer it has seen belongs to: a new batch is
    compared only against one member of each class found so far (and among itself), so a vote
    over N=50 samples, or a best-so-far counted again after every round, costs one comparison
    run per batch, not one per pair."""

    def __init__(self, problem: Problem, grader: Grader | None = None) -> None:
        self.problem = problem.public()
        self._grader = grader or Grader()
        # per n_points: one member of each class found so far, and the class of every code seen
        self._known: dict[int | None, tuple[list[str], dict[str, int | None]]] = {}

    async def equivalent(self, code_a: str, code_b: str) -> bool:
        return [0, 1] in await self.equivalence_classes([code_a, code_b])

    async def answer_latex(self, code: str) -> str | None:
        """``code``'s answer as LaTeX, read the grader's way (:meth:`Grader.answer_latex`)."""
        return await self._grader.answer_latex(self.problem, code)

    async def equivalence_classes(self, codes: list[str], *, n_points: int | None = None) -> list[list[int]]:
        """Indices of ``codes`` grouped by equivalent answers, in order of their first member; a
        code without a valid answer is in no class."""
        members, class_of = self._known.setdefault(n_points, ([], {}))
        new = [c for c in dict.fromkeys(codes) if c not in class_of]
        if new:
            batch, n_known = members + new, len(members)
            for group in await self._grader.equivalence_classes(self.problem, batch, n_points=n_points):
                known = [i for i in group if i < n_known]
                cls = known[0] if known else len(members)
                if not known:
                    members.append(batch[group[0]])
                for i in group:
                    class_of.setdefault(batch[i], cls)
            for c in new:
                class_of.setdefault(c, None)
        grouped: dict[int, list[int]] = {}
        for i, c in enumerate(codes):
            if class_of[c] is not None:
                grouped.setdefault(class_of[c], []).append(i)
        return list(grouped.values())


def bind(problem: Problem, grader: Grader | None = None) -> BoundGrader:
    """The grader for a run of ``problem`` (its full view, with the reference)."""
    return BoundGrader(problem, grader or Grader())
