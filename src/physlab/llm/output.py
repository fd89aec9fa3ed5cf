"""Output modes: how a model is asked for structured output, per model of a run.

- ``tool``: the answer is a call of an output tool (pydantic-ai ``ToolOutput``), the default;
- ``native``: a JSON-schema response format (``NativeOutput``; vLLM's guided decoding);
- ``constrained``: the schema in the instructions as in ``prompted``, and the server asked to hold
  the reply to it (``response_format: {"type": "json_object", "schema": ...}``, which llama.cpp's
  servers turn into a grammar the model cannot leave): what makes a small local model usable for
  structured roles. Sent through pydantic-ai's public ``extra_body`` model setting by the seam's
  output-mode layer, for ``openai:`` models (an OpenAI-compatible server);
- ``prompted``: JSON in the reply's text, validated against the same pydantic model
  (``PromptedOutput``) - for servers without tool calling (vLLM without a tool parser, many Ollama
  models, a proxy's canned model);
- ``auto``: ``tool`` until the server refuses tools or its model ignores them, then ``prompted``
  for the rest of the run (said once, as an event and in calls.jsonl).

Every place that builds an Agent's output uses :func:`structured_output`, so every strategy works in
every mode. A role that also calls function tools (the lab's computer, reviewer, adjudicator and
orchestrator, the manager, TPBench's SymPy verifier) keeps them in ``native``, ``constrained`` and
``prompted`` mode (in ``constrained`` mode the server holds the reply to the tool-call envelope):
the recording model then carries the tools in the prompt and reads the calls back from the reply's
JSON (:mod:`physlab.llm.text_tools`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import NativeOutput, PromptedOutput, ToolOutput
from pydantic_ai.settings import ModelSettings

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
    if mode in ("prompted", "constrained"):  # constrained: the seam asks the server to hold the reply to it
        return PromptedOutput(output_type, name=name, description=description)
    return ToolOutput(output_type, name=name, description=description)


CONSTRAINED_FORMAT = "json_object"  # llama.cpp's form: {"type": "json_object", "schema": {...}}


def constrained(settings: ModelSettings | None, schema: dict[str, Any]) -> ModelSettings:
    """``settings`` with the request's reply held to ``schema`` by the server: the response format
    llama.cpp's servers (llama-server, llama-cpp-python) turn into a grammar, sent in pydantic-ai's
    ``extra_body`` (which the openai SDK merges into the request, over pydantic-ai's own format).
    Every property is required in what the server holds the reply to (:func:`every_field`)."""
    given = (settings or {}).get("extra_body")
    extra: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    extra["response_format"] = {"type": CONSTRAINED_FORMAT, "schema": every_field(schema)}
    return {**(settings or {}), "extra_body": extra}


def every_field(schema: Any) -> Any:
    """``schema`` with every object's properties required: a grammar lets a model write whatever the
    schema allows, and an output whose fields all have defaults allows ``{}``, which is what a small
    model then writes (issue #47: the surveyor answered ``{}`` four times). A reply valid under this
    is valid under ``schema`` (a default is only the value of a field left out)."""
    if isinstance(schema, list):
        return [every_field(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: every_field(v) for k, v in schema.items()}
    if isinstance(out.get("properties"), dict) and out["properties"]:
        out["required"] = list(out["properties"])
    return out


def is_constrained(settings: ModelSettings | None) -> bool:
    """The request is sent with a schema the server holds its reply to (see :func:`constrained`)."""
    extra = (settings or {}).get("extra_body")
    fmt = extra.get("response_format") if isinstance(extra, dict) else None
    return isinstance(fmt, dict) and fmt.get("type") == CONSTRAINED_FORMAT and "schema" in fmt
