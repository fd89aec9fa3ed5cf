"""manager (AutoPhysicist) as its public code runs it: memory always visible, a scratchpad window of
5, helpers without tools whose one script runs in the sandbox (a failing one goes back to be fixed,
3 tries), a per-iteration budget of 64K tokens and 15 tool calls before the dispatch tool is
withdrawn, a hard stop at 1.5 times the tokens, 50 iterations, and no answer without a submission."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from sampling_ctx import filled, make_ctx

from physlab.errors import UserError
from physlab.llm.scripted import last_user_text, text, tool_call
from physlab.llm.usage import Budget
from physlab.strategies.manager import Manager, ManagerParams


def _tool_names(info):
    return {t.name for t in info.function_tools}


def _last_tool_return(messages):
    for msg in reversed(messages):
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if isinstance(part, ToolReturnPart):
                    return str(part.content)
    return ""


def test_defaults_are_the_public_codes():
    p = ManagerParams()
    assert (p.max_iterations, p.iteration_tokens, p.hard_stop_factor, p.tool_call_cap, p.max_rounds,
            p.scratchpad_window, p.code_timeout_s, p.code_attempts, p.wrap_up) == (50, 64_000, 1.5, 15, 30, 5, 60.0,
                                                                                   3, False)
    sources = {k: f.json_schema_extra["source"] for k, f in ManagerParams.model_fields.items()}
    assert "runner.py" in sources["max_iterations"] and "HARD_BUDGET_MULTIPLIER" in sources["hard_stop_factor"]
    assert "subagent.py" in sources["code_attempts"]


def test_the_system_prompt_carries_the_manager_rules():
    """The public prompt's rules, in our words: what survives an iteration, the tools, verification
    before memory, the manager as the weakest link, memory as the product, writing for an amnesiac
    successor, the promotion rule and the failure modes."""
    from physlab.strategies.sampling import render

    prompt = " ".join(render("manager_system", window="5").split())
    for phrase in ("only its last 5 entries", "no memory, no tools", "up to 3 attempts", "until something independent",
                   "weakest link", "what this research produces", "remembers nothing", "conjecture in the scratchpad",
                   "Circular checking", "12 significant digits", "the imports the template already has"):
        assert phrase in prompt, phrase
    assert len(prompt) > 6000  # the rules are spelled out, not summarised in a paragraph


def _research_scenario(log: dict):
    """Iteration 1 writes 7 scratchpad notes and a memory entry; iteration 2 dispatches a coding
    helper whose first script fails and whose corrected script runs; the manager then submits."""

    def factory():
        state = {"manager": 0, "sub": 0}

        def respond(role, messages, info):
            if role == "subagent":
                state["sub"] += 1
                log.setdefault("sub_tools", []).append(_tool_names(info))
                log.setdefault("sub_prompts", []).append(last_user_text(messages))
                if state["sub"] == 1:
                    return "I expand it.\n\n```python\nimport sympy as sp\nprint(sp.expand((1-p)**2))\n```"
                return ("Defined p this time.\n\n```python\nimport sympy as sp\np = sp.symbols('p')\n"
                        "print(sp.expand((1-p)**2))\n```")
            assert role == "manager"
            state["manager"] += 1
            n = state["manager"]
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
                return tool_call("write_to_permanent_memory", {"content": "VERIFIED: " + log["subagent_reply"]})
            return tool_call("submit_final_answer", {
                "answer_text": "F = (1-p)^2, verified by a helper's SymPy run.",
                "answer_code": filled("(1 - p)**2")})
        return respond
    return factory


async def test_scratchpad_window_memory_and_one_script_fixed_after_its_error(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _research_scenario(log))
    attempt = await Manager().run(ctx)
    assert attempt.status == "complete" and attempt.stop_reason == "submitted"
    assert "(1 - p)**2" in attempt.answer_code
    prompt2 = log["iteration2_prompt"]
    # only the last five scratchpad entries are shown, the memory in full, each tagged with its iteration
    assert "note-1" not in prompt2 and "note-2" not in prompt2
    assert all(f"note-{i}" in prompt2 for i in range(3, 8))
    assert "last 5 of 7 entries" in prompt2
    assert "iteration 1] PLAN: expand (1-p)^2" in prompt2
    # the helper has no tools; its first script failed in the sandbox (p undefined) and went back to it
    assert log["sub_tools"] == [set(), set()]
    assert "NameError" in log["sub_prompts"][1] and "attempt 1 of 3" in log["sub_prompts"][1]
    # the corrected script really ran (SymPy's output, not a scripted string)
    assert 'status="success"' in log["subagent_reply"] and "p**2 - 2*p + 1" in log["subagent_reply"]
    assert attempt.details["memory"][-1].startswith("VERIFIED")
    assert attempt.details["iterations"][1]["scratchpad_shown"] == [3, 4, 5, 6, 7]
    assert set(attempt.usage_by_role) == {"manager", "subagent"}


async def test_a_script_that_never_runs_is_reported_after_three_tries(tmp_path):
    log: dict = {}

    def factory():
        def respond(role, messages, info):
            if role == "subagent":
                log["sub"] = log.get("sub", 0) + 1
                return "```python\nraise SystemExit(3)\n```"
            if "dispatch_subagent" in _tool_names(info) and "report" not in log:
                log["report"] = ""
                return tool_call("dispatch_subagent", {"system_prompt": "coder", "user_message": "compute",
                                                       "execute_code": True})
            log["report"] = log["report"] or _last_tool_return(messages)
            return tool_call("submit_final_answer", {"answer_text": "none", "answer_code": filled("1")})
        return respond
    ctx = make_ctx(tmp_path, factory)
    await Manager().run(ctx)
    assert log["sub"] == 3
    assert 'status="failed_after_retries"' in log["report"]


def _wind_down_scenario(log: dict, helper_reply: str = "findings"):
    def factory():
        def respond(role, messages, info):
            if role == "subagent":
                return helper_reply
            log.setdefault("tools", []).append(_tool_names(info))
            log.setdefault("instructions", []).append(info.instructions or "")
            if "dispatch_subagent" in _tool_names(info):
                return tool_call("dispatch_subagent", {"system_prompt": "helper", "user_message": "work"})
            return text("wrapping up")
        return respond
    return factory


async def test_the_dispatch_tool_is_withdrawn_after_the_tool_call_cap(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _wind_down_scenario(log))
    attempt = await Manager.configured({"max_iterations": 1, "tool_call_cap": 3}).run(ctx)
    tools = log["tools"]
    assert all("dispatch_subagent" in t for t in tools[:3])
    assert "dispatch_subagent" not in tools[3] and {"write_to_permanent_memory", "write_to_scratchpad"} <= tools[3]
    assert "WIND-DOWN" in log["instructions"][3] and "3 of 3 tool calls" in log["instructions"][3]
    assert attempt.details["iterations"][0]["wound_down"] is True
    assert attempt.status == "no_answer"  # never submitted: no answer, as the public code


async def test_wind_down_at_the_token_budget_and_a_hard_stop_at_one_and_a_half_times_it(tmp_path):
    log: dict = {}
    ctx = make_ctx(tmp_path, _wind_down_scenario(log, "lengthy findings " * 400))  # ~800 tokens a reply
    attempt = await Manager.configured({"max_iterations": 1, "iteration_tokens": 1000,
                                        "hard_stop_factor": 100.0}).run(ctx)
    assert "dispatch_subagent" in log["tools"][0] and "dispatch_subagent" not in log["tools"][1]
    assert "tokens used" in log["instructions"][1]
    assert attempt.details["iterations"][0]["ended"] == "turn_ended"

    log2: dict = {}
    ctx = make_ctx(tmp_path / "hard", _wind_down_scenario(log2, "lengthy findings " * 400))
    attempt = await Manager.configured({"max_iterations": 1, "iteration_tokens": 1000,
                                        "tool_call_cap": 50}).run(ctx)
    # tokens pass 1.5x the budget within the first dispatch's round: the iteration is cut off
    assert attempt.details["iterations"][0]["ended"].startswith("iteration_limit")


def _budget_scenario():
    def factory():
        def respond(role, messages, info):
            if info.output_tools and not info.allow_text_output:  # forced wrap-up
                return tool_call("submit_final_answer", {
                    "answer_text": "best guess from memory", "answer_code": filled("1 - 2*p")})
            return tool_call("write_to_scratchpad", {"content": "thinking"})
        return respond
    return factory


async def test_a_budget_ends_the_run_without_an_answer_by_default(tmp_path):
    ctx = make_ctx(tmp_path, _budget_scenario(), budget=Budget(max_calls=3))
    attempt = await Manager().run(ctx)
    assert attempt.status == "no_answer" and attempt.stop_reason == "budget:max_calls"
    assert attempt.usage.calls == 3


async def test_wrap_up_switch_answers_from_room_kept_within_the_budget(tmp_path):
    ctx = make_ctx(tmp_path, _budget_scenario(), budget=Budget(max_calls=3))
    attempt = await Manager.configured({"wrap_up": True}).run(ctx)
    assert attempt.status == "partially_complete" and attempt.stop_reason == "budget:max_calls"
    assert "1 - 2*p" in attempt.answer_code
    assert attempt.usage.calls == 3  # two research requests, one kept for the wrap-up: none past the cap


def test_bad_param():
    with pytest.raises(UserError, match="--param hard_stop_factor: input should be greater than or equal to 1"):
        Manager.configured({"hard_stop_factor": 0.5})
