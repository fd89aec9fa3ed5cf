"""OutputModeModel: sends each request in its model's output mode (physlab.llm.output).

In ``native``, ``constrained`` and ``prompted`` mode a request's tools travel in the text
(physlab.llm.text_tools) and the reply's JSON is read back into tool calls; in ``constrained`` mode
the request also asks the server to hold the reply to the schema (the answer's, or the tool-call
envelope's). ``auto`` falls back to ``prompted`` for the rest of the run when the server refuses
tools (also with an empty 500, as llama-cpp-python answers a tool choice it cannot honour) or its
model answers in text where a tool call was required (the try is recorded with a note saying so,
and the request is sent again).
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from physlab.llm import advice, failures as F
from physlab.llm.errors import ModelFailure
from physlab.llm.output import OutputModeState, constrained
from physlab.llm.seam.attempts import current_call
from physlab.llm.seam.decisions import GiveUp, SendAgain
from physlab.llm.seam.role import SeamRole
from physlab.llm.server_limits import refused_shape, refuses_tools, silent_500
from physlab.llm.text_tools import encode, needs_translation


def decide_tools_refused(exc: BaseException, params: ModelRequestParameters, state: OutputModeState,
                         who: SeamRole, url: str | None) -> SendAgain | GiveUp:
    """A failure of a request that carried tools: ``auto`` falls back (once for the run), any
    other mode names the fix; a request whose shape the server refused (a response format it does
    not take) is not sent again and names the modes to try; other failures are not this layer's."""
    carried_tools = bool(params.function_tools or params.output_tools)
    where = f" at {url}" if url else ""
    said_exc = F.describe(exc, who.secrets)
    silent = carried_tools and silent_500(exc)
    if carried_tools and (refuses_tools(exc) or silent):
        why = ("the server answered a request with tools with an empty 500 (llama-cpp-python does so for a tool "
               "choice its chat format cannot honour)" if silent else f"the server refused tool calls: {said_exc}")
        if state.fall_back(why):
            return SendAgain("tools refused by the server; output mode auto -> prompted for the rest of the run")
        if state.mode != "tool":  # another request of the run fell back meanwhile
            return SendAgain("tools refused; sent again in the run's fallback output mode")
        said = "answered tool calls with an empty 500" if silent else "refused tool calls"
        return GiveUp(ModelFailure(f"{who.role}: the server{where} {said} ({said_exc}); {F.TOOLS_HINT}"))
    if (field := refused_shape(exc)) is not None:
        return GiveUp(ModelFailure(
            f"{who.role}: the server{where} refused the request's {field} in '{state.mode}' output mode "
            f"({said_exc}); not sent again (the same request would be refused the same way); "
            f"{advice.other_modes(state.mode)}"))
    return GiveUp()


def ignores_tools(resp: ModelResponse, params: ModelRequestParameters) -> bool:
    """A reply without the tool call the request required (the output tool, text not allowed)."""
    return (bool(params.output_tools) and not params.allow_text_output and resp.finish_reason != "length"
            and not any(isinstance(p, ToolCallPart) for p in resp.parts))


class OutputModeModel(WrapperModel):
    def __init__(self, wrapped: Model, *, who: SeamRole, state: OutputModeState) -> None:
        super().__init__(wrapped)
        self.who = who
        self.output_state = state
        self.output_misses = 0  # replies that ignored a required tool call (for the error's hint)

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        call = current_call()
        params = model_request_parameters
        while True:
            mode = self.output_state.mode
            tools = encode(messages, params, mode) if mode != "tool" and needs_translation(params) else None
            wire_messages, wire_params = (tools.messages, tools.params) if tools else (messages, params)
            settings = model_settings
            if mode == "constrained" and wire_params.output_object is not None:
                settings = constrained(model_settings, wire_params.output_object.json_schema)
            try:
                resp = await self.wrapped.request(wire_messages, settings, wire_params)
            except Exception as exc:
                decision = decide_tools_refused(exc, wire_params, self.output_state, self.who, self._url())
                if isinstance(decision, SendAgain):
                    call.settle(decision.note)
                    continue
                if decision.error is not None:
                    call.settle()
                    raise decision.error from exc
                raise
            if tools is not None:
                return tools.decode(resp)
            if ignores_tools(resp, wire_params):
                if self.output_state.fall_back("the model answered in text where a tool call was required"):
                    call.settle("tools ignored; output mode auto -> prompted for the rest of the run")
                    continue
                self.output_misses += 1
            return resp

    def _url(self) -> str | None:
        return self.who.endpoint or self.wrapped.base_url
