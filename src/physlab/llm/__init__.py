"""The model seam: every scaffold talks to models through this package.

- :class:`RunModels` (``for_role(role)`` -> a recording pydantic-ai model) and :class:`RunMeter`
  (calls.jsonl, totals, the budget and the room ``set_aside`` keeps for a last step) implement the
  ModelSource / UsageMeter protocols of :mod:`physlab.run.environment`.
- ``scripted:NAME`` scenarios: :func:`register_scenario`; ``replay:PATH``: :mod:`physlab.llm.replay`.
- :func:`problem_prompt_parts`: user prompt parts (text + images) for a problem.
- :mod:`physlab.llm.standin`: the OpenAI-compatible stand-in server for tests and benchmarks.

Heavy imports (pydantic-ai) are deferred until one of these names is used.
"""

from __future__ import annotations

from typing import Any

from physlab.llm.usage import Budget, CallRecord, Usage

_LAZY = {
    "RunModels": "physlab.llm.models",
    "build_provider_model": "physlab.llm.models",
    "parse_spec": "physlab.llm.models",
    "RunMeter": "physlab.llm.meter",
    "read_calls": "physlab.llm.meter",
    "ModelDefaults": "physlab.llm.defaults",
    "ModelRegistry": "physlab.llm.defaults",
    "RecordingModel": "physlab.llm.recording",
    "seam_model": "physlab.llm.seam",
    "RetryPolicy": "physlab.llm.defaults",
    "register_scenario": "physlab.llm.scripted",
    "register_scenario_module": "physlab.llm.scripted",
    "problem_prompt_parts": "physlab.llm.prompt",
    "structured_output": "physlab.llm.output",
    "fitting": "physlab.llm.context_fit",
}

__all__ = ["Budget", "CallRecord", "Usage", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'physlab.llm' has no attribute {name!r}")
