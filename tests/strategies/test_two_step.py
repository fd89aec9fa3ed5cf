"""two-step: derive from the problem alone, then fill the template with the derivation in context."""

from __future__ import annotations

from pydantic_ai.messages import ModelResponse, TextPart
from sampling_ctx import filled, make_ctx, make_problem

from physlab.llm.scripted import last_user_text
from physlab.llm.usage import Budget
from physlab.strategies.two_step import TwoStep


def _scenario(seen: dict):
    def factory():
        def respond(role, messages, info):
            seen.setdefault(role, []).append(messages)
            if role == "solver":
                return "Both gates must survive.\n\nFinal Answer: F = (1-p)^2"
            assert role == "formatter"
            return f"```python\n{filled('(1 - p)**2')}```"
        return respond
    return factory


async def test_two_calls_derive_then_populate(tmp_path):
    seen: dict = {}
    ctx = make_ctx(tmp_path, _scenario(seen))
    attempt = await TwoStep().run(ctx)
    assert attempt.status == "complete"
    assert "F = (1 - p)**2" in attempt.answer_code
    assert "Final Answer" in attempt.answer_text
    # call 1 sees the problem but not the template; call 2 has the first reply in its context
    derive_prompt = last_user_text(seen["solver"][0])
    assert "neither fails" in derive_prompt and "def answer" not in derive_prompt
    populate_history = seen["formatter"][0]
    assert any(isinstance(p, TextPart) and "Final Answer: F = (1-p)^2" in p.content
               for m in populate_history if isinstance(m, ModelResponse) for p in m.parts)
    assert "def answer(p)" in last_user_text(populate_history)
    assert set(attempt.usage_by_role) == {"solver", "formatter"}
    assert attempt.usage.calls == 2
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert len(lines) == 2


async def test_budget_after_derivation_keeps_the_derivation(tmp_path):
    ctx = make_ctx(tmp_path, _scenario({}), budget=Budget(max_calls=1))
    attempt = await TwoStep().run(ctx)
    assert attempt.status == "partially_complete"
    assert attempt.stop_reason == "budget:max_calls"
    assert "Final Answer" in attempt.answer_text


async def test_open_question_needs_one_call(tmp_path):
    ctx = make_ctx(tmp_path, _scenario({}), problem=make_problem(template=False))
    attempt = await TwoStep().run(ctx)
    assert attempt.status == "complete" and attempt.answer_code is None
    assert attempt.usage.calls == 1


async def test_unknown_param_is_a_user_error(tmp_path):
    import pytest

    from physlab.errors import UserError

    ctx = make_ctx(tmp_path, _scenario({}))
    with pytest.raises(UserError, match="unknown --param 'roundz'"):
        await TwoStep.configured({"roundz": 3}).run(ctx)
