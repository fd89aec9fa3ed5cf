"""The requests of a preflight (``physlab models check``), each a pydantic-ai Agent run through the
runs' own model seam (a RunModels per output mode): reachable and authorised; the field the server
reads an output cap from; the limits a refusal says; whether the system message reaches the model;
a tool call and a structured answer in each output mode; two requests at once; a stream; a repeated
prompt for cached tokens; the lab's first requests counted by the server's tokenizer. Each adds its
finding to the report as soon as it is known; what the numbers mean is :mod:`.fit`'s.

Every probe carries a small output cap and is bounded in time and bytes (issue #47: "Reply with:
ready" ran 8,178 tokens on a server that ignored the cap's name; issue #45: a body sent a byte at a
time and an endless stream hung the check): the probes' model registry entry is the user's with a
short ``timeout_s`` and a small ``max_reply_bytes``, and the probes that might run long on a server
without a cap of its own (a 10,000,000-token cap, a cap under a name it may ignore) are streamed and
closed as soon as they have said what they can.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel
from pydantic_ai.settings import ModelSettings

from physlab.llm import advice
from physlab.llm.defaults import ModelRegistry, RetryPolicy
from physlab.llm.preflight.fit import LIMIT_PROBE_CAP
from physlab.llm.preflight.report import LabRequests, Preflight, Price

PREFLIGHT_MARK = "PhysLab preflight check."  # opens every probe's instructions (the stand-in answers probes by it)
PROBE_ROLE = "preflight"
PROBE_TOOL = "multiply"
PROBE_OUTPUT = "submit_product"
# Lines of the repeated prompt of the cache probe: about 2K tokens, above the 1,024 below which
# OpenAI's prompt cache does not apply.
CACHE_PROBE_LINES = 160
# A check waits out what a busy server asks, but does not retry for minutes.
PROBE_RETRY = RetryPolicy(max_attempts=2, backoff_s=0.5, max_backoff_s=2.0, max_wait_s=60.0)
PROBE_TIMEOUT_S = 120.0  # one probe's whole reply (a small model on CPU answers a capped probe in seconds)
PROBE_REPLY_BYTES = 65_536  # a probe asks for a word, a number or one tool call
WORD_CAP = 16  # "ready"
ANSWER_CAP = 256  # a tool call, or the structured answer
REQUEST_LIMIT = 6  # a tool call and the answer take two; a model that keeps calling is stopped
CAP_PROBE = 12  # the cap-field probe: a reply longer than this was not cut by it
OVERFLOW_WORDS = 400_000  # a prompt past any CPU server's window: refused before any of it is evaluated
MODES = ("tool", "native", "constrained", "prompted")
LABELS = {"tool": "tool calling", "native": "native output", "constrained": "constrained output",
          "prompted": "prompted output"}
VLLM_TOOLS = ("vLLM enables tool calls with --enable-auto-tool-choice --tool-call-parser NAME, and for a reasoning "
              "model the matching --reasoning-parser NAME (e.g. kimi_k2 for Kimi K2: seed 000 §6, 'vLLM rejects "
              "tool_choice=\"auto\" without them')")


# ---- what the probes ask -----------------------------------------------------------------------

class Product(BaseModel):
    """The product the multiply tool returned."""

    value: int


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


READY = f"{PREFLIGHT_MARK} Reply with the single word: ready"
COUNT = f"{PREFLIGHT_MARK} Count from 1 to 200, the numbers separated by spaces, and nothing else."
TOOL_TASK = (f"{PREFLIGHT_MARK} Call the `{PROBE_TOOL}` tool once with a=6 and b=7, then give the number it "
             "returns as your final answer.")
# Instructions long enough that a server which drops them counts visibly fewer prompt tokens.
SYSTEM_PROBE = (f"{PREFLIGHT_MARK} These instructions are sent as the system message to see whether the server's "
                "chat format passes them to the model: the lab's roles get their instructions this way, and a "
                "format that leaves them out leaves every role without its task. Reply with the single word: ready")


def cache_instructions() -> str:
    """Long instructions sent twice, the same both times: the second request's prompt is the first's."""
    table = "\n".join(f"{n:03d}. {n} squared is {n * n}; {n} cubed is {n ** 3}."
                      for n in range(1, CACHE_PROBE_LINES + 1))
    return (f"{PREFLIGHT_MARK} This request is sent twice, unchanged, to see whether the server reports the "
            f"second prompt as read from its cache. A table for reference (not a task):\n{table}\n\n"
            "Reply with the single word: ready")


def capped(n: int) -> ModelSettings:
    return ModelSettings(max_tokens=n)


def said_nothing(exc: BaseException) -> bool:
    """The server answered and the model's reply was empty or unusable text (pydantic-ai refuses it:
    a small model says nothing to "reply with: ready" at times) - an answer for a probe that asks
    whether the server answers; a failure of the request itself (HTTP, the seam's) is not."""
    from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior

    from physlab.llm.errors import BudgetExceeded, ModelFailure, find_error

    return (find_error(exc, UnexpectedModelBehavior) is not None and find_error(exc, ModelFailure) is None
            and find_error(exc, ModelAPIError) is None and find_error(exc, BudgetExceeded) is None)


class Probes:
    """The requests of one check, in order; each adds its finding to the report."""

    def __init__(self, spec: str, api_base: str | None, api_key_env: str | None, registry: ModelRegistry,
                 report: Preflight, lab: LabRequests | None = None) -> None:
        from physlab.llm.meter import RunMeter

        self.spec, self.api_base, self.api_key_env = spec, api_base, api_key_env
        self.defaults = registry.defaults_for(spec)
        # The user's entry for this model, bounded for probes (a short timeout, small replies, no re-asks).
        self.probe_defaults = self.defaults.model_copy(update={
            "timeout_s": min(self.defaults.timeout_s, PROBE_TIMEOUT_S), "max_reply_bytes": PROBE_REPLY_BYTES,
            "truncation_retries": 0, "continuations": 0})
        self.report = report
        self.lab = lab
        self.meter = RunMeter()  # every try of every probe, as calls.jsonl would hold them
        self.streamed: set[int] = set()  # the records of streamed probes (a stream may carry no usage)
        self.tokenizer: Any = None
        self.took_cap = False  # the server took a 10,000,000-token cap (it has no cap of its own)
        self.cap_said = ""  # what the cap-field probe found, for the output cap's line
        self.window_how: str | None = None  # how the window was found, when not from the cap's refusal

    def models(self, mode: str, **entry: Any) -> Any:
        from physlab.llm.models import RunModels

        defaults = self.probe_defaults.model_copy(update=entry) if entry else self.probe_defaults
        return RunModels(self.spec, meter=self.meter, api_base=self.api_base, api_key_env=self.api_key_env,
                         registry=ModelRegistry(models={self.spec: defaults}), retry=PROBE_RETRY, output_mode=mode,
                         events=lambda *a, **k: None)

    async def run(self) -> None:
        from physlab.llm.models import RunModels

        r = self.report
        r.api_base = RunModels.api_base_for(self.spec, self.defaults, self.api_base)
        async with self.models("tool") as models:  # a bad key variable is a UserError here, before any request
            reached = await self.reach(models)
            if reached:
                await self.system_message(models)
        if not reached:
            for check in ("tool calling", "native output", "constrained output", "prompted output", "output mode",
                          "context window", "output cap", "concurrency", "streaming", "usage", "cached tokens"):
                r.add(check, "skip", "not tried: the first request failed")
            self._totals()
            return
        await self.cap_field()
        await self.limits()
        await self.output_modes()
        await self.lab_sizes()
        async with self.models("tool") as models:
            await self.concurrency(models)
            await self.stream(models)
            await self.cache(models)
        self.usage()
        self._totals()

    # ---- the probes ------------------------------------------------------------------------------
    async def reach(self, models: Any) -> bool:
        from pydantic_ai import Agent

        from physlab.llm.models import api_key, parse_spec

        where = self.report.api_base or "the provider's API"
        started = time.monotonic()
        empty = ""
        try:
            await Agent(models.for_role(PROBE_ROLE), instructions=READY).run(
                "Are you there?", model_settings=capped(WORD_CAP))
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            if not said_nothing(exc):
                self.report.add("reachable", "fail", cause(exc))
                return False
            empty = "; the model's reply was empty"
        key = api_key(parse_spec(self.spec)[0], self.defaults.api_key_env or self.api_key_env,
                      api_base=self.report.api_base)
        said = f"the key in {key.env} accepted" if key.key else "no key sent, none asked for"
        self.report.add("reachable", "ok", f"{where} answered in {time.monotonic() - started:.1f} s ({said}{empty})")
        return True

    async def system_message(self, models: Any) -> None:
        """The same request with and without long instructions: a server whose chat format drops the
        system message counts the same prompt tokens for both."""
        from pydantic_ai import Agent

        counts = []
        try:
            for instructions in (SYSTEM_PROBE, None):
                before = len(self.meter.records)
                try:
                    await Agent(models.for_role(PROBE_ROLE), instructions=instructions).run(
                        f"{PREFLIGHT_MARK} Are you there?", model_settings=capped(4))
                except Exception as exc:
                    if not said_nothing(exc):
                        raise
                rec = next((x for x in self.meter.records[before:] if not x.error), None)
                counts.append(rec.input_tokens if rec is not None else 0)
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("system message", "warn", f"not checked: {cause(exc)}")
            return
        with_it, without = counts
        if not (with_it and without):
            self.report.add("system message", "skip", "not checked: the replies carry no usage")
            return
        self.report.drops_system = with_it - without < 10
        if self.report.drops_system:
            self.report.add("system message", "warn", (
                f"dropped by the server's chat format (a prompt with {len(SYSTEM_PROBE)} characters of instructions "
                f"counted {with_it} tokens, the same prompt without them {without}): every role's instructions "
                "would be lost; serve with a chat format that keeps it (llama-cpp-python: --chat_format chatml or "
                "chatml-function-calling, not gemma)"))
        else:
            self.report.add("system message", "ok", f"reaches the model ({with_it - without} tokens of instructions)")

    async def cap_field(self) -> None:
        """A request that would run long, capped at 12 tokens under each field: the one whose reply
        stops there is the one the server reads. Streamed, and closed once the reply has run past the
        cap, so an ignored cap costs a few tokens, not the rest of the window."""
        results = {}
        for field in ("max_completion_tokens", "max_tokens"):
            results[field] = await self._capped_stream(field)
        r = self.report
        honoured = [f for f, v in results.items() if v == "honoured"]
        ignored = [f for f, v in results.items() if v == "ignored"]
        from physlab.llm.models import cap_field_for

        default = cap_field_for(self.defaults, r.api_base) or "max_completion_tokens"
        r.output_cap_field = default if default in honoured or not honoured else honoured[0]
        if not (honoured or ignored):  # the model stopped before the cap either way: nothing learned
            return
        self.cap_said = (f"requests carry their cap as {r.output_cap_field}"
                         + (", which it honours" if r.output_cap_field in honoured else "")
                         + (f"; it ignores {' and '.join(ignored)} (a reply asked for {CAP_PROBE} tokens under it "
                            "ran on)" if ignored else ""))

    def _mark_streamed(self, before: int) -> None:
        self.streamed.update(id(x) for x in self.meter.records[before:])

    async def _capped_stream(self, field: str) -> str:
        from pydantic_ai import Agent

        async with self.models("tool", output_cap_field=field) as models:
            before = len(self.meter.records)
            ran_on = False
            try:
                async with Agent(models.for_role(PROBE_ROLE), instructions=COUNT).run_stream(
                        "Go.", model_settings=capped(CAP_PROBE)) as run:
                    said = ""
                    async for delta in run.stream_text(delta=True):
                        said += delta
                        if len(said) > CAP_PROBE * 12:  # far more than 12 tokens: the cap did not hold
                            ran_on = True
                            break
            except Exception:  # noqa: BLE001 - refused under this name: it does not read it
                return "refused"
            finally:
                self._mark_streamed(before)
            if ran_on:
                return "ignored"
            rec = next((x for x in self.meter.records[before:] if not x.error), None)
            return "honoured" if rec is not None and rec.finish_reason == "length" else "unknown"

    async def limits(self) -> None:
        """A streamed request with an output cap no model allows: vLLM refuses it saying its window,
        OpenAI its largest cap; a server that takes it (llama.cpp) has no cap of its own, and the
        stream is closed at its first words. Such a server says its window only when a prompt
        overflows it: a prompt past any CPU server's window is sent, which it refuses before
        evaluating any of it (only to a server whose tokenizer endpoint says it is llama.cpp's)."""
        from pydantic_ai import Agent
        from pydantic_ai.exceptions import ModelAPIError

        from physlab.llm.errors import find_error
        from physlab.llm.http_capture import http_client
        from physlab.llm.server_limits import limit_refusal
        from physlab.llm.tokenizer import find_tokenizer

        r = self.report
        async with self.models("tool") as models:
            before = len(self.meter.records)
            try:
                async with Agent(models.for_role(PROBE_ROLE), instructions=READY).run_stream(
                        "Are you there?", model_settings=capped(LIMIT_PROBE_CAP)) as run:
                    async for _ in run.stream_text(delta=True):
                        break
                self.took_cap = True
            except Exception as exc:  # noqa: BLE001 - the refusal is what this probe is for
                api = find_error(exc, ModelAPIError)
                refusal = limit_refusal(api) if api is not None else None
                if api is None:  # taken, and the model said nothing usable: not a refusal
                    self.took_cap = True
                elif refusal is None:
                    r.limit_refusal = cause(exc)
                else:
                    r.context_window = refusal.window
                    r.max_output_tokens = refusal.max_output if refusal.kind == "cap" else None
            finally:
                self._mark_streamed(before)
        if r.api_base is None:
            return
        client = http_client(PROBE_TIMEOUT_S, 1 << 20)
        try:
            tok = await find_tokenizer(client, r.api_base, self.spec.split(":", 1)[1])
        finally:
            await client.aclose()
        self.tokenizer = tok
        if tok is not None:
            r.tokenizer = tok.kind
            if r.context_window is None and tok.window:
                r.context_window, self.window_how = tok.window, f"said by the server ({tok.kind})"
        if r.context_window is None and self.took_cap and tok is not None and tok.kind == "llama-cpp-python":
            await self._overflow()

    async def _overflow(self) -> None:
        from pydantic_ai import Agent

        from physlab.llm.errors import ContextTooLong, find_error

        async with self.models("tool", context_window=None) as models:
            try:
                await Agent(models.for_role(PROBE_ROLE), instructions=READY).run(
                    "x " * OVERFLOW_WORDS, model_settings=capped(1))
            except Exception as exc:  # noqa: BLE001 - the refusal is what this probe is for
                found = find_error(exc, ContextTooLong)
                if found is not None and found.window:
                    self.report.context_window = found.window
                    self.window_how = "the server's refusal of a prompt past it"

    async def output_modes(self) -> None:
        r = self.report
        results: dict[str, tuple[bool, str]] = {}
        for mode in MODES:
            if mode == "constrained" and not self.spec.startswith("openai:"):
                results[mode] = (False, "not for this provider: an OpenAI-compatible server's json_object with a schema")
                continue
            async with self.models(mode) as models:
                results[mode] = await self.structured(models, mode)
        works = [m for m in advice.PREFERENCE if results[m][0]]
        for mode in MODES:
            usable, text = results[mode]
            r.add(LABELS[mode], "ok" if usable else ("warn" if works else "fail"), text)
        configured = self.defaults.output_mode
        if not works:
            r.add("output mode", "fail", "no output mode works: the model gave no structured answer in tool, native, "
                                        "constrained or prompted mode; a larger or instruction-tuned model is needed")
            return
        r.output_mode = works[0]
        why = {"tool": " (the default)",
               "native": ": tool calls do not work here, a JSON-schema response format does (the lab's tools travel "
                         "in it)",
               "constrained": ": neither tool calls nor a JSON-schema response format work here, and the server "
                              "holds a reply to a schema (json_object with a schema: llama.cpp), which a model that "
                              "does not follow instructions needs (the lab's tools travel in it)",
               "prompted": ": neither tool calls nor a response format work here, JSON in the text does"}
        note = f"; the model registry says output_mode: {configured}" if configured and configured != works[0] else ""
        r.add("output mode", "ok", f"use --output-mode {works[0]}{why[works[0]]}{note}")

    async def structured(self, models: Any, mode: str) -> tuple[bool, str]:
        """A tool call, then the structured answer, as the lab's roles make them (in ``mode``)."""
        from pydantic_ai import Agent, capture_run_messages
        from pydantic_ai.exceptions import UsageLimitExceeded
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.usage import UsageLimits

        from physlab.llm.output import structured_output

        model = models.for_role(PROBE_ROLE)
        how = {"tool": "a tool call and the answer as a tool call",
               "native": "a JSON-schema response format (the tool carried in it)",
               "constrained": "json_object with the schema, which the server held the reply to (the tool carried in it)",
               "prompted": "JSON in the text (the tool carried in it)"}[mode]
        agent = Agent(model, instructions=TOOL_TASK, tools=[multiply],
                      output_type=structured_output(model, Product, name=PROBE_OUTPUT))
        with capture_run_messages() as messages:
            try:
                result = await agent.run("What is 6 times 7? Use the tool.", model_settings=capped(ANSWER_CAP),
                                         usage_limits=UsageLimits(request_limit=REQUEST_LIMIT))
            except UsageLimitExceeded:
                calls = sum(isinstance(p, ToolCallPart) and p.tool_name == PROBE_TOOL
                            for m in messages for p in getattr(m, "parts", []))
                if calls:  # every reply was a well-formed call: the mode works, the model did not stop
                    return True, (f"usable: {how} (though the model called the tool {calls} times without giving "
                                  f"its answer in {REQUEST_LIMIT} requests: a small model)")
                return False, f"the model gave no structured answer in {REQUEST_LIMIT} requests"
            except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
                return False, await self._structured_failure(exc, mode, models)
        called = any(isinstance(p, ToolCallPart) and p.tool_name == PROBE_TOOL
                     for m in result.all_messages() for p in getattr(m, "parts", []))
        said = []
        if not called:
            said.append("the model did not call the tool it was asked to")
        if result.output.value != 42:
            said.append(f"it answered {result.output.value}, not 6 x 7 = 42")
        return True, f"usable: {how}" + (f" (though {'; '.join(said)}: a small model)" if said else "")

    async def _structured_failure(self, exc: BaseException, mode: str, models: Any) -> str:
        from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

        from physlab.llm.errors import ModelFailure, find_error
        from physlab.llm.server_limits import message_of, refuses_tools, silent_500

        http = find_error(exc, ModelHTTPError)
        if mode == "tool" and http is not None and refuses_tools(http):
            return f"refused by the server ({message_of(http)[:200]}); {VLLM_TOOLS}"
        if mode == "tool" and http is not None and silent_500(http):
            if await self._tools_with_auto(models):
                self.report.tool_choice_auto_only = True
                return ('the server takes tools only with tool_choice "auto" and answers the "required" of a '
                        "structured answer with an empty 500 (llama-cpp-python's chatml-function-calling format)")
            return "the server answered a request with tools with an empty 500"
        if http is not None:
            return f"the server refused it (HTTP {http.status_code}: {message_of(http)[:200]})"
        failure = find_error(exc, ModelFailure)
        if failure is not None and not find_error(exc, UnexpectedModelBehavior):
            return cause(exc)
        odd = find_error(exc, UnexpectedModelBehavior)
        if odd is not None:
            first = str(odd).splitlines()[0] if str(odd) else type(odd).__name__
            return f"the model did not give the structured answer asked of it ({first[:200]})"
        return cause(exc)

    async def _tools_with_auto(self, models: Any) -> bool:
        """The same tools with ``tool_choice: "auto"`` (a reply that may be text): taken by the server,
        whatever the model made of them."""
        from pydantic_ai import Agent
        from pydantic_ai.exceptions import ModelHTTPError

        from physlab.llm.errors import find_error

        try:
            await Agent(models.for_role(PROBE_ROLE), instructions=TOOL_TASK, tools=[multiply]).run(
                "What is 6 times 7?", model_settings=capped(WORD_CAP))
        except Exception as exc:  # noqa: BLE001 - refused with "auto" too, or taken and answered oddly
            return find_error(exc, ModelHTTPError) is None
        return True

    async def lab_sizes(self) -> None:
        """The lab's first requests in the output mode found, counted by the server's tokenizer."""
        r = self.report
        tok = getattr(self, "tokenizer", None)
        if self.lab is None or r.lab_prompts is None or tok is None or r.api_base is None:
            return
        from physlab.llm.http_capture import http_client

        try:
            requests = await self.lab(r.output_mode or "tool")
            client = http_client(PROBE_TIMEOUT_S, 1 << 20)
            try:
                counted = {role: (await tok.count(client, full), await tok.count(client, floor))
                           for role, (full, floor) in requests.items()}
            finally:
                await client.aclose()
        except Exception:  # noqa: BLE001 - the estimate from characters stands
            return
        largest = max(counted, key=lambda role: counted[role][0])
        tightest = max(counted, key=lambda role: counted[role][1])
        r.lab_prompts = r.lab_prompts.model_copy(update={
            "largest_role": largest, "largest_counted": counted[largest][0], "floor_role": tightest,
            "floor_counted": counted[tightest][1], "counted_by": f"the server's tokenizer ({tok.kind})",
            "mode": r.output_mode or "tool", "largest_chars": len(requests[largest][0]),
            "floor_chars": len(requests[tightest][1])})

    async def concurrency(self, models: Any) -> None:
        """One request alone, then two together (three different prompts, so no prompt cache serves
        one from another): a server that generates one at a time answers the later of the two only
        after the earlier, about twice as long as the one alone."""
        from pydantic_ai import Agent

        tok = self.tokenizer
        if tok is not None and tok.slots is not None:  # the server says it (or is llama-cpp-python: one)
            self.report.slots = tok.slots
            if tok.slots == 1:
                self.report.add("concurrency", "warn", (
                    f"one request at a time ({tok.kind}); give slots: 1 in the model registry so a run sends one at "
                    "a time and a request that times out is not sent again behind itself"))
            else:
                self.report.add("concurrency", "ok", f"{tok.slots} requests at once ({tok.kind}'s slots)")
            return

        async def one(n: int) -> float:
            t0 = time.monotonic()
            try:
                await Agent(models.for_role(PROBE_ROLE), instructions=COUNT.replace("1 to 200", f"{n} to {n + 200}")).run(
                    "Go.", model_settings=capped(24))
            except Exception as exc:
                if not said_nothing(exc):
                    raise
            return time.monotonic() - t0

        try:
            alone = await one(300)
            first, second = sorted(await asyncio.gather(one(500), one(700)))
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("concurrency", "warn", f"not checked: {cause(exc)}")
            return
        if second >= 1.6 * alone and second - alone >= 0.2:
            self.report.slots = 1
            self.report.add("concurrency", "warn", (
                f"one request at a time: alone a request took {alone:.1f} s, and of two sent together one took "
                f"{first:.1f} s and the other {second:.1f} s (llama-cpp-python serves one); give slots: 1 in the "
                "model registry so a run sends one at a time and a request that times out is not sent again "
                "behind itself"))
        else:
            self.report.add("concurrency", "ok", f"two requests at once took {first:.1f} s and {second:.1f} s "
                                                 f"(one alone {alone:.1f} s)")

    async def stream(self, models: Any) -> None:
        from pydantic_ai import Agent

        before = len(self.meter.records)
        try:
            async with Agent(models.for_role(PROBE_ROLE), instructions=READY).run_stream(
                    "Are you there?", model_settings=capped(WORD_CAP)) as run:
                text = await run.get_output()
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("streaming", "warn", f"failed ({cause(exc)}); the lab does not stream, pydantic-ai's "
                                                 "run_stream from Python would")
            return
        finally:
            self._mark_streamed(before)
        rec = next((r for r in self.meter.records[before:] if not r.error), None)
        if not text.strip():
            self.report.add("streaming", "warn", "the stream ended without text")
        elif rec is not None and rec.input_tokens:
            self.report.add("streaming", "ok", "works, with the usage reported at the stream's end")
        else:
            self.report.add("streaming", "warn", "works, but the stream reports no usage (its tokens count 0; the "
                                                 "lab does not stream)")

    def usage(self) -> None:
        plain = [r for r in self.meter.records if not r.error and id(r) not in self.streamed]
        silent = [r for r in plain if not (r.input_tokens or r.output_tokens)]
        if not silent:
            n_in, n_out = sum(r.input_tokens for r in plain), sum(r.output_tokens for r in plain)
            self.report.add("usage", "ok", f"every reply reports its tokens ({len(plain)} replies, "
                                           f"{n_in:,} in / {n_out:,} out)")
            return
        self.report.add("usage", "warn", f"no usage in {len(silent)} of {len(plain)} replies: their tokens and "
                                         "cost count as 0, so --max-tokens and --max-cost cannot hold (use "
                                         "--max-calls or --max-wall)")

    async def cache(self, models: Any) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.settings import CacheConfig

        # As the lab asks for its one-request calls (lab/roles/_base.cache_settings), unless the registry says.
        settings = ModelSettings(cache=CacheConfig(messages=False)) if self.defaults.prompt_cache is None \
            else ModelSettings()
        settings["max_tokens"] = WORD_CAP
        agent = Agent(models.for_role(PROBE_ROLE), instructions=cache_instructions())
        try:
            for _ in range(2):
                try:
                    await agent.run("Are you there?", model_settings=settings)
                except Exception as exc:
                    if not said_nothing(exc):
                        raise
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("cached tokens", "warn", f"the repeated prompt failed ({cause(exc)})")
            return
        last = next((r for r in reversed(self.meter.records) if not r.error), None)
        if last is None or not last.input_tokens:
            self.report.add("cached tokens", "warn", "cannot be seen: the replies carry no usage")
        elif last.cache_read_tokens:
            self.report.add("cached tokens", "ok", f"reported: {last.cache_read_tokens:,} of {last.input_tokens:,} "
                                                   "input tokens of a repeated prompt were read from the cache")
        else:
            self.report.add("cached tokens", "warn", f"none reported for a repeated {last.input_tokens:,}-token "
                                                     "prompt: cost counts every input token at the full price "
                                                     "(vLLM: --enable-prefix-caching; Anthropic: prompt_cache in the "
                                                     "registry)")

    def _totals(self) -> None:
        recs = self.meter.records
        self.report.requests = len(recs)
        self.report.tokens = sum(r.input_tokens + r.output_tokens for r in recs)
        self.report.cost_usd = sum(r.cost_usd for r in recs)
        proxied = [r for r in recs if r.price_source == "proxy"]
        tokens = sum(r.input_tokens + r.output_tokens for r in proxied)
        if proxied and tokens:
            self.report.price = Price(source="proxy", stated_usd_per_token=sum(r.cost_usd for r in proxied) / tokens)


def cause(exc: BaseException) -> str:
    """A failure in one line: the seam's named cause without the probe's role in front."""
    from physlab.llm import failures as F
    from physlab.llm.errors import ModelFailure, find_error

    named = find_error(exc, ModelFailure)
    text = str(named) if named is not None else F.describe(exc)
    return text.removeprefix(f"{PROBE_ROLE}: ").splitlines()[0] if text else type(exc).__name__
