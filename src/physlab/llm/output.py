"""Output modes: how a model is asked for structured output, per model of a run.

- ``tool``: the answer is a call of an output tool (pydantic-ai ``ToolOutput``), the default;
- ``native``: a JSON-schema response format (``NativeOutput``; vLLM's guided decoding);
- ``prompted``: JSON in the reply's text, validated against the same pydantic model
  (``PromptedOutput``) - for servers without tool calling (vLLM without a tool parser, many Ollama
  models, a proxy's canned model);
- ``auto``: ``tool`` until the server refuses tools or its model ignores them, then ``prompted``
  for the rest of the run (said once, as an event and in calls.jsonl).

Every place that builds an Agent's output uses :func:`structured_output`, so every strategy works in
every mode. A role that also calls function tools (the lab's computer, reviewer, adjudicator and
orchestrator, the manager, TPBench's SymPy verifier) keeps them in ``native`` and ``prompted`` mode:
the recording model then carries the tools in the prompt and reads the calls back from the reply's
JSON (:mod:`physlab.llm.text_tools`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic_ai import NativeOutput, PromptedOutput, ToolOutput

from physlab.errors import UserError
from physlab.llm.defaults import OUTPUT_MODES


def check_output_mode(mode: str | None, *, field_name: str = "--output-mode") -> str | None:
    if mode is not None and mode not in OUTPUT_MODES:
        raise UserError(f"output mode must be one of {', '.join(OUTPUT_MODES)}, got {mode!r}", field=field_name)
    return mode


@dataclass
class OutputModeState:
    """The output mode of one model in one run (shared by the roles that use the model)."""

    configured: str = "tool"
    fell_back: str | None = None  # why `auto` left tool calls, once it has
    on_change: Callable[[str], None] = field(default=lambda text: None, repr=False)

    @property
    def mode(self) -> str:
        """The mode requests are sent in now: tool, native or prompted."""
        if self.configured == "auto":
            return "prompted" if self.fell_back else "tool"
        return self.configured

    def fall_back(self, reason: str) -> bool:
        """``auto`` leaves tool calls for the rest of the run (True the first time)."""
        if self.configured != "auto" or self.fell_back:
            return False
        self.fell_back = reason
        self.on_change(reason)
        return True


def mode_of(model: Any) -> str:
    """The output mode requests of ``model`` are sent in now (``tool`` for a model outside the seam)."""
    state = getattr(model, "output_state", None)
    return state.mode if isinstance(state, OutputModeState) else "tool"


def structured_output(model: Any, output_type: Any, *, name: str | None = None,
                      description: str | None = None, allow_text: bool = False) -> Any:
    """The Agent ``output_type`` for a structured answer of ``output_type`` from ``model``, in the
    model's output mode. ``name`` names the output tool (tool mode) or the schema (the others).
    ``allow_text=True`` lets the model end its turn with plain text instead (the manager): the output
    tool and text in every mode, the tool carried in the prompt when tools are off."""
    mode = mode_of(model)
    if allow_text:
        return [ToolOutput(output_type, name=name, description=description), str]
    if mode == "native":
        return NativeOutput(output_type, name=name, description=description)
    if mode == "prompted":
        return PromptedOutput(output_type, name=name, description=description)
    return ToolOutput(output_type, name=name, description=description)
