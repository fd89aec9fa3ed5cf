"""`physlab problems ...`: list suites and problems, show a problem, import benchmark data."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:  # the loaders and rich load with the command that uses them
    from rich.console import Console

    from physlab.problems.model import Problem

problems_app = typer.Typer(help="Problems and suites: list, show, check, import.", no_args_is_help=True)
import_app = typer.Typer(help="Validate benchmark data and store it as a named suite.", no_args_is_help=True)
problems_app.add_typer(import_app, name="import")


def _console() -> Console:
    from rich.console import Console

    # Wide enough for problem ids when stdout is not a terminal (pipes, CI logs).
    return Console(width=None if Console().is_terminal else 160)


def _row(p: Problem) -> dict:
    return {
        "id": p.id,
        "suite": p.suite,
        "source": p.source,
        "difficulty": p.difficulty,
        "format": p.extra.get("format"),
        "template": p.has_template,
        "reference": p.gradable,
        "images": len(p.images),
    }


@problems_app.command("list")
def list_cmd(
    suite: str | None = typer.Argument(None, help="Suite name or directory; omit to list the suites."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List the suites, or the problems in SUITE."""
    from rich.table import Table

    from physlab.problems.suites import list_suites, load_suite

    if suite is None:
        rows: list[dict[str, Any]] = []
        for info in list_suites():
            try:
                count: int | str = len(load_suite(info.name))
            except Exception as exc:  # noqa: BLE001 - a broken imported suite must not hide the others
                count = f"error: {exc}"
            rows.append({"name": info.name, "kind": info.kind, "problems": count, "path": str(info.path)})
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        table = Table(title="Suites")
        for col in ("name", "kind", "problems", "path"):
            table.add_column(col)
        for r in rows:
            table.add_row(r["name"], r["kind"], str(r["problems"]), r["path"])
        _console().print(table)
        return
    problems = load_suite(suite)
    rows = [_row(p) for p in problems]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{suite}: {len(rows)} problems")
    table.add_column("id", no_wrap=True, overflow="fold")
    table.add_column("source", overflow="fold")
    for col in ("difficulty", "template?", "reference?"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        table.add_row(r["id"], r["source"] or "", "" if r["difficulty"] is None else str(r["difficulty"]),
                      "yes" if r["template"] else "no", "yes" if r["reference"] else "no")
    _console().print(table)


@problems_app.command("show")
def show_cmd(
    problem: str = typer.Argument(..., help="FILE, FILE#ID, SUITE/ID or DIR/ID."),
    with_answer: bool = typer.Option(False, "--with-answer", help="Also print the reference answer and solution."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show a problem's statement and answer template (never the answer unless --with-answer)."""
    from physlab.problems.suites import resolve_problem

    full = resolve_problem(problem)
    shown = full if with_answer else full.public()
    if as_json:
        typer.echo(shown.model_dump_json(indent=2))
        return
    out = [f"# {full.qualified_id}", ""]
    meta = ", ".join(f"{k}: {v}" for k, v in (("source", full.source), ("difficulty", full.difficulty),
                                              ("format", full.extra.get("format"))) if v is not None)
    if meta:
        out += [meta, ""]
    out += ["## Statement", "", shown.statement, ""]
    if shown.options:  # graded by letter, by the option's content, or both
        out += ["## Options (multiple choice)", "", *[f"- ({k}) {v}" for k, v in shown.options.items()], ""]
    elif shown.choices:
        out += [f"Multiple choice: {', '.join(shown.choices)}", ""]
    if shown.images:
        out += ["## Figures", "", *[f"- {p}" for p in shown.images], ""]
    if shown.answer_template:
        out += ["## Answer template", "", "```python", shown.answer_template.rstrip(), "```", ""]
    elif full.gradable:
        out += ["(no template: answer in ANSWER.md; graded against the reference text)", ""]
    else:
        out += ["(open question: no template, no reference; answer in ANSWER.md)", ""]
    if with_answer:
        if full.reference is not None:
            out += [f"## Reference ({full.reference_format})", "", full.reference, ""]
            if full.rtol is not None:
                out += [f"rtol: {full.rtol}", ""]
        else:
            out += ["(no reference answer)", ""]
        if full.solution:
            out += ["## Solution", "", full.solution, ""]
        marking = full.extra.get("answer_key_marking")
        if marking:
            out += ["## Marking scheme", "", json.dumps(marking, indent=2, ensure_ascii=False), ""]
    typer.echo("\n".join(out))


@problems_app.command("check")
def check_cmd(
    target: str = typer.Argument(..., help="Suite name, directory, file, or SUITE/ID."),
) -> None:
    """Check every file: it loads (keys, template, a reference that fits the template) and its
    Python or numeric reference evaluates as the grader will evaluate it (in the sandbox, as
    grading does: a problem file's template is code). Exit 1 if any fails."""
    from physlab.grading.problems_check import check_target

    report = check_target(target)
    for line in report.lines:
        typer.echo(str(line))
    typer.echo(report.summary())
    if report.failed:
        raise typer.Exit(1)


def _import(kind: str, source: str, name: str | None, force: bool, split: str | None = None,
            revision: str | None = None) -> None:
    from physlab.problems.suites import import_suite

    suite, dest, problems = import_suite(kind, source, name=name, force=force, split=split, revision=revision)
    graded = sum(p.gradable for p in problems)
    typer.echo(f"imported {len(problems)} {kind} problems ({graded} with a reference) as suite '{suite}' -> {dest}")


_NAME = typer.Option(None, "--name", help="Suite name (default: the directory, file or dataset name).")
_FORCE = typer.Option(False, "--force", help="Replace an existing suite of that name.")
_SPLIT = typer.Option(None, "--split", help="Only this split of a Hugging Face dataset (default: all).")
_REVISION = typer.Option(None, "--revision", help="Branch, tag or commit of hf:OWNER/NAME (default: main).")
_HF = " a Hugging Face dataset directory, or hf:OWNER/NAME (downloaded; needs physlab[hf])"


@import_app.command("critpt")
def import_critpt(source: str = typer.Argument(..., help="Directory (or file) of CritPt challenge JSON," + _HF + "."),
                  name: str | None = _NAME, force: bool = _FORCE, split: str | None = _SPLIT,
                  revision: str | None = _REVISION) -> None:
    """Import CritPt challenges (CritPt's data/public_test_challenges, or hf:CritPt-Benchmark/CritPt)."""
    _import("critpt", source, name, force, split, revision)


@import_app.command("hipho")
def import_hipho(source: str = typer.Argument(..., help="A HiPhO JSON file (figures beside it)," + _HF + "."),
                 name: str | None = _NAME, force: bool = _FORCE, split: str | None = _SPLIT,
                 revision: str | None = _REVISION) -> None:
    """Import HiPhO exams with their figures (e.g. IPhO_2025.json, or hf:SciYu/HiPhO)."""
    _import("hipho", source, name, force, split, revision)


@import_app.command("tpbench")
def import_tpbench(source: str = typer.Argument(..., help="TPBench-style JSON/JSONL file or directory," + _HF + "."),
                   name: str | None = _NAME, force: bool = _FORCE, split: str | None = _SPLIT,
                   revision: str | None = _REVISION) -> None:
    """Import TPBench records (problem/answer/solution; or hf:ZhiqiGao/TPBench)."""
    _import("tpbench", source, name, force, split, revision)


@import_app.command("yaml")
def import_yaml(source: str = typer.Argument(..., help="Directory (or file) of YAML problems."),
                name: str | None = _NAME, force: bool = _FORCE) -> None:
    """Import a directory of YAML problems as a named suite."""
    _import("yaml", source, name, force)


def register(app: typer.Typer) -> None:
    app.add_typer(problems_app, name="problems")
