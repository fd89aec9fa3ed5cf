"""The sampling toolkit: the steps the sampling scaffolds (two-step, RSA, manager, TPBench,
multi-round) and the studios of PhysicsMinions and SCALAR are built from.

- prompt files (``prompts/<name>.md``, ``{{placeholder}}`` substitution so LaTeX and JSON braces
  in the templates need no escaping) and the answer requirements every prompt ends with;
- one text request through a role's model (``physlab.llm.text.ask_text``: no agent loop, no tools),
  and one structured reply (a judge's or a verifier's verdict: pydantic-ai structured output);
- bounded concurrent sampling that keeps whatever finished when the budget runs out;
- building the one ``Attempt`` record, with the stop reason a budget gives.

Parameters are pydantic models (``physlab.strategies.params``); the TPBench candidate pool and its
verifier selection are in ``tpbench/``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model

from physlab.grading.extract import extract_final_answer
from physlab.llm.errors import budget_error
from physlab.llm.output import structured_output
from physlab.llm.text import ask_text
from physlab.problems.model import Problem
from physlab.run.environment import RunEnvironment
from physlab.strategies.base import Attempt, AttemptStatus
from physlab.strategies.params import ModelParams
from physlab.strategies.prompt_files import PromptFolder

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# Retries a judge or verifier gets when its structured reply does not validate: pydantic-ai sends
# the validation error back and asks again (paid from the run's budget like any request).
OUTPUT_RETRIES = 2

PROMPTS_DIR = Path(__file__).with_name("prompts")


def model_settings(params: ModelParams) -> dict[str, Any] | None:
    """pydantic-ai model settings from a strategy's parameters (None: the provider's defaults)."""
    return {"temperature": params.temperature} if params.temperature is not None else None


# -------------------------------------------------------------------------------------- prompts


_PROMPTS = PromptFolder(PROMPTS_DIR)
load_prompt = _PROMPTS.load
render = _PROMPTS.render


def answer_requirements(problem: Problem) -> str:
    """How the final answer must be given: the template (when there is one) or ANSWER.md prose."""
    if problem.answer_template:
        return render("answer_requirements_template", template=problem.answer_template.strip())
    return load_prompt("answer_requirements_open").strip()


# ---------------------------------------------------------------------------- model requests


def with_images(ctx: RunEnvironment, prompt: str) -> str | list[Any]:
    """The prompt plus the public problem's figures (pydantic-ai BinaryContent parts)."""
    if not ctx.problem.images:
        return prompt
    from physlab.llm.prompt import image_parts

    return [prompt, *image_parts(ctx.problem.images)]


async def ask(ctx: RunEnvironment, role: str, prompt: str | list[Any], *, system: str | None = None,
              settings: dict[str, Any] | None = None, history: Sequence[ModelMessage] | None = None,
              images: bool = True) -> tuple[str, list[ModelMessage]]:
    """One plain-text request for ``role``; returns (text, all messages for a follow-up).

    The problem's figures are attached to a fresh conversation (a follow-up already has them)
    unless ``images`` is false or ``prompt`` already lists its own parts (text and images)."""
    content = with_images(ctx, prompt) if images and not history and isinstance(prompt, str) else prompt
    return await ask_text(ctx.models.for_role(role), content, system=system, settings=settings, history=history)


async def structured_reply(model: Model, prompt: str | list[Any], output: type[M], *, tool: str,
                           system: str | None = None, settings: dict[str, Any] | None = None) -> M:
    """One reply from ``model`` as an ``output`` model, in the model's output mode (the output tool
    ``tool``, or JSON named ``tool``: physlab.llm.output). A reply that does not validate is sent back
    with the error, up to OUTPUT_RETRIES times; after that pydantic-ai raises
    ``UnexpectedModelBehavior``, which the caller records as no verdict."""
    agent = Agent(model, output_type=structured_output(model, output, name=tool), instructions=system,
                  retries=OUTPUT_RETRIES)
    result = await agent.run(prompt, model_settings=settings)  # type: ignore[arg-type]
    return result.output


async def ask_structured(ctx: RunEnvironment, role: str, prompt: str | list[Any], output: type[M], *,
                         tool: str, system: str | None = None, settings: dict[str, Any] | None = None,
                         images: bool = True) -> M:
    """:func:`structured_reply` from ``role``'s model. The problem's figures go along unless
    ``images`` is false or ``prompt`` already lists its own parts."""
    content = with_images(ctx, prompt) if images and isinstance(prompt, str) else prompt
    return await structured_reply(ctx.models.for_role(role), content, output, tool=tool, system=system,
                                  settings=settings)


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
        return budget_error(self.error) is not None


async def gather_bounded(factories: Sequence[Callable[[], Awaitable[T]]], limit: int, *,
                         on_done: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
    """Run the jobs concurrently, at most ``limit`` at once; keep results in order.

    A job that hits the budget or a model failure is recorded as an error instead of cancelling
    its siblings, so the strategy can continue with what finished. Once one job hits the budget
    the jobs not yet started are skipped (they would only fail the same way). ``on_done(i, outcome)``
    is called as each job finishes, in the order they finish (a checkpoint's spend is read then).
    """
    sem = asyncio.Semaphore(max(1, limit))
    stopped: list[BaseException] = []

    async def run(factory: Callable[[], Awaitable[T]]) -> Outcome:
        async with sem:
            if stopped:
                return Outcome(error=stopped[0])
            try:
                return Outcome(value=await factory())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - recorded, reported in details
                if budget_error(exc) is not None:
                    stopped.append(exc)
                return Outcome(error=exc)

    async def one(i: int, factory: Callable[[], Awaitable[T]]) -> Outcome:
        outcome = await run(factory)
        if on_done is not None:
            on_done(i, outcome)
        return outcome

    return list(await asyncio.gather(*(one(i, f) for i, f in enumerate(factories))))


def error_text(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    return f"{type(exc).__name__}: {exc}"[:500]


async def answer_classes(ctx: RunEnvironment, codes: Sequence[str | None], *, n_points: int | None = None
                         ) -> list[list[int]]:
    """Indices of ``codes`` (filled templates) grouped by the grader's equivalence -- the one
    relation every vote, aggregation and de-duplication uses -- largest class first (ties: the
    earlier first member). A missing code, or one without a valid answer, is in no class; answers
    the grader cannot show equal (two that do not evaluate, say) are never in one class. The run's
    Equivalence remembers what it has compared, so asking again after more samples is cheap."""
    present = [i for i, c in enumerate(codes) if c]
    if not present:
        return []
    local = await ctx.equivalence.equivalence_classes([codes[i] or "" for i in present], n_points=n_points)
    return sorted(([present[j] for j in cls] for cls in local), key=lambda c: (-len(c), c[0]))


def final_answer_classes(texts: Sequence[str | None]) -> list[list[int]]:
    """Indices of ``texts`` grouped by their "Final Answer:" (else the whole text) after normalising
    case and spacing, largest group first (ties: first index). An open question offers nothing to
    evaluate; this is much weaker than comparing functions, but it is all there is."""
    keyed: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if text is not None:
            keyed.setdefault(" ".join((extract_final_answer(text) or text).split()).lower(), []).append(i)
    return sorted(keyed.values(), key=lambda c: (-len(c), c[0]))


# --------------------------------------------------------------------------------- attempts


def finish(ctx: RunEnvironment, strategy: str, status: AttemptStatus, stop_reason: str, *,
           started: float, answer_text: str | None = None, answer_code: str | None = None,
           details: dict[str, Any] | None = None) -> Attempt:
    """The one Attempt record; usage comes from the run's meter (every call is recorded there)."""
    if status in ("complete", "partially_complete") and not (answer_text or answer_code):
        status = "no_answer"
    return Attempt(
        strategy=strategy,
        model=ctx.models.name,
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
    """``budget:<limit>`` for the budget that ``exc`` (or an error it wraps) ran into."""
    found = budget_error(exc)
    return f"budget:{found.limit}" if found is not None else "budget"


def ended_by(exc: BaseException, *, answered: bool) -> tuple[AttemptStatus, str]:
    """(status, stop reason) of a run a request error ended: a budget keeps what was answered
    (partially complete) or has nothing (no answer); any other error is an error."""
    if budget_error(exc) is not None:
        return ("partially_complete" if answered else "no_answer"), budget_reason(exc)
    return "error", "model_error"
