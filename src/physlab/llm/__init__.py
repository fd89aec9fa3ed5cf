"""The model seam: every scaffold talks to models through this package.

- :class:`RunModels` (``for_role(role)`` -> a recording pydantic-ai model) and :class:`RunMeter`
  (calls.jsonl, totals, the budget and the room ``set_aside`` keeps for a last step) implement the
  ModelSource / UsageMeter protocols of :mod:`physlab.run.environment`.
- ``scripted:NAME`` scenarios: :func:`register_scenario`; ``replay:PATH``: :mod:`physlab.llm.replay`.
- :func:`problem_prompt_parts`: user prompt parts (text + images) for a problem.
- :mod:`physlab.llm.standin`: the OpenAI-compatible stand-in server for tests and benchmarks.

Every name is imported on first use (pydantic and pydantic-ai are not paid by a help text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from physlab.lazy import lazy_exports

if TYPE_CHECKING:
    from physlab.llm.context_fit import fitting
    from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy
    from physlab.llm.meter import RunMeter, read_calls
    from physlab.llm.models import RunModels, build_provider_model, parse_spec
    from physlab.llm.output import structured_output
    from physlab.llm.prompt import problem_prompt_parts
    from physlab.llm.recording import RecordingModel
    from physlab.llm.scripted import register_scenario, register_scenario_module
    from physlab.llm.seam import seam_model
    from physlab.llm.usage import Budget, CallRecord, Usage

# Each name is imported from its module on first use: the command line imports this package to
# register its commands (and `physlab.llm.usage` is pydantic), and a help text should not pay for it.
_FROM: dict[str, tuple[str, ...]] = {
    "physlab.llm.usage": ("Budget", "CallRecord", "Usage"),
    "physlab.llm.models": ("RunModels", "build_provider_model", "parse_spec"),
    "physlab.llm.meter": ("RunMeter", "read_calls"),
    "physlab.llm.defaults": ("ModelDefaults", "ModelRegistry", "RetryPolicy"),
    "physlab.llm.recording": ("RecordingModel",),
    "physlab.llm.seam": ("seam_model",),
    "physlab.llm.scripted": ("register_scenario", "register_scenario_module"),
    "physlab.llm.prompt": ("problem_prompt_parts",),
    "physlab.llm.output": ("structured_output",),
    "physlab.llm.context_fit": ("fitting",),
}
__all__ = ["Budget", "CallRecord", "Usage", "RunModels", "build_provider_model", "parse_spec", "RunMeter",
           "read_calls", "ModelDefaults", "ModelRegistry", "RetryPolicy", "RecordingModel", "seam_model",
           "register_scenario", "register_scenario_module", "problem_prompt_parts", "structured_output", "fitting"]

__getattr__, __dir__ = lazy_exports(__name__, _FROM)
