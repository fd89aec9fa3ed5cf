"""Run the public physics-intern code against PhysLab's OpenAI-compatible stand-in playing one
scripted scenario of the lab's differential test (tests/lab/test_differential.py), and record what
upstream did as data. By hand, never in CI; none of upstream's code or prompt text is here.

Check physics-intern out outside this repository, give it a venv of its own with its dependencies
(anthropic, openai, rich, pyyaml, sympy, numpy, scipy, matplotlib, python-dotenv), then, with
PhysLab's venv (this script serves the stand-in from physlab.llm.standin):

    UPSTREAM=/path/to/physics-intern UPSTREAM_PY=/path/to/its/venv/bin/python \
        python scripts/trace_upstream_lab.py tests/data/lab_differential/qec.yaml \
        tests/data/lab_differential/qec.upstream.json

Upstream runs through its own command line (`python -m physics_intern.main PROBLEM.yaml --model
Qwen/Qwen3.5-4B ...`: a model of its registry served by its `vllm` provider, whose base URL
`VLLM_BASE_URL` points at the stand-in); the stand-in plays the scenario's replies in upstream's
shapes (its tools' names and its roles' JSON keys) and records every request.

The trace holds: each role call in order (the role, upstream's mode of it, the iteration from
upstream's own per-call log file names, the section tags of its first request, the tools offered,
max_tokens, how many requests, whether a state summary was injected after a round), the research
state after each iteration (from RESEARCH_GRAPH.json at each of upstream's git commits), and the
final answer (ANSWER.md). No upstream code or prompt text is copied into the trace: the roles are
recognised by the first line of upstream's prompt files, read here at run time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

from physlab.llm.standin import StandinServer
from physlab.llm.standin.responders import Reply

UPSTREAM = Path(os.environ.get("UPSTREAM", "../physics-intern"))
UPSTREAM_PY = os.environ.get("UPSTREAM_PY", "python3")
MODEL = "Qwen/Qwen3.5-4B"          # a vllm-provider entry of upstream's models.yaml (tool_mode: api)
SCRIPTS = Path(__file__).resolve().parents[1] / "src" / "physlab" / "lab" / "scenarios" / "code"

PROMPTS = {  # (agent dir, prompt file) -> (role, mode)
    ("surveyor", "prompt.md"): ("surveyor", "survey"),
    ("planner", "prompt.md"): ("planner", "plan"),
    ("planner", "prompt_revise.md"): ("planner", "revise"),
    ("orchestrator", "prompt.md"): ("orchestrator", "turn"),
    ("researcher", "prompt.md"): ("researcher", "derive"),
    ("computer", "prompt.md"): ("computer", "compute"),
    ("reviewer", "prompt.md"): ("reviewer", "review"),
    ("critic", "prompt.md"): ("critic", "audit"),
    ("adjudicator", "prompt.md"): ("adjudicator", "rule"),
    ("formatter", "prompt.md"): ("formatter", "format"),
    ("formatter", "prompt_forced.md"): ("formatter", "forced"),
}


def role_markers() -> list[tuple[str, str, str]]:
    out = []
    for (agent, name), (role, mode) in PROMPTS.items():
        first = (UPSTREAM / "src/physics_intern/agents" / agent / name).read_text().splitlines()[0].strip()
        out.append((first, role, mode))
    return sorted(out, key=lambda x: -len(x[0]))     # the longer heading first ("FORMATTER (FORCED)")


def _content(msg: dict[str, Any]) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


TAG = re.compile(r"<([a-z][a-z0-9_-]*)(?:\s[^>]*)?>")
BANNER = re.compile(r"^>>> ([A-Z][A-Z -]*[A-Z])\b.*? <<<$", re.M)


def sections(text: str) -> list[str]:
    """Every XML-like section the text opens and closes, as its path of enclosing sections (at
    most two deep: ``research-state/conventions``), and every >>> BANNER <<< (not the END ones)."""
    events = []
    for m in re.finditer(r"<(/?)([a-z][a-z0-9_-]*)(?:\s[^>]*)?>", text):
        closing, name = m.group(1) == "/", m.group(2)
        end = text.find(f"</{name}>", m.end())
        if closing or (end >= 0 and text[m.end():end].strip()):     # a section with something in it
            events.append((closing, name))
    stack: list[str] = []
    names = []
    for closing, name in events:
        if closing:
            if name in stack:
                del stack[stack.index(name):]
            continue
        if len(stack) < 2:
            names.append("/".join([*stack, name]))
        stack.append(name)
    banners = [b.strip() for b in BANNER.findall(text) if not b.startswith("END ")]
    return list(dict.fromkeys(names + [f">>> {b}" for b in banners]))


class Player:
    """Plays the scenario's replies in physics-intern's shapes, each role's in turn, and records
    every request."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.replies = scenario["replies"]
        self.next: dict[str, int] = {}
        self.markers = role_markers()
        self.ids: dict[str, str] = {}        # scenario reference -> upstream id
        self.calls: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.lock = threading.Lock()
        self.pending_refs: list[str] = []

    # -------------------------------------------------------------- references
    def ref(self, r: str) -> str:
        m = re.fullmatch(r"ER\((WH#\d+)\)", r)
        if m:
            wh = self.ids[m.group(1)]
            return "ER-" + wh.split("-")[1]
        return self.ids.get(r, r)

    def learn(self, body: dict[str, Any]) -> None:
        """Ids upstream announced in tool results ("Added RQ-001 — ...")."""
        for msg in body.get("messages", []):
            if msg.get("role") == "tool":
                for kind, num in re.findall(r"\bAdded (RQ|WH)-(\d+)", _content(msg)):
                    got = f"{kind}-{num}"
                    for ref in list(self.pending_refs):
                        if ref.startswith(kind + "#") and got not in self.ids.values():
                            self.ids[ref] = got
                            self.pending_refs.remove(ref)
                            break

    # -------------------------------------------------------------- serving
    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            return self._answer(body)

    def _answer(self, body: dict[str, Any]) -> Reply:
        msgs = body.get("messages", [])
        system = "\n".join(_content(m) for m in msgs if m.get("role") == "system")
        role, mode = next(((r, m) for first, r, m in self.markers if system.lstrip().startswith(first)),
                          ("?", "?"))
        users = [m for m in msgs if m.get("role") == "user"]
        replies_so_far = sum(m.get("role") == "assistant" for m in msgs)
        fresh = replies_so_far == 0
        if fresh:
            k = self.next.get(role, 0)
            self.next[role] = k + 1
            queue = self.replies.get(role, [])
            if k >= len(queue):
                raise RuntimeError(f"the scenario has no reply {k + 1} for the {role}")
            self.current = {"role": role, "mode": mode, "reply": queue[k], "index": k,
                            "sections": sections(_content(users[0]) if users else ""),
                            "tools": sorted(t["function"]["name"] for t in body.get("tools") or []),
                            "max_tokens": body.get("max_tokens"), "requests": 0, "injected": 0, "refused": 0}
            self.calls.append(self.current)
        cur = self.current
        assert cur is not None
        cur["requests"] += 1
        for t in body.get("tools") or []:
            if t["function"]["name"] not in cur["tools"]:
                cur["tools"] = sorted([*cur["tools"], t["function"]["name"]])
        # a user message after tool results: upstream's state summary after a round of mutations
        if len(users) > 1 and msgs[-1].get("role") == "user" and any(m.get("role") == "tool" for m in msgs):
            cur["injected"] += 1
        cur["refused"] = sum(m.get("role") == "tool" and _content(m).startswith(("Error", "ERROR")) for m in msgs)
        self.learn(body)
        return getattr(self, "play_" + role)(cur["reply"], replies_so_far, body, mode)

    # -------------------------------------------------------------- the roles' shapes
    @staticmethod
    def fenced(obj: dict[str, Any], before: str = "") -> Reply:
        return Reply(content=(before + "\n\n" if before else "") + "```json\n" + json.dumps(obj, indent=2) + "\n```")

    def play_surveyor(self, r, turn, body, mode):
        return self.fenced({
            "background": r["background"], "key_insights": "\n".join(f"- {x}" for x in r["key_insights"]),
            "known_methods": "\n".join(f"- {x}" for x in r["known_methods"]),
            "known_pitfalls": "\n".join(f"- {x}" for x in r["known_pitfalls"]),
            "conventions_and_definitions": "\n".join(f"- {x}" for x in r["conventions"]),
            "expected_answer_structure": r["expected_answer_structure"],
            "problem_summary": r["background"].split(".")[0] + ".",
            "sanity_checks": r["sanity_checks"]})

    def play_planner(self, r, turn, body, mode):
        if mode == "plan":
            return Reply(content=r["strategy"])
        trigger = _content([m for m in body["messages"] if m.get("role") == "user"][0])
        crits = re.findall(r"Critique (CRIT-\d+)", trigger)
        return self.fenced({"revised_strategy": r["strategy"], "revision_rationale": r.get("rationale", ""),
                            "entity_actions": [],
                            "critique_assessments": [{"id": c, "verdict": r.get("critique_verdict", "accept"),
                                                      "reason": r.get("rationale", "")} for c in crits]})

    def play_orchestrator(self, r, turn, body, mode):
        rounds = r["rounds"]
        if turn >= len(rounds):
            raise RuntimeError(f"orchestrator call {self.current['index'] + 1} has no round {turn + 1}")
        calls = []
        for action in rounds[turn]:
            (kind, a), = action.items()
            if kind == "create_question":
                self.pending_refs.append(a["ref"])
                calls.append(("add_research_question", {"question": a["question"]}))
            elif kind == "dispatch":
                args = {"target_claim": self.ref(a["target"]), "description": a["instructions"]}
                if a.get("method_hints"):
                    args["method_hints"] = a["method_hints"]
                if a.get("relevant"):
                    args["relevant_results"] = [self.ref(x) for x in a["relevant"]]
                calls.append((f"dispatch_{a['worker']}", args))
            elif kind == "propose":
                rq = self.ref(a["from"])
                n = sum(k.startswith("WH#") for k in self.ids) + 1
                self.ids[f"WH#{n}"] = "WH-" + rq.split("-")[1]        # it inherits the question's number
                args = {"statement": a["claim"], "from_rq": rq}
                if a.get("depends_on"):
                    args["depends_on"] = [self.ref(x) for x in a["depends_on"]]
                calls.append(("add_hypothesis", args))
            elif kind == "complete":
                calls.append(("request_termination", {"reason": a.get("reason", ""),
                                                      "answer_ers": [self.ref(x) for x in a["answer"]]}))
            elif kind == "abandon":
                calls.append(("abandon_hypothesis", {"id": self.ref(a["target"]), "reason": a["reason"]}))
            else:
                raise RuntimeError(f"unknown orchestrator action {kind}")
        return Reply(tool_calls=calls)

    def play_researcher(self, r, turn, body, mode):
        return self.fenced({"result": r["findings"], "method": r.get("method", ""), "confidence": r["confidence"],
                            "summary": r.get("summary", "")}, before=r["derivation"])

    def play_computer(self, r, turn, body, mode):
        scripts = r["scripts"]
        if turn == 0:
            return Reply(tool_calls=[("document_approach", {"approach": r["approach"]})])
        if turn <= len(scripts):
            name = scripts[turn - 1]
            return Reply(tool_calls=[("execute_python", {"purpose": r["approach"], "filename": name,
                                                         "code": (SCRIPTS / name).read_text()})])
        first = _content([m for m in body["messages"] if m.get("role") == "user"][0])
        target = re.search(r"<target>\n((?:RQ|WH)-\d+):", first)
        return Reply(tool_calls=[("submit_result", {
            "target_id": target.group(1) if target else "", "description": r.get("summary", ""),
            "method": r.get("method", ""), "result": r["findings"], "confidence": r["confidence"], "notes": "",
            "evidence_scripts": []})])

    def play_reviewer(self, r, turn, body, mode):
        return self.fenced({"verdict": r["verdict"], "summary": r["summary"], "details": r["reasoning"],
                            "sanity_checks": [{"check": c["check"], "type": "constraint", "outcome": c["outcome"],
                                               "reasoning": c.get("note", "")} for c in r.get("checks", [])]})

    def play_critic(self, r, turn, body, mode):
        return self.fenced({"summary": r.get("assessment", ""), "critiques": [
            {"target_id": self.ref(c["target"]) if c.get("target") else "STRATEGY",
             "target_type": c["target_type"], "severity": c["severity"],
             "argument": c["text"] + (f" Test: {c['test']}" if c.get("test") else "")} for c in r["critiques"]]})

    def play_adjudicator(self, r, turn, body, mode):
        ruling = {"uphold": "valid", "dismiss": "invalid", "needs_evidence": "needs_evidence"}[r["decision"]]
        out = {"adjudication": ruling, "reasoning": r["reasoning"]}
        if ruling == "valid":
            out["revised_verdict"] = "REFUTED"
        if ruling == "invalid":
            out["counter_argument"] = r.get("argument", r["reasoning"])
        if ruling == "needs_evidence":
            out["investigation_scope"] = r.get("scope", "")
        return self.fenced(out)

    def play_formatter(self, r, turn, body, mode):
        return Reply(content="```python\n" + r["code"].strip() + "\n```\n\n" + r.get("markdown", ""))


# ------------------------------------------------------------------ the research state, canonical
def snapshot(graph: dict[str, Any]) -> dict[str, Any]:
    """Upstream's state as it stands: every RQ, hypothesis and critique by its id, with its status
    (a hypothesis: working/established/abandoned and its review verdict; its evidence ids)."""
    hyps = {}
    for hid, h in graph.get("hypotheses", {}).items():
        hyps[hid] = {"status": h["status"], "verdict": (h.get("review") or {}).get("verdict"),
                     "statement": h.get("statement", ""), "depends_on": h.get("depends_on", []),
                     "evidence": [e.get("id") for e in h.get("evidence", [])],
                     "refuted_evidence": [e.get("id") for e in h.get("evidence", []) if e.get("refuted")]}
    rqs = {rid: {"status": q["status"], "question": q.get("question", ""), "resolved_to": q.get("resolved_to", []),
                 "evidence": [e.get("id") for e in q.get("evidence", [])]}
           for rid, q in graph.get("research_questions", {}).items()}
    crits = {cid: {"status": c["status"], "resolution_type": c.get("resolution_type", ""),
                   "target_type": c.get("target_type", ""), "targets": c.get("targets", []),
                   "severity": c.get("severity", "")}
             for cid, c in graph.get("critiques", {}).items()}
    return {"iteration": graph.get("iteration", 0), "status": graph.get("status", ""), "research_questions": rqs,
            "hypotheses": hyps, "critiques": crits,
            "dead_ends": [f.get("related_entities", []) for f in graph.get("failed_approaches", [])],
            "sanity_checks": [c["id"] for c in graph.get("sanity_checks", [])],
            "strategy_set": bool(graph.get("strategy"))}


def history(ws: Path) -> list[dict[str, Any]]:
    """The state at the end of each iteration (its last commit; 0: after the surveyor and planner)."""
    log = subprocess.run(["git", "log", "--reverse", "--format=%H"], cwd=ws, capture_output=True, text=True,
                         check=True).stdout.split()
    by_iteration: dict[int, dict[str, Any]] = {}
    for sha in log:
        shown = subprocess.run(["git", "show", f"{sha}:RESEARCH_GRAPH.json"], cwd=ws, capture_output=True, text=True)
        if shown.returncode == 0:
            state = snapshot(json.loads(shown.stdout))
            by_iteration[state["iteration"]] = state
    return [by_iteration[i] for i in sorted(by_iteration)]


def call_log(ws: Path) -> list[tuple[int, int, str]]:
    """(iteration, sequence, agent) of every role call, from upstream's per-call log files."""
    out = []
    for f in (ws / "logs").glob("iter*_*_*.md"):
        m = re.fullmatch(r"iter(\d+)_(\d+)_(.+)\.md", f.name)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return sorted(out)


def main(scenario_path: str, out_path: str) -> None:
    from physlab.problems import resolve_problem

    scenario = yaml.safe_load(Path(scenario_path).read_text())
    spec = scenario["problem"]
    if isinstance(spec, str):
        p = resolve_problem(spec)
        problem = {"problem": p.statement, "answer_template": p.answer_template, "answer": p.reference}
    else:
        problem = {"problem": spec["statement"], "answer_template": spec["answer_template"],
                   "answer": spec["reference"]}
    player = Player(scenario)
    tmp = Path(tempfile.mkdtemp(prefix="upstream-trace-"))
    (tmp / f"{scenario['name']}.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))
    (tmp / "config.yaml").write_text(yaml.safe_dump({"api_retry_max": 1, "api_retry_initial_delay": 0.1,
                                                      "api_retry_max_delay": 0.1, "pipeline_retry_max": 0}))
    ws = tmp / "workspace"
    with StandinServer(player) as srv:
        env = dict(os.environ, VLLM_BASE_URL=srv.base_url, VLLM_API_KEY="not-needed", PYTHONPATH=str(UPSTREAM / "src"),
                   PYTHONUNBUFFERED="1", COLUMNS="200")
        cmd = [UPSTREAM_PY, "-m", "physics_intern.main", str(tmp / f"{scenario['name']}.yaml"), "--model", MODEL,
               "--max-iterations", str(scenario.get("max_iterations", 10)), "--workspace-dir", str(ws),
               "--config", str(tmp / "config.yaml")]
        run = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    (tmp / "upstream.stdout.txt").write_text(run.stdout)
    (tmp / "upstream.stderr.txt").write_text(run.stderr)
    if run.returncode != 0:
        sys.exit(f"upstream exited {run.returncode}; see {tmp}/upstream.stderr.txt\n{run.stderr[-3000:]}")
    logged = call_log(ws)
    calls = player.calls
    agent = {"deep_critic": "critic"}
    if [agent.get(a, a) for _, _, a in logged] != [c["role"] for c in calls]:
        sys.exit(f"the per-call logs and the requests disagree: {logged} vs {[c['role'] for c in calls]}")
    for c, (it, _, _) in zip(calls, logged):
        c["iteration"] = it
        c.pop("reply", None)
    answer = (ws / "ANSWER.md").read_text() if (ws / "ANSWER.md").exists() else None
    code = re.search(r"```python\n(.*?)```", answer or "", re.S)
    upstream_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=UPSTREAM, capture_output=True, text=True,
                                     check=True).stdout.strip()
    origin = os.environ.get("UPSTREAM_REPOSITORY", "https://github.com/jakobtfaber/physics-intern")
    trace = {
        "upstream": {"repository": origin, "commit": upstream_commit,
                     "package": "src/physics_intern", "run": " ".join(["physics_intern.main", f"{scenario['name']}.yaml",
                                                                     "--model", MODEL, "--max-iterations",
                                                                     str(scenario.get("max_iterations", 10))]),
                     "python": subprocess.run([UPSTREAM_PY, "--version"], capture_output=True, text=True).stdout.strip(),
                     "note": os.environ.get("UPSTREAM_NOTE", ""),
                     "model_server": "physlab.llm.standin.StandinServer (VLLM_BASE_URL), the replies played by "
                                     "scripts/trace_upstream_lab.py"},
        "scenario": scenario["name"],
        "calls": calls,
        "history": history(ws),
        "final": {"status": json.loads((ws / "RESEARCH_GRAPH.json").read_text()).get("status"),
                  "answer_code": code.group(1).strip() if code else None,
                  "best_guess": (ws / "BEST_GUESS.md").exists()},
    }
    Path(out_path).write_text(json.dumps(trace, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(calls)} calls, {len(trace['history'])} commits, status {trace['final']['status']}; workspace {ws}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
