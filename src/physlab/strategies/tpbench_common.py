"""Helpers shared by the sampling scaffolds (two-step, rsa, manager, tpbench-*, multi-round).

What lives here and why:
- parameter parsing with one-line ``UserError`` messages (values come from ``--param k=v`` as
  strings or from a YAML config as typed values);
- prompt files (``prompts/<name>.md``, ``{{placeholder}}`` substitution so LaTeX and JSON braces
  in the templates need no escaping);
- one text request through a role's model (``physlab.llm.text.ask_text``: no agent loop, no tools);
- bounded concurrent sampling that keeps whatever finished when the budget runs out;
- building the one ``Attempt`` record, and reading JSON out of a reply.

The TPBench candidate pipeline (N candidates, functional distinctness at M points) is in
``tpbench/pool.py``; the verifier selection (stage 2 and the pairwise tie-break) in
``tpbench/select.py``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Sequence, TypeVar

from pydantic_ai.exceptions import UsageLimitExceeded

from physlab.llm.text import ask_text

from physlab.errors import UserError
from physlab.strategies.prompt_files import PromptFolder
from physlab.llm.errors import BudgetExceeded
from physlab.strategies.base import Attempt, AttemptStatus

T = TypeVar("T")

PROMPTS_DIR = Path(__file__).with_name("prompts")


# --------------------------------------------------------------------------------------- params

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bad(strategy: str, key: str, expected: str, value: Any) -> UserError:
    return UserError(f"strategy {strategy}: --param {key}: expected {expected}, got {value!r}",
                     field=None)


def param_int(ctx: Any, strategy: str, key: str, default: int, *, minimum: int = 1,
              maximum: int | None = None) -> int:
    value = (ctx.params or {}).get(key, default)
    if isinstance(value, bool):
        raise _bad(strategy, key, "an integer", value)
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise _bad(strategy, key, "an integer", value) from None
    if number < minimum or (maximum is not None and number > maximum):
        rng = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise _bad(strategy, key, f"an integer {rng}", value)
    return number


def param_float(ctx: Any, strategy: str, key: str, default: float | None, *,
                minimum: float = 0.0, maximum: float | None = None) -> float | None:
    value = (ctx.params or {}).get(key, default)
    if value is None or (isinstance(value, str) and value.strip().lower() in {"none", ""}):
        return None
    if isinstance(value, bool):
        raise _bad(strategy, key, "a number", value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(strategy, key, "a number", value) from None
    if math.isnan(number) or number < minimum or (maximum is not None and number > maximum):
        rng = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise _bad(strategy, key, f"a number {rng}", value)
    return number


def param_bool(ctx: Any, strategy: str, key: str, default: bool) -> bool:
    value = (ctx.params or {}).get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _bad(strategy, key, "true or false", value)


def check_known_params(ctx: Any, strategy: str, known: Iterable[str]) -> None:
    """Reject a misspelt --param instead of silently running with the default.

    Keys the runner itself puts in params (anything starting with '_'), the shared
    ``temperature``/``concurrency`` keys and ``max_iterations`` (set by ``--max-iterations``; a
    strategy without iterations ignores it) are always allowed.
    """
    allowed = set(known) | {"temperature", "concurrency", "max_iterations"}
    for key in (ctx.params or {}):
        if key.startswith("_") or key in allowed:
            continue
        raise UserError(f"strategy {strategy}: unknown --param {key!r}; expected one of "
                        f"{', '.join(sorted(allowed))}")


def model_settings(ctx: Any, strategy: str) -> dict[str, Any] | None:
    temperature = param_float(ctx, strategy, "temperature", None, minimum=0.0, maximum=2.0)
    return {"temperature": temperature} if temperature is not None else None


# -------------------------------------------------------------------------------------- prompts


_PROMPTS = PromptFolder(PROMPTS_DIR)
load_prompt = _PROMPTS.load
render = _PROMPTS.render


def answer_requirements(problem: Any) -> str:
    """How the final answer must be given: the template (when there is one) or ANSWER.md prose."""
    if problem.answer_template:
        return render("answer_requirements_template", template=problem.answer_template.strip())
    return load_prompt("answer_requirements_open").strip()


# ---------------------------------------------------------------------------- model requests


def with_images(ctx: Any, prompt: str) -> str | list[Any]:
    """The prompt plus the public problem's figures (pydantic-ai BinaryContent parts)."""
    if not ctx.problem.images:
        return prompt
    from physlab.llm.prompt import image_parts

    return [prompt, *image_parts(ctx.problem.images)]


def is_budget_error(exc: BaseException) -> bool:
    """BudgetExceeded, possibly wrapped by pydantic-ai or an exception group."""
    if isinstance(exc, (BudgetExceeded, UsageLimitExceeded)):
        return isinstance(exc, BudgetExceeded)
    if isinstance(exc, BaseExceptionGroup):
        return any(is_budget_error(e) for e in exc.exceptions)
    cause = exc.__cause__ or exc.__context__
    return cause is not None and cause is not exc and isinstance(cause, BudgetExceeded)


async def ask(ctx: Any, role: str, prompt: str, *, system: str | None = None,
              settings: dict[str, Any] | None = None, history: Sequence[Any] | None = None
              ) -> tuple[str, list[Any]]:
    """One plain-text request for ``role``; returns (text, all messages for a follow-up).

    The problem's figures are attached to a fresh conversation (a follow-up already has them)."""
    return await ask_text(ctx.models.for_role(role), with_images(ctx, prompt) if not history else prompt,
                          system=system, settings=settings, history=history)


@dataclass
class Outcome:
    """Result of one concurrent job: ``value`` or the error that stopped it."""

    value: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def budget(self) -> bool:
        return self.error is not None and is_budget_error(self.error)


async def gather_bounded(factories: Sequence[Callable[[], Awaitable[T]]], limit: int
                         ) -> list[Outcome]:
    """Run the jobs concurrently, at most ``limit`` at once; keep results in order.

    A job that hits the budget or a model failure is recorded as an error instead of cancelling
    its siblings, so the strategy can continue with what finished. Once one job hits the budget
    the jobs not yet started are skipped (they would only fail the same way).
    """
    sem = asyncio.Semaphore(max(1, limit))
    stopped: list[BaseException] = []

    async def one(factory: Callable[[], Awaitable[T]]) -> Outcome:
        async with sem:
            if stopped:
                return Outcome(error=stopped[0])
            try:
                return Outcome(value=await factory())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - recorded, reported in details
                if is_budget_error(exc):
                    stopped.append(exc)
                return Outcome(error=exc)

    return list(await asyncio.gather(*(one(f) for f in factories)))


def error_text(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    return f"{type(exc).__name__}: {exc}"[:500]


def concurrency(ctx: Any, strategy: str, default: int = 8) -> int:
    return param_int(ctx, strategy, "concurrency", default, minimum=1, maximum=256)


# ------------------------------------------------------------------------------- extraction


def extract_code(text: str | None) -> str | None:
    """The filled template from a model reply (the grader's extractor)."""
    if not text:
        return None
    try:
        from physlab.grading.extract import extract_code as _extract
    except ImportError:  # grading package not installed yet: last fenced python block
        blocks = re.findall(r"```(?:python|py)?[ \t]*\n(.*?)```", text, flags=re.DOTALL)
        return blocks[-1].strip() + "\n" if blocks else None
    return _extract(text)


def final_answer_line(text: str | None) -> str | None:
    """The text after the last 'Final Answer:' marker (for open questions)."""
    if not text:
        return None
    found = list(re.finditer(r"final answer\s*[:：]\s*(.*)", text, flags=re.IGNORECASE | re.DOTALL))
    return found[-1].group(1).strip() if found else None


# --------------------------------------------------------------------------------- attempts


def finish(ctx: Any, strategy: str, status: AttemptStatus, stop_reason: str, *,
           started: float, answer_text: str | None = None, answer_code: str | None = None,
           details: dict[str, Any] | None = None) -> Attempt:
    """The one Attempt record; usage comes from the run's meter (every call is recorded there)."""
    if status in ("complete", "partially_complete") and not (answer_text or answer_code):
        status = "no_answer"
    return Attempt(
        strategy=strategy,
        model=getattr(ctx.models, "name", ""),
        problem_id=ctx.problem.id,
        status=status,
        stop_reason=stop_reason,
        answer_text=answer_text,
        answer_code=answer_code,
        usage_by_role=dict(ctx.usage.by_role()),
        wall_s=time.monotonic() - started,
        details=details or {},
    )


def budget_reason(exc: BaseException | None) -> str:
    limit = getattr(exc, "limit", None)
    if limit is None and isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            limit = getattr(e, "limit", None) or limit
    return f"budget:{limit}" if limit else "budget"


def parse_json_object(text: str | None) -> dict[str, Any] | None:
    """The last JSON object in a reply (models wrap JSON in prose or fences despite being told)."""
    if not text:
        return None
    decoder = json.JSONDecoder()
    found = None
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            found = obj
        pos = text.find("{", end)
    return found
