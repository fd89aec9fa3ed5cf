"""manager (AutoPhysicist): memory always visible, scratchpad window of 5, subagents with sandboxed
code, wind-down that withdraws the dispatch tool, submit_final_answer."""

from __future__ import annotations

from pydantic_ai.messages import ModelRequest, ToolReturnPart
from sampling_ctx import filled, make_ctx

from physlab.llm.scripted import last_user_text, text, tool_call
from physlab.llm.usage import Budget
from physlab.strategies.manager import Manager


def _tool_names(info):
    return {t.name for t in info.function_tools}


def _last_tool_return(messages):
    for msg in reversed(messages):
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if isinstance(part, ToolReturnPart):
                    return str(part.content)
    return ""


def _research_scenario(log: dict):
    """Iteration 1 writes 7 scratchpad notes and a memory entry; iteration 2 dispatches a subagent
    that computes with real sandboxed code; the manager then submits."""

    def factory():
        state = {"manager": 0, "sub": 0}

        def respond(role, messages, info):
            if role == "subagent":
                state["sub"] += 1
                log.setdefault("sub_tools", []).append(_tool_names(info))
                if state["sub"] == 1:
                    return tool_call("run_python", {"code": "import sympy as sp\np=sp.symbols('p')\n"
                                                    "print(sp.expand((1-p)**2))"})
                return f"The computation printed: {_last_tool_return(messages).strip()}"
            assert role == "manager"
            state["manager"] += 1
            n = state["manager"]
            log.setdefault("manager_tools", []).append(_tool_names(info))
            if n <= 7:  # iteration 1: seven notes
                return tool_call("write_to_scratchpad", {"content": f"note-{n}"})
            if n == 8:
                return tool_call("write_to_permanent_memory", {"content": "PLAN: expand (1-p)^2"})
            if n == 9:
                return text("end of iteration 1")
            if n == 10:  # iteration 2 starts: record the prompt it was given
                log["iteration2_prompt"] = last_user_text(messages)
                return tool_call("dispatch_subagent", {
                    "system_prompt": "You are a careful calculator.",
                    "user_message": "Expand (1-p)^2 with SymPy.", "execute_code": True})
            if n == 11:
                log["subagent_reply"] = _last_tool_return(messages)
                return tool_call("write_to_permanent_memory",
                                 {"content": "VERIFIED: " + log["subagent_reply"]})
            return tool_call("submit_final_answer", {
                "answer_text": "F = (1-p)^2, verified by a subagent's SymPy run.",
                "answer_code": filled("(1 - p)**2")})
        return respond
    return factory


async def test_scratchpad_window_memory_and_sandboxed_subagent(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _research_scenario(log))
    attempt = await Manager().run(ctx)
    assert attempt.status == "complete" and attempt.stop_reason == "submitted"
    assert "(1 - p)**2" in attempt.answer_code
    prompt2 = log["iteration2_prompt"]
    # only the last five scratchpad entries are shown, the memory in full
    assert "note-1" not in prompt2 and "note-2" not in prompt2
    assert all(f"note-{i}" in prompt2 for i in range(3, 8))
    assert "last 5 of 7 entries" in prompt2
    assert "PLAN: expand (1-p)^2" in prompt2
    # the subagent really ran code in the sandbox (SymPy's output, not a scripted string)
    assert "p**2 - 2*p + 1" in log["subagent_reply"]
    assert log["sub_tools"][0] == {"run_python"}
    assert attempt.details["memory"][-1].startswith("VERIFIED")
    assert attempt.details["iterations"][1]["scratchpad_shown"] == [3, 4, 5, 6, 7]
    assert set(attempt.usage_by_role) == {"manager", "subagent"}


def _wind_down_scenario(log: dict):
    def factory():
        state = {"n": 0}

        def respond(role, messages, info):
            if role == "subagent":
                return "lengthy findings " * 400  # ~800 tokens: past the wind-down threshold
            state["n"] += 1
            log.setdefault("tools", []).append(_tool_names(info))
            log.setdefault("instructions", []).append(info.instructions or "")
            if "dispatch_subagent" in _tool_names(info):
                return tool_call("dispatch_subagent", {"system_prompt": "helper",
                                                       "user_message": "work"})
            return text("wrapping up")
        return respond
    return factory


async def test_wind_down_removes_dispatch_tool(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _wind_down_scenario(log))
    attempt = await Manager.configured({"max_iterations": 2, "iteration_tokens": 1000,
                                        "wind_down_fraction": 0.5}).run(ctx)
    tools = log["tools"]
    assert "dispatch_subagent" in tools[0]
    # after the subagent's long reply the iteration is past 50% of its tokens: dispatch is gone,
    # the other tools stay, and the wind-down note is in the instructions
    assert "dispatch_subagent" not in tools[1]
    assert {"write_to_permanent_memory", "write_to_scratchpad"} <= tools[1]
    assert "WIND-DOWN" in log["instructions"][1] and "WIND-DOWN" not in log["instructions"][0]
    assert attempt.details["iterations"][0]["wound_down"] is True
    # the last iteration is in wind-down from its first request
    assert "dispatch_subagent" not in tools[2]
    # no submission: the forced wrap-up offered only submit_final_answer and failed (text reply)
    assert attempt.status == "no_answer"


def _budget_scenario():
    def factory():
        def respond(role, messages, info):
            if info.output_tools and not info.allow_text_output:  # forced wrap-up
                return tool_call("submit_final_answer", {
                    "answer_text": "best guess from memory", "answer_code": filled("1 - 2*p")})
            return tool_call("write_to_scratchpad", {"content": "thinking"})
        return respond
    return factory


async def test_budget_ends_with_forced_best_answer(tmp_path):
    ctx = make_ctx(tmp_path, _budget_scenario(), budget=Budget(max_calls=3))
    attempt = await Manager().run(ctx)
    assert attempt.status == "partially_complete"
    assert attempt.stop_reason == "budget:max_calls"
    assert "1 - 2*p" in attempt.answer_code
    assert ctx.usage.graced_calls == 1
    assert attempt.usage.calls == 4


def test_bad_param():
    import pytest

    from physlab.errors import UserError

    with pytest.raises(UserError, match="--param wind_down_fraction: input should be less than or equal to 1"):
        Manager.configured({"wind_down_fraction": 1.5})
