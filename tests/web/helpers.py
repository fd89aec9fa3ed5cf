"""Build lab run directories with the lab's own state transitions and workspace (git) functions."""

from __future__ import annotations

import json
from pathlib import Path

from physlab.lab.state import transitions as T
from physlab.lab.state.models import ResearchState
from physlab.lab.workspace import RunWorkspace
from physlab.llm.usage import CallRecord

CHROMIUM = "/usr/bin/chromium"  # Debian's; the browser tests drive it through Playwright
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"  # their screenshots (git ignores them)
XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def call_line(role: str, prompt: str, reply: str, tin: int = 100, tout: int = 20, cached: int = 0) -> str:
    rec = CallRecord(role=role, model="scripted:test", input_tokens=tin, output_tokens=tout, cost_usd=0.001,
                     cache_read_tokens=cached,
                     latency_s=0.1, finish_reason="stop",
                     request={"messages": [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": prompt}]}]},
                     response={"kind": "response", "parts": [{"part_kind": "text", "content": reply}]})
    return rec.model_dump_json() + "\n"


def build_lab_run(ws: Path, *, demote: bool = True, derivation: str = "") -> ResearchState:
    """Iteration 0 (strategy), 1 (RQ + evidence, with ``derivation``), 2 (WH verified -> ER,
    critique, demotion)."""
    w = RunWorkspace(ws)
    w.init("# Problem\n\nFind $F(p)$ for the [[4,2,2]] code.\n")
    s = ResearchState(problem_id="demo_problem")
    s, _ = T.set_strategy(s, "Enumerate faults; check $F(0)=1$.", add_checks=["F(0) = 1"])
    w.commit(s, "iteration 0: survey and plan")
    s = T.begin_iteration(s)
    s, rq = T.create_rq(s, r"What is $F(p)$ to order $p^2$? " + XSS)
    s, ev = T.add_evidence(s, target=rq, role="computer", findings="Enumeration gives $1 - 3p^2$. " + XSS,
                           derivation=derivation, confidence="exact", code="print(1)", output="1")
    w.commit(s, "iteration 1: computer on RQ-1 -> EV-1")
    s = T.begin_iteration(s)
    s, wh = T.propose_wh(s, claim=r"The fidelity is $\frac{1}{2}(1+x)$ " + XSS, value=r"1 - 3 p^{2}", evidence=[ev])
    s, _ = T.record_review(s, wh, "VERIFIED", "checked at p=0 " + XSS)
    if demote:
        er = s.wh(wh).er
        s, cr = T.file_critique(s, target_type="ER", target=er, text="wrong sign? " + XSS, kind="coherence")
        s = T.rule_on_critique(s, cr, True, "upheld: sign error " + XSS)
    w.commit(s, "iteration 2: WH-1 VERIFIED -> ER-1")
    with (ws / "calls.jsonl").open("w") as f:
        f.write(call_line("orchestrator", "plan the work " + XSS, "dispatch computer " + XSS))
        f.write(call_line("computer", "enumerate", "done", 300, 50, cached=200))
        f.write('{"torn line')
    return s


def write_metrics(ws: Path, **extra) -> None:
    data = {"problem_id": "demo_problem", "strategy": "oneshot", "model": "scripted:x", "status": "complete",
            "verdict": {"verdict": "correct", "reason": "equal"}, "input_tokens": 10, "output_tokens": 5,
            "cost_usd": 0.5, **extra}
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "metrics.json").write_text(json.dumps(data))


def build_results_db(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """A small sweep through the bench store API: 2 strategies x 2 models x 3 problems, two suites.
    Returns (graded, correct) per (strategy, model) computed here, independently of the report."""
    from physlab.bench.store import CellResult, CellSpec, ResultsStore, worker_id
    from physlab.llm.usage import Usage

    st = ResultsStore(path)
    w = worker_id()
    truth: dict[tuple[str, str], tuple[int, int]] = {}
    for s in ("oneshot", "lab<b>"):
        for m in ("scripted:a", "scripted:b"):
            for i in range(3):
                ok = (i + len(s) + len(m)) % 2 == 0 or (s == "oneshot" and m == "scripted:a")
                spec = CellSpec(problem_id=f"p{i}", strategy=s, model=m, repeat=0, suite="s1" if i < 2 else "s2",
                                gradable=True)
                st.add_cells([spec])
                assert st.claim(spec.key, w)
                roles = {"solver": Usage(calls=1, input_tokens=100 * (i + 1), output_tokens=10, cost_usd=0.01)}
                st.finish(spec.key, w, CellResult(status="complete", verdict="correct" if ok else "incorrect",
                                                  usage_by_role=roles, wall_s=1.0))
                g, c = truth.get((s, m), (0, 0))
                truth[(s, m)] = (g + 1, c + ok)
    st.close()
    return truth
