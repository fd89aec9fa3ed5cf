"""The differential test's machinery: play a scenario of ``tests/data/lab_differential/`` through
PhysLab's lab, record what it did as physics-intern's traces record what upstream did, and put
both in one vocabulary to compare them.

A scenario is each role's replies in the order that role is called, in a neutral form (the ids as
references: ``RQ#k`` the k-th question created, ``WH#k`` the k-th hypothesis proposed,
``ER(WH#k)`` the established result of ``WH#k``). :class:`Player` turns them into PhysLab's tool
calls and outputs; the upstream traces were made by a harness turning the same replies into
physics-intern's tool calls and JSON (``scripts/trace_upstream_lab.py``).

The common vocabulary (``canonical``):
- a role call: its iteration, its role, the sections it was shown with something in them (named
  as PhysLab names them; upstream's tags and banners are mapped onto those names by ``UPSTREAM``),
  whether it was offered a tool that computes, its output-token limit, and whether a state summary
  followed a round of its tool calls;
- the research state at the end of each iteration: questions, hypotheses and critiques in the order
  they were made (ids differ between the two: upstream numbers questions and hypotheses with one
  counter and renames WH-n to ER-n on promotion), each with its status, and which hypotheses are
  dead ends;
- the final answer's code.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from physlab.lab.context import HEAD, ROLE_SECTIONS
from physlab.lab.scenarios import _parse as P
from physlab.problems import resolve_problem
from physlab.problems.model import Problem

DATA = Path(__file__).resolve().parents[1] / "data" / "lab_differential"
COMPUTES = {"execute_python", "execute"}


def scenario(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / f"{name}.yaml").read_text(encoding="utf-8"))


def upstream_trace(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.upstream.json").read_text(encoding="utf-8"))


def problem_of(sc: dict[str, Any]) -> Problem:
    spec = sc["problem"]
    if isinstance(spec, str):
        return resolve_problem(spec)
    return Problem(id=spec["id"], statement=spec["statement"], answer_template=spec["answer_template"],
                   reference=spec["reference"], reference_format="python")


def script(name: str) -> str:
    return resources.files("physlab.lab.scenarios").joinpath("code", name).read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------ the player
@dataclass
class Call:
    iteration: int
    role: str
    sections: list[str]
    computes: bool
    max_tokens: int | None
    requests: int = 1
    injected: int = 0


@dataclass
class Player:
    """Plays a scenario's replies for PhysLab's roles and records every call."""

    sc: dict[str, Any]
    iteration: Callable[[], int]
    calls: list[Call] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    next: dict[str, int] = field(default_factory=dict)
    current: dict[str, Any] = field(default_factory=dict)
    strict: bool = True      # False: a role asked more often than the scenario says plays a neutral reply

    FALLBACK = {"orchestrator": {"rounds": []}, "critic": {"critiques": [], "assessment": "Nothing new to audit."},
                "planner": {"strategy": "Keep the current strategy."}}

    def model(self, role: str) -> FunctionModel:
        return FunctionModel(lambda messages, info: self.respond(role, messages, info), model_name=f"scenario-{role}")

    # -------------------------------------------------------------------- references
    def learn(self, messages: list[ModelMessage]) -> None:
        for text in P.tool_returns(messages):
            for got, kind in re.findall(r"\b(?:Created|Proposed) ((RQ|WH)-\d+)", text):
                if got in self.ids.values():
                    continue
                ref = next((r for r in self.pending if r.startswith(kind + "#")), None)
                if ref is not None:
                    self.ids[ref] = got
                    self.pending.remove(ref)

    def ref(self, r: str, prompt: str) -> str:
        m = re.fullmatch(r"ER\((WH#\d+)\)", r)
        if m:
            wh = self.ids.get(m.group(1), m.group(1))
            found = re.findall(rf"\b(ER-\d+) \(from {re.escape(wh)}\b", prompt)
            return found[-1] if found else f"ER-of-{wh}"
        return self.ids.get(r, r)

    # -------------------------------------------------------------------- serving
    def respond(self, role: str, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = P.turn(messages)
        prompt = P.prompt(messages)
        if turn == 0:
            k = self.next.get(role, 0)
            self.next[role] = k + 1
            replies = self.sc["replies"].get(role, [])
            if k < len(replies):
                reply = replies[k]
            elif not self.strict and role in self.FALLBACK:
                reply = self.FALLBACK[role]
            else:
                raise RuntimeError(f"the scenario has no reply {k + 1} for the {role}")
            shown = shown_sections(role, P.instructions(messages), prompt)
            tools = {t.name for t in info.function_tools}
            limit = (info.model_settings or {}).get("max_tokens")
            self.current[role] = {"reply": reply, "call": Call(self.iteration(), role, shown, bool(tools & COMPUTES),
                                                                     limit)}
            self.calls.append(self.current[role]["call"])
        cur = self.current[role]
        call: Call = cur["call"]
        call.requests = turn + 1
        call.injected = injected(messages)
        self.learn(messages)
        return getattr(self, role)(cur["reply"], turn, messages, info, prompt)

    def surveyor(self, r, turn, messages, info, prompt):
        return _final(info, {k: r[k] for k in ("background", "key_insights", "known_methods", "known_pitfalls",
                                               "conventions", "sanity_checks", "expected_answer_structure")})

    def planner(self, r, turn, messages, info, prompt):
        crits = P.ids(P.block(prompt, "critiques-to-answer"), "CR")
        return _final(info, {"strategy": r["strategy"], "critique_responses": [
            {"critique_id": c, "verdict": r.get("critique_verdict", "accept"), "response": r.get("rationale", "")}
            for c in crits]})

    def orchestrator(self, r, turn, messages, info, prompt):
        out = info.output_tools[0].name
        rounds = r["rounds"]
        if turn >= len(rounds):
            return _tool(out, {"summary": "Turn ended."})
        calls, decision = [], None
        for action in rounds[turn]:
            (kind, a), = action.items()
            if kind == "create_question":
                self.pending.append(a["ref"])
                calls.append(("create_research_question", {"question": a["question"]}))
            elif kind == "propose":
                rq = self.ref(a["from"], prompt)
                evidence = re.findall(rf"on {re.escape(rq)} -> (EV-\d+)", P.block(prompt, "dispatch-history"))
                n = sum(k.startswith("WH#") for k in [*self.ids, *self.pending]) + 1
                self.pending.append(f"WH#{n}")
                args: dict[str, Any] = {"claim": a["claim"], "evidence_ids": evidence, "value": a.get("value", "")}
                if a.get("depends_on"):
                    args["depends_on"] = [self.ids.get(x.removeprefix("ER(").removesuffix(")"), x)
                                          for x in a["depends_on"]]
                calls.append(("propose_hypothesis", args))
            elif kind == "abandon":
                calls.append(("abandon_hypothesis", {"hypothesis_id": self.ref(a["target"], prompt),
                                                     "reason": a["reason"]}))
            elif kind == "dispatch":
                order: dict[str, Any] = {"worker": a["worker"], "target": self.ref(a["target"], prompt),
                                         "instructions": a["instructions"]}
                if a.get("method_hints"):
                    order["method_hints"] = "\n".join(a["method_hints"])
                if a.get("relevant"):
                    order["relevant_results"] = [self.ref(x, prompt) for x in a["relevant"]]
                decision = {"dispatches": [order], "summary": "dispatched"}
            elif kind == "complete":
                decision = {"complete": True, "answer_results": [self.ref(x, prompt) for x in a["answer"]],
                            "summary": a.get("reason", "")}
            else:
                raise RuntimeError(f"unknown orchestrator action {kind}")
        if decision is not None:
            return ModelResponse(parts=[ToolCallPart(n, x) for n, x in calls] + [ToolCallPart(out, decision)])
        return ModelResponse(parts=[ToolCallPart(n, x) for n, x in calls])

    def researcher(self, r, turn, messages, info, prompt):
        return ModelResponse(parts=[TextPart(r["derivation"]), ToolCallPart(info.output_tools[0].name, {
            "findings": r["findings"], "confidence": r["confidence"]})])

    def computer(self, r, turn, messages, info, prompt):
        scripts = r["scripts"]
        if turn == 0:
            return _tool("document_approach", {"approach": r["approach"]})
        if turn <= len(scripts):
            return _tool("execute_python", {"code": script(scripts[turn - 1])})
        return _final(info, {"findings": r["findings"], "method": r.get("method", ""), "confidence": r["confidence"]})

    def reviewer(self, r, turn, messages, info, prompt):
        return _final(info, {"verdict": r["verdict"], "reasoning": f"{r['summary']} {r['reasoning']}",
                             "checks": r.get("checks", [])})

    def critic(self, r, turn, messages, info, prompt):
        crits = [{"target_type": c["target_type"], "target": self.ref(c["target"], prompt) if c.get("target") else None,
                  "kind": c.get("kind", "other"), "severity": c["severity"], "text": c["text"],
                  "test": c.get("test", "")} for c in r["critiques"]]
        return _final(info, {"critiques": crits, "assessment": r.get("assessment", "")})

    def adjudicator(self, r, turn, messages, info, prompt):
        return _final(info, {"decision": r["decision"], "reasoning": r["reasoning"],
                             "investigation_scope": r.get("scope", ""), "check_not_applicable": r.get("argument", "")})

    def formatter(self, r, turn, messages, info, prompt):
        return _final(info, {"ready": True, "answer_code": r["code"], "answer_markdown": r.get("markdown", ""),
                             "sources": [{"part": "answer", "source": self.ref(s, prompt)} for s in r["sources"]]})


def _tool(name: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args)])


def _final(info: AgentInfo, value: dict[str, Any]) -> ModelResponse:
    return _tool(info.output_tools[0].name, value)


def injected(messages: list[ModelMessage]) -> int:
    """User messages the lab added after the first request of the call (a state summary after a
    round of tool calls), not counting pydantic-ai's retry prompts."""
    n = 0
    for m in messages[1:]:
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts):
            n += 1
    return n


def shown_sections(role: str, instructions: str, prompt: str) -> list[str]:
    """The sections of a PhysLab call that hold something (an empty one reads '(none)'): the
    problem's at the head of the instructions, the others in the prompt."""
    out = []
    for name in ROLE_SECTIONS[role]:
        m = re.search(rf"^<{re.escape(name)}>\n(.*?)\n</{re.escape(name)}>$", instructions if name in HEAD else prompt,
                      flags=re.S | re.M)
        body = m.group(1).strip() if m else ""
        if body and body != "(none)":
            out.append(name)
    return out


# ------------------------------------------------------------------------------------ the vocabulary
# Upstream's section tags and banners (paths as the harness records them, at most two deep) and the
# PhysLab section each is: None for a wrapper that holds other sections.
UPSTREAM: dict[str, str | None] = {
    "research-context": None, "research-state": None, "task": None,
    "problem-statement": "problem-statement", "answer-template": "answer-template",
    "problem-guidelines": "problem-guidelines",
    "research-state/conventions": "conventions", "research-state/strategy": "strategy",
    "current-strategy": "strategy", "research-state/sanity-checks": "sanity-checks",
    "research-state/suggested-sanity-checks": "sanity-checks", "current-sanity-checks": "sanity-checks",
    "research-state/established-results": "established-results", "established-results": "established-results",
    "research-state/hypotheses": "hypotheses", "research-state/research-questions": "research-questions",
    "research-state/dead-ends": "dead-ends", "research-state/research-notes": "research-notes",
    "research-state/tasks_dispatch_history": "dispatch-history",
    ">>> EVIDENCE RESULTS": "new-evidence", ">>> VERIFIED HYPOTHESES": "new-verification-results",
    ">>> VERIFICATION RESULTS": "new-verification-results", ">>> SYSTEM EVENTS": "system-events",
    ">>> AGENT FAILURES": "system-events", ">>> POST-INTEGRATION VIOLATIONS": "system-events",
    ">>> TERMINATION BLOCKED": "system-events", ">>> PENDING WORK": "completion-gates",
    "task/target": "target", "task/instructions": "instructions", "task/method-hints": "method-hints",
    "task/relevant-results": "relevant-results", "task/background": "task-background",
    "task/assumptions": "assumptions", "task/recommended-sanity-checks": "recommended-sanity-checks",
    "original-question": "question", "previous-critiques": "previous-critiques",
    "revision-trigger": "revision-trigger", "answer-structure": "answer-structure",
    "unverified-results": "best-hypotheses", "unresolved-items": "unresolved-items",
}
BY_ROLE = {  # tags whose meaning depends on the role
    ("reviewer", "claim"): "claim", ("reviewer", "evidence"): "supporting-evidence",
    ("reviewer", "instructions"): "turn",
    ("adjudicator", "claim"): "established-result", ("adjudicator", "claim/evidence"): "supporting-evidence",
    ("adjudicator", "challenge"): "critique",
}
PHYSLAB = {"demotions": "revision-trigger", "critiques-to-answer": "revision-trigger"}


def upstream_sections(role: str, paths: list[str]) -> set[str]:
    out: set[str] = set()
    for path in paths:
        bare = path.removeprefix("research-context/")
        if (role, bare) in BY_ROLE:
            out.add(BY_ROLE[(role, bare)])
        elif bare in UPSTREAM:
            if UPSTREAM[bare] is not None:
                out.add(UPSTREAM[bare])   # type: ignore[arg-type]
        elif path == "background-survey/background":
            out.add("background-survey")
        elif path == "background-survey/known-pitfalls" and "background-survey/background" not in paths:
            out.add("known-pitfalls")
        elif not path.startswith(("background-survey", "claim/", "evidence/", "previous-critiques/",
                                  "established-results/")):
            out.add("upstream:" + path)       # a tag this vocabulary does not know: it fails the comparison
    return out


def physlab_sections(names: list[str]) -> set[str]:
    return {PHYSLAB.get(n, n) for n in names}


def canonical_calls(calls: list[dict[str, Any]] | list[Call], *, upstream: bool) -> list[dict[str, Any]]:
    out = []
    for c in calls:
        d = c if isinstance(c, dict) else c.__dict__
        if upstream:
            sections = upstream_sections(d["role"], d["sections"])
            computes = bool(set(d["tools"]) & COMPUTES)
        else:
            sections, computes = physlab_sections(d["sections"]), d["computes"]
        out.append({"iteration": d["iteration"], "role": d["role"], "sections": sections, "computes": computes,
                    "max_tokens": d["max_tokens"], "summary_after_round": d["injected"] > 0})
    return out


# ------------------------------------------------------------------------------------ the state
def _num(id_: str) -> int:
    return int(id_.rsplit("-", 1)[1])


HYP_UPSTREAM = {None: "proposed", "VERIFIED": "verified", "REFUTED": "refuted", "INCONCLUSIVE": "inconclusive"}


def canonical_upstream_states(history: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Upstream's state per iteration, ids replaced by creation order: a question is Q1, Q2...; a
    hypothesis H1, H2... (WH-n and ER-n are one hypothesis: upstream renames on promotion); a
    critique C1, C2..."""
    order: dict[str, list[int]] = {"Q": [], "H": [], "C": []}

    def key(kind: str, id_: str) -> str:
        n = _num(id_)
        if n not in order[kind]:
            order[kind].append(n)
        return f"{kind}{order[kind].index(n) + 1}"

    out = {}
    for s in history:
        qs = {key("Q", i): {"open": "open", "resolved": "closed", "abandoned": "dropped"}[q["status"]]
              for i, q in sorted(s["research_questions"].items(), key=lambda x: _num(x[0]))}
        hs = {}
        for i, h in sorted(s["hypotheses"].items(), key=lambda x: _num(x[0])):
            status = h["status"] if h["status"] in ("established", "abandoned") else HYP_UPSTREAM[h["verdict"]]
            hs[key("H", i)] = {"status": status, "depends_on": sorted(key("H", d) for d in h["depends_on"])}
        cs = {}
        for i, c in sorted(s["critiques"].items(), key=lambda x: _num(x[0])):
            if c["status"] == "active":
                st = "open"
            elif c["target_type"] == "ER":
                st = {"accepted": "upheld", "dismissed": "dismissed", "needs_evidence_demotion": "needs_evidence",
                      "expired": "expired"}[c["resolution_type"]]
            else:
                st = {"accepted": "accepted", "declined": "declined", "dismissed": "rejected",
                      "expired": "expired"}[c["resolution_type"]]
            cs[key("C", i)] = st
        dead = sorted({key("H", e) for related in s["dead_ends"] for e in related if re.fullmatch(r"(WH|ER)-\d+", e)})
        out[s["iteration"]] = {"questions": qs, "hypotheses": hs, "critiques": cs, "dead_ends": dead,
                               "status": {"completed": "complete"}.get(s["status"], s["status"])}
    return out


def physlab_history(ws: Path) -> list[dict[str, Any]]:
    """PhysLab's state.json at the end of each iteration, from the run's git history."""
    shas = subprocess.run(["git", "log", "--reverse", "--format=%H"], cwd=ws, capture_output=True, text=True,
                          check=True).stdout.split()
    by_iteration: dict[int, dict[str, Any]] = {}
    for sha in shas:
        shown = subprocess.run(["git", "show", f"{sha}:state.json"], cwd=ws, capture_output=True, text=True)
        if shown.returncode == 0:
            st = json.loads(shown.stdout)
            by_iteration[st["iteration"]] = st
    return [by_iteration[i] for i in sorted(by_iteration)]


def canonical_physlab_states(history: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    out = {}
    for s in history:
        qs = {f"Q{_num(r['id'])}": {"open": "open", "answered": "closed", "dropped": "dropped"}[r["status"]]
              for r in s["rqs"]}
        hs = {f"H{_num(w['id'])}": {"status": w["status"], "depends_on": sorted(f"H{_num(d)}" for d in w["depends_on"])}
              for w in s["whs"]}
        cs = {f"C{_num(c['id'])}": c["status"] for c in s["critiques"]}
        dead = sorted({f"H{_num(r)}" for d in s["dead_ends"] for r in d["related"] if r.startswith("WH-")})
        status = s["status"] if s["status"] != "running" else "in_progress"
        out[s["iteration"]] = {"questions": qs, "hypotheses": hs, "critiques": cs, "dead_ends": dead, "status": status}
    return out


def normalised_code(code: str | None) -> str:
    return "\n".join(line.rstrip() for line in (code or "").strip().splitlines() if line.strip())
