"""`physlab runs show`: any run's outcome and usage per role, read the one way every reader reads a run
(:mod:`physlab.run.summary`); for a lab run its research state and last iterations too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.markup import escape

from physlab.errors import UserError
from physlab.lab.answer import standing_of
from physlab.lab.state.models import ResearchState
from physlab.lab.workspace import RunWorkspace
from physlab.run.files import STATE, is_run_dir
from physlab.run.git import ENDED
from physlab.run.math_text import markdown_to_text, math_to_text
from physlab.run.status import read_run
from physlab.run.summary import answer_files, read_calls, summarize, usage_by_role as run_usage_by_role


def open_run(run_dir: str | Path) -> tuple[RunWorkspace, ResearchState]:
    ws = RunWorkspace(run_dir)
    if not ws.root.is_dir():
        raise UserError("no such run directory", path=ws.root)
    try:
        state = ws.load()
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged state.json is bad input, not a crash
        raise UserError(f"state.json cannot be read ({type(exc).__name__})", path=ws.root / "state.json") from None
    if state is None:
        raise UserError("not a lab run directory (no state.json)", path=ws.root)
    return ws, state


def usage_by_role(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Calls, tokens and cost per role from calls.jsonl (a damaged line: one line naming the file)."""
    return {role: {"calls": u.calls, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                   "cost_usd": u.cost_usd, "cache_read_tokens": u.cache_read_tokens,
                   "cache_write_tokens": u.cache_write_tokens}
            for role, u in sorted(run_usage_by_role(read_calls(run_dir)).items())}


def plain_summary(root: Path) -> dict[str, Any] | None:
    """What any run shows, read the one way (its record, its status; a damaged record is one line
    naming the file), or None when ``root`` holds no PhysLab run at all."""
    if not is_run_dir(root):
        return None
    files = read_run(root, strict=True)
    s = summarize(root, files)
    record = files.record
    verdict = record.verdict if record is not None else None
    latex = (record.answer_latex if record is not None else None) or (
        verdict.details.get("candidate_latex") if verdict is not None else None)
    return {"run": str(root), "problem_id": s.problem or None, "strategy": s.strategy or None,
            "model": s.model or None, "status": s.status, "stop_reason": s.stop_reason,
            "verdict": s.verdict, "verdict_reason": s.verdict_reason, "wall_s": s.wall_s, "error": s.error,
            "usage_by_role": usage_by_role(root), **answer_files(root).model_dump(),
            # the answer's value as LaTeX, as the grader read it from the code's answer tree
            "answer_latex": latex if isinstance(latex, str) and latex else None}


def evidence_behind(s: ResearchState) -> list[str]:
    """The evidence the run's best answer rests on: its hypothesis's and those it builds on, in
    the order they were found."""
    if s.best_answer is None:
        return []
    whs, todo = set(), [s.best_answer.wh, *s.best_answer.rests_on]
    while todo:
        wid = todo.pop()
        w = s.wh(wid)
        if w is not None and wid not in whs:
            whs.add(wid)
            todo += w.depends_on
    ids = {e for wid in whs if (w := s.wh(wid)) is not None for e in w.evidence}
    return [ev.id for ev in s.evidence if ev.id in ids]


def evidence_chain(s: ResearchState) -> list[dict[str, Any]]:
    """The evidence the run's best answer rests on, whole: each worker's findings, derivation and
    checks, and every script it ran with what the script printed (`runs show`, issue 44: the QEC
    enumeration was only in state.json and the dashboard)."""
    behind = set(evidence_behind(s))
    chain = []
    for ev in s.evidence:
        if ev.id not in behind:
            continue
        scripts = [{"language": x.language, "code": x.code, "output": x.output} for x in ev.scripts]
        if not scripts and ev.code.strip():  # evidence recorded before scripts were kept one by one
            scripts = [{"language": "python", "code": ev.code, "output": ev.output}]
        chain.append({"id": ev.id, "target": ev.target, "role": ev.role, "confidence": ev.confidence,
                      "iteration": ev.iteration, "findings": ev.findings, "method": ev.method,
                      "derivation": ev.derivation, "checks": ev.checks, "scripts": scripts})
    return chain


def derivations(s: ResearchState) -> list[dict[str, Any]]:
    """Every researcher's derivation (Markdown with LaTeX, whole), marked when the answer rests on it."""
    behind = set(evidence_behind(s))
    return [{"id": ev.id, "target": ev.target, "role": ev.role, "confidence": ev.confidence,
             "iteration": ev.iteration, "findings": ev.findings, "method": ev.method, "checks": ev.checks,
             "derivation": ev.derivation, "behind_answer": ev.id in behind}
            for ev in s.evidence if ev.derivation.strip()]


def summary(run_dir: str | Path, last: int = 5) -> dict[str, Any]:
    """`runs show --json`: any run's outcome; for the lab's, its research state too."""
    root = Path(run_dir)
    if root.is_dir() and not (root / STATE).exists():
        plain = plain_summary(root)
        if plain is None:
            raise UserError("not a run directory (no state.json, metrics.json or calls.jsonl)", path=root)
        return plain
    ws, s = open_run(run_dir)
    outcome = plain_summary(ws.root) or {}
    return {
        **outcome, "stop_reason": outcome["stop_reason"] or s.stop_reason,
        "problem_id": s.problem_id, "iteration": s.iteration, "lab_status": s.status,
        "strategy_version": s.strategy_version,
        # "flagged" stays in the JSON (a contract) but is always false: what builds on a demoted
        # result is demoted with it, so an active result always has its dependencies established.
        "established_results": [{"id": e.id, "wh": e.wh, "claim": e.claim, "value": e.value, "flagged": False}
                                for e in s.active_ers()],
        "best_answer": ({**s.best_answer.model_dump(), "standing_text": standing_of(s, s.best_answer.source)}
                        if s.best_answer else None),
        "hypotheses": [{"id": w.id, "status": w.status, "claim": w.claim} for w in s.whs if w.status != "established"],
        "open_questions": [{"id": r.id, "question": r.question} for r in s.rqs if r.status == "open"],
        "critiques": [{"id": c.id, "target": c.target or c.target_type, "status": c.status} for c in s.critiques],
        "human_messages": [{"id": h.id, "kind": h.kind, "on": h.on, "routed_to": h.routed_to} for h in s.human_messages],
        "last_iterations": [subject for _, subject in ws.history() if not subject.startswith(ENDED)][:last],
        "derivations": derivations(s),
        "evidence_behind_answer": evidence_chain(s),
    }


def render(data: dict[str, Any]) -> None:
    from rich.console import Console

    con = Console(highlight=False)
    # Redirected (a file, a pager, grep), lines stay whole: code and formulas are not broken at 80
    # columns. On a terminal, the terminal's width.
    con.soft_wrap = not con.is_terminal
    if "iteration" not in data:  # not a lab run: its outcome and usage
        con.print(f"[bold]{data['problem_id']}[/] — {data['strategy']} with {data['model']}, status "
                  f"[bold]{data['status']}[/]" + _outcome(data))
        con.print(f"run: {data['run']}" + (f" ({data['wall_s']:.1f} s)" if data.get("wall_s") is not None else ""))
        if data.get("error"):
            con.print(f"error: {data['error']}", markup=False)
        _answer(con, data)
        _usage_table(con, data)
        return
    con.print(f"[bold]{data['problem_id']}[/] — iteration {data['iteration']}, status [bold]{data['status']}[/]"
              + _outcome(data))
    con.print(f"run: {data['run']}")
    con.print("\n[bold]Established results[/]")
    for e in data["established_results"]:  # whole: a result cut short could end mid-formula
        con.print(f"  {e['id']} ({e['wh']}): {text(e['claim'])}"
                  + (f"\n      value: {e['value']}" if e.get("value") else ""), markup=False)
    if not data["established_results"]:
        con.print("  (none)")
    if data.get("best_answer"):
        con.print(f"[bold]Best current answer[/] (iteration {data['best_answer']['iteration']}): "
                  f"{escape(text(data['best_answer']['standing_text']))}")
    if data["hypotheses"]:
        con.print("[bold]Working hypotheses[/]")
        for w in data["hypotheses"]:
            con.print(f"  {w['id']} ({w['status']}): {clip(text(w['claim']), 240)}", markup=False)
    if data["open_questions"]:
        con.print("[bold]Open questions[/]")
        for r in data["open_questions"]:
            con.print(f"  {r['id']}: {clip(text(r['question']), 240)}", markup=False)
    if data["critiques"]:
        con.print("[bold]Critiques[/]  " + ", ".join(f"{c['id']}→{c['target']} {c['status']}" for c in data["critiques"]))
    con.print("\n[bold]Last iterations[/]")
    for subject in data["last_iterations"]:
        con.print(f"  {clip(subject, 300)}", markup=False)
    _evidence(con, data.get("evidence_behind_answer") or [], data["derivations"])
    _answer(con, data)
    _usage_table(con, data)


_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)


def clip(text: str, limit: int) -> str:
    """``text`` shortened to about ``limit`` characters at a space outside any formula, marked
    with an ellipsis (a formula is kept whole or left out, never cut in the middle)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    inside = [(m.start(), m.end()) for m in _MATH.finditer(text)]
    cut = text.rfind(" ", 0, limit)
    while cut > 0 and any(a < cut < b for a, b in inside):
        cut = text.rfind(" ", 0, cut)
    return (text[:cut] if cut > 0 else text[:limit]).rstrip() + " …"


def _answer(con: Any, data: dict[str, Any]) -> None:
    """The final answer as the run wrote it (ANSWER.md; answer.py when ANSWER.md does not hold it)."""
    answer, code = data.get("answer"), data.get("answer_code")
    if answer is None and code is None:
        return
    if data.get("answer_is_draft"):
        title = "Draft answer[/] (the run ended without a final answer; not graded)"
    elif data.get("status") in ("running", "resuming", "paused", "interrupted"):
        title = "Best answer so far[/] (provisional: the run has not finished)"
    else:
        title = "Final answer[/]"
    con.print("\n[bold]" + title)
    if answer:
        con.print(text(answer.rstrip()), markup=False)
    if code and (not answer or code.strip() not in answer):
        con.print(f"\n{code.rstrip()}", markup=False)
    if data.get("answer_latex"):  # the LaTeX itself is in `--json` (answer_latex)
        con.print("\n[bold]The answer's value[/] (as the grader read it)")
        con.print(math_to_text(data["answer_latex"]), markup=False, soft_wrap=True)


def text(markdown: str) -> str:
    """Markdown as a terminal shows it: each formula written as text (``physlab.run.math_text``)."""
    return markdown_to_text(markdown)


def _evidence(con: Any, chain: list[dict[str, Any]], derivations: list[dict[str, Any]]) -> None:
    """The evidence the answer rests on, whole: findings, derivation, checks, and each script with
    what it printed. When it rests on none (no answer yet), the latest derivation. The other
    derivations are counted; they are whole in RESEARCH_STATE.md and `--json`."""
    if not chain:
        latest = derivations[-1:]
        for d in latest:
            con.print(f"\n[bold]Derivation {d['id']}[/] ({escape(d['role'])} on {escape(d['target'])}, "
                      f"{escape(d['confidence'])}, iteration {d['iteration']}; the latest)")
            _derivation(con, d)
        shown = len(latest)
    else:
        con.print("\n[bold]The evidence the answer rests on[/]")
        for ev in chain:
            con.print(f"\n[bold]Evidence {ev['id']}[/] ({escape(ev['role'])} on {escape(ev['target'])}, "
                      f"{escape(ev['confidence'])}, iteration {ev['iteration']})")
            if ev["findings"].strip():
                con.print(f"findings: {text(ev['findings'].strip())}", markup=False)
            if ev["method"].strip():
                con.print(f"method: {text(ev['method'].strip())}", markup=False)
            if ev["derivation"].strip():
                con.print("[bold]Derivation[/]")
            _derivation(con, ev)
            for n, script in enumerate(ev["scripts"], 1):
                con.print(f"[bold]Script {n} of {len(ev['scripts'])}[/] ({escape(script['language'])}), as it ran:")
                con.print(f"```{script['language']}\n{script['code'].rstrip()}\n```", markup=False)
                con.print("what it printed:", style="bold")
                con.print(script_output(script["output"]), markup=False)
        shown = sum(1 for d in derivations if d["id"] in {ev["id"] for ev in chain})
    if len(derivations) > shown:
        con.print(f"({len(derivations) - shown} more derivations in RESEARCH_STATE.md and `runs show --json`)")


def _derivation(con: Any, d: dict[str, Any]) -> None:
    if d["derivation"].strip():
        con.print(text(d["derivation"].strip()), markup=False)
    for check in d["checks"]:
        con.print(f"  check: {text(check)}", markup=False)


def script_output(raw: str) -> str:
    """A script's recorded output as it printed it, without the empty ``STDERR:`` header the
    tool return carries when the script wrote nothing there."""
    return re.sub(r"\n?STDERR:\n?\s*\Z", "", raw.rstrip()).rstrip() or "(nothing)"


def _outcome(data: dict[str, Any]) -> str:
    reason = data.get("verdict_reason")
    return ((f" ({escape(data['stop_reason'])})" if data["stop_reason"] else "")
            + (f", verdict [bold]{escape(data['verdict'])}[/]" if data["verdict"] else "")
            + (f": {escape(reason)}" if data["verdict"] and reason else ""))


def _usage_table(con: Any, data: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title="Usage per role")
    for col in ("role", "calls", "input tokens", "of which cached", "output tokens", "cost USD"):
        table.add_column(col, justify="left" if col == "role" else "right")
    for role, u in sorted(data["usage_by_role"].items()):
        cached = f"{u.get('cache_read_tokens', 0):,}" + (f" (+{u['cache_write_tokens']:,} written)"
                                                         if u.get("cache_write_tokens") else "")
        table.add_row(role, str(u["calls"]), f"{u['input_tokens']:,}", cached, f"{u['output_tokens']:,}",
                      f"{u['cost_usd']:.4f}")
    con.print(table)
