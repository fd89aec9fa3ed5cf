"""``physlab problems check``: every file of a suite loaded on its own, every reference evaluated
the grader's way, one line per problem (or per file that does not load) and a summary.

Loading a suite stops at its first bad file (a sweep must not run half a suite); checking one must
not: a physicist fixing a directory of problems wants every mistake in one pass. References are
evaluated in the sandbox, all of a check's in one run (``refcheck.evaluate_references``): a problem
file's template is code, and a downloaded dataset's is anybody's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from physlab.errors import UserError
from physlab.problems.files import load_file, suite_files
from physlab.problems.model import Problem
from physlab.problems.suites import load_suite, resolve_problem, suite_directory


@dataclass(frozen=True)
class CheckLine:
    name: str
    ok: bool
    detail: str
    loaded: bool = True
    """False for a file that does not load (or clashes with another file's ids)."""

    def __str__(self) -> str:
        return f"{self.name}: {self.detail if self.ok else 'FAIL: ' + self.detail}"


@dataclass
class CheckReport:
    lines: list[CheckLine] = field(default_factory=list)
    files: int = 0

    @property
    def problems(self) -> list[CheckLine]:
        return [line for line in self.lines if line.loaded]

    @property
    def failed(self) -> bool:
        return not all(line.ok for line in self.lines)

    def summary(self) -> str:
        def count(n: int, word: str) -> str:
            return f"{n} {word}{'s' * (n != 1)}"

        ok = sum(line.ok for line in self.problems)
        broken = len(self.problems) - ok
        unloadable = len(self.lines) - len(self.problems)
        head = f"{count(self.files, 'file')}, " if self.files else ""
        parts = [f"{ok} ok"]
        if broken:
            parts.append(f"{broken} with a broken reference")
        if unloadable:
            parts.append(f"{unloadable} {'file that does' if unloadable == 1 else 'files that do'} not load")
        return f"{head}{count(len(self.problems), 'problem')}: {', '.join(parts)}"


def check_problem(problem: Problem) -> CheckLine:
    """Evaluate a Python or numeric reference the grader's way (in the sandbox)."""
    return check_problems([problem])[0]


def check_problems(problems: list[Problem]) -> list[CheckLine]:
    """One line per problem; every Python or numeric reference evaluated in one sandbox run."""
    from physlab.grading.refcheck import evaluate_references

    evaluable = [p for p in problems if p.reference is not None and p.reference_format in ("python", "number")]
    results = dict(zip(map(id, evaluable), evaluate_references(evaluable))) if evaluable else {}
    lines = []
    for p in problems:
        fmt = p.reference_format
        if id(p) not in results:
            lines.append(CheckLine(p.qualified_id, True, f"ok ({fmt or 'no reference'})"))
            continue
        result = results[id(p)]
        issues = [str(result)] if isinstance(result, ValueError) else result.issues
        lines.append(CheckLine(p.qualified_id, not issues, f"ok ({fmt})" if not issues else "; ".join(issues)))
    return lines


def _without_path(exc: UserError) -> str:
    text = str(exc)
    return text[len(exc.path) + 2:] if exc.path and text.startswith(f"{exc.path}: ") else text


def check_directory(directory: Path, suite: str) -> CheckReport:
    report = CheckReport()
    seen: dict[str, Path] = {}
    slots: list[tuple[int, Problem]] = []  # (line index, problem): checked together at the end
    for f in suite_files(directory):
        report.files += 1
        label = f"{suite}/{f.relative_to(directory)}"
        try:
            problems = load_file(f)
        except UserError as exc:
            report.lines.append(CheckLine(label, False, _without_path(exc), loaded=False))
            continue
        clash = next((p.id for p in problems if p.id in seen), None)
        if clash is not None:
            report.lines.append(CheckLine(label, False, f"duplicate problem id '{clash}' (also in "
                                          f"{seen[clash].relative_to(directory)}); ids must be unique in a suite",
                                          loaded=False))
            continue
        for p in problems:
            seen[p.id] = f
            slots.append((len(report.lines), p.model_copy(update={"suite": suite})))
            report.lines.append(CheckLine(p.id, True, "", loaded=True))  # filled in below
    for (i, _), line in zip(slots, check_problems([p for _, p in slots])):
        report.lines[i] = line
    return report


def check_target(target: str) -> CheckReport:
    """A suite name, a directory, a file, or one problem (``SUITE/ID``, ``FILE#ID``, ``DIR/ID``)."""
    path = Path(target).expanduser()
    directory = suite_directory(target)
    if directory is not None:
        return check_directory(directory, target)
    if path.is_dir():
        return check_directory(path, path.resolve().name)
    if path.is_file():
        report = CheckReport(files=1)
        try:
            problems = load_file(path)
        except UserError as exc:
            report.lines.append(CheckLine(str(path), False, _without_path(exc), loaded=False))
            return report
        report.lines.extend(check_problems(problems))
        return report
    if "#" in target or "/" in target:
        return CheckReport(check_problems([resolve_problem(target)]))
    # none of those: load_suite says so, naming the suites it is close to
    return CheckReport(check_problems(load_suite(target)))
