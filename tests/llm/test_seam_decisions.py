"""What the seam's layers decide about a try's outcome, as the typed values they act on: a refused
cap or context, a reply cut by ``length``, a failure worth waiting for. (The behaviour through a
server is in test_real_server_habits.py and test_openai_standin.py.)"""

from __future__ import annotations

import random

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.usage import RequestUsage

from physlab.llm import failures as F
from physlab.llm.defaults import ModelDefaults, RetryPolicy
from physlab.llm.errors import BudgetExceeded, ModelFailure
from physlab.llm.seam.attempts import Attempt
from physlab.llm.seam.decisions import AskRest, GiveUp, Keep, LowerCap, RaiseCap, SendAgain, Shorten
from physlab.llm.seam.limits import Answered, ModelLimits, decide_cut, decide_refusal
from physlab.llm.seam.role import SeamRole
from physlab.llm.seam.waits import decide_retry
from physlab.llm.server_limits import LimitRefusal

WHO = SeamRole(role="solver", spec="openai:qwen3-32b", endpoint="http://127.0.0.1:4000/v1")
TEXT = ModelRequestParameters(allow_text_output=True)


def _cut(text: str, out_tokens: int, cap: int | None, *, budget_capped=False, window_capped=False,
         parts=None) -> Answered:
    resp = ModelResponse(parts=parts or [TextPart(text)], finish_reason="length",
                         usage=RequestUsage(input_tokens=100, output_tokens=out_tokens))
    return Answered(resp, Attempt(retries=0, max_tokens=cap, budget_capped=budget_capped), window_capped)


def test_a_refused_cap_is_lowered_to_what_the_server_allows_and_remembered():
    d = decide_refusal(LimitRefusal("cap", max_output=1200), cap=1600, min_reply=256)
    assert d == LowerCap(1200, "max_tokens=1600 refused; the model allows at most 1200", max_output=1200)
    assert decide_refusal(LimitRefusal("cap", max_output=2000), cap=1600, min_reply=256) == GiveUp()


def test_a_context_refusal_shrinks_the_cap_while_a_useful_reply_fits_and_then_asks_for_a_shorter_prompt():
    room = decide_refusal(LimitRefusal("context", window=600, prompt_tokens=300), cap=1000, min_reply=50)
    assert isinstance(room, LowerCap) and room.cap == 300
    none = decide_refusal(LimitRefusal("context", window=600, prompt_tokens=590), cap=1000, min_reply=50)
    assert isinstance(none, Shorten) and (none.window, none.prompt_tokens) == (600, 590)


def test_a_cut_reply_is_re_asked_higher_then_continued_then_kept():
    d = ModelDefaults(truncation_retries=1, continuations=1)
    limits = ModelLimits(declared_max_output=1500)
    first = _cut("w " * 400, 400, 400)
    assert decide_cut(first, joined=False, raised=0, continued=0, defaults=d, limits=limits, params=TEXT) == \
        RaiseCap(800, "truncated (finish_reason=length); retrying with max_tokens=800")
    at_max = _cut("w " * 1500, 1500, 1500)
    assert isinstance(decide_cut(at_max, joined=False, raised=0, continued=0, defaults=d, limits=limits,
                                 params=TEXT), AskRest)  # no higher cap left: ask for the rest
    assert isinstance(decide_cut(at_max, joined=True, raised=1, continued=1, defaults=d, limits=limits,
                                 params=TEXT), Keep)  # both spent: returned as it is


def test_a_cut_tool_call_is_never_continued_and_a_budget_cut_is_kept():
    d = ModelDefaults(truncation_retries=0, continuations=3)
    call = _cut("", 400, 400, parts=[ToolCallPart("run", '{"code": "x = ')])
    assert isinstance(decide_cut(call, joined=False, raised=0, continued=0, defaults=d, limits=ModelLimits(),
                                 params=TEXT), Keep)
    budget = _cut("w " * 400, 400, 400, budget_capped=True)
    kept = decide_cut(budget, joined=False, raised=0, continued=0, defaults=ModelDefaults(), limits=ModelLimits(),
                      params=TEXT)
    assert isinstance(kept, Keep) and "budget" in (kept.note or "")
    window = _cut("w " * 400, 400, 400, window_capped=True)
    assert isinstance(decide_cut(window, joined=False, raised=0, continued=0, defaults=ModelDefaults(),
                                 limits=ModelLimits(window=4096), params=TEXT), Shorten)


def test_a_rate_limit_is_waited_for_as_long_as_the_proxy_says_and_a_spent_policy_is_named():
    policy = RetryPolicy(max_attempts=2, backoff_s=0.01, max_wait_s=100, jitter=0)
    limited = ModelHTTPError(429, "m", body={"error": {"message": "slow down"}})
    d = decide_retry(limited, {"llm_provider-retry-after": "12"}, F.Waiting(policy), who=WHO, url=None,
                     params=TEXT, rng=random.Random(0), wall_left_s=None)
    assert isinstance(d, SendAgain) and d.rate_limited and d.wait_s == 12
    assert "the server asked for 12s" in d.note
    waiting = F.Waiting(policy)
    broken = ModelHTTPError(503, "m", body={"error": {"message": "overloaded"}})
    assert isinstance(decide_retry(broken, {}, waiting, who=WHO, url=None, params=TEXT, rng=random.Random(0),
                                   wall_left_s=None), SendAgain)
    final = decide_retry(broken, {}, waiting, who=WHO, url=None, params=TEXT, rng=random.Random(0), wall_left_s=None)
    assert isinstance(final, GiveUp) and isinstance(final.error, ModelFailure)
    said = str(final.error)
    assert "solver" in said and "127.0.0.1:4000" in said and "after 2 attempts" in said


def test_what_is_not_transient_is_left_to_the_layers_above():
    for exc in (BudgetExceeded("max_tokens"), ModelHTTPError(400, "m", body={"error": {"message": "bad"}})):
        assert decide_retry(exc, {}, F.Waiting(RetryPolicy()), who=WHO, url=None, params=TEXT,
                            rng=random.Random(0), wall_left_s=None) == GiveUp()


def test_a_reply_that_ran_to_the_end_of_a_known_window_asks_for_a_shorter_prompt():
    """Issue #47 point 10: a 7,467-token prompt and a reply cut at 725 tokens under a 1,024 cap on an
    8,192-token window: the window ended it, not the cap (no 14,094-token re-ask, no continuation)."""
    cut = _cut("w " * 725, 725, 1024)
    cut.response.usage.input_tokens = 7467
    decided = decide_cut(cut, joined=False, raised=0, continued=0, defaults=ModelDefaults(),
                         limits=ModelLimits(window=8192), params=TEXT)
    assert isinstance(decided, Shorten) and decided.window == 8192
    # the same cut with room left in the window is the cap's: asked again higher
    cut.response.usage.input_tokens = 3000
    assert isinstance(decide_cut(cut, joined=False, raised=0, continued=0, defaults=ModelDefaults(),
                                 limits=ModelLimits(window=8192), params=TEXT), RaiseCap)


def test_without_a_server_hint_the_wait_doubles_per_failure_up_to_its_cap_within_the_total():
    """The back-off of a 5xx (no Retry-After): backoff_s, doubled at each failure, at most max_backoff_s,
    until the request's total wait (max_wait_s) is spent; the jitter shortens each wait by up to
    jitter/2, drawn from the run's own random source (a seed replays the same waits)."""
    broken = ModelHTTPError(503, "m", body={"error": {"message": "overloaded"}})

    def waits(policy: RetryPolicy, seed: int = 0) -> list[float | None]:
        waiting, rng, out = F.Waiting(policy), random.Random(seed), []
        for _ in range(policy.max_attempts):
            d = decide_retry(broken, {}, waiting, who=WHO, url=None, params=TEXT, rng=rng, wall_left_s=None)
            out.append(d.wait_s if isinstance(d, SendAgain) else None)
        return out

    plain = RetryPolicy(max_attempts=6, backoff_s=1.0, max_backoff_s=5.0, max_wait_s=12.0, jitter=0)
    assert waits(plain) == [1.0, 2.0, 4.0, 5.0, None, None]  # 1+2+4+5 = 12 s: the total is spent
    jittered = plain.model_copy(update={"jitter": 0.2, "max_wait_s": 600.0})
    got = waits(jittered, seed=7)
    assert all(0.9 * full <= w <= full for w, full in zip(got, [1.0, 2.0, 4.0, 5.0, 5.0])) and got[-1] is None
    assert got == waits(jittered, seed=7) and got != waits(jittered, seed=8)
