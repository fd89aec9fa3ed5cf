"""The requests of a preflight (``physlab models check``), each a pydantic-ai Agent run through the
runs' own model seam (a RunModels per output mode): reachable and authorised; the limits a refusal
says; a tool call and a structured answer in each output mode; a stream; a repeated prompt for
cached tokens. Each adds its finding to the report; what the numbers mean is :mod:`.fit`'s."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from physlab.llm.defaults import ModelRegistry, RetryPolicy
from physlab.llm.preflight.fit import LIMIT_PROBE_CAP
from physlab.llm.preflight.report import Preflight, Price

PREFLIGHT_MARK = "PhysLab preflight check."  # opens every probe's instructions (the stand-in answers probes by it)
PROBE_ROLE = "preflight"
PROBE_TOOL = "multiply"
PROBE_OUTPUT = "submit_product"
# Lines of the repeated prompt of the cache probe: about 2K tokens, above the 1,024 below which
# OpenAI's prompt cache does not apply.
CACHE_PROBE_LINES = 160
# A check waits out what a busy server asks, but does not retry for minutes.
PROBE_RETRY = RetryPolicy(max_attempts=2, backoff_s=0.5, max_backoff_s=2.0, max_wait_s=60.0)
MODES = ("tool", "native", "prompted")
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
TOOL_TASK = (f"{PREFLIGHT_MARK} Call the `{PROBE_TOOL}` tool once with a=6 and b=7, then give the number it "
             "returns as your final answer.")


def cache_instructions() -> str:
    """Long instructions sent twice, the same both times: the second request's prompt is the first's."""
    table = "\n".join(f"{n:03d}. {n} squared is {n * n}; {n} cubed is {n ** 3}."
                      for n in range(1, CACHE_PROBE_LINES + 1))
    return (f"{PREFLIGHT_MARK} This request is sent twice, unchanged, to see whether the server reports the "
            f"second prompt as read from its cache. A table for reference (not a task):\n{table}\n\n"
            "Reply with the single word: ready")


class Probes:
    """The requests of one check, in order; each adds its finding to the report."""

    def __init__(self, spec: str, api_base: str | None, api_key_env: str | None, registry: ModelRegistry,
                 report: Preflight) -> None:
        from physlab.llm.meter import RunMeter

        self.spec, self.api_base, self.api_key_env, self.registry = spec, api_base, api_key_env, registry
        self.defaults = registry.defaults_for(spec)
        self.report = report
        self.meter = RunMeter()  # every try of every probe, as calls.jsonl would hold them

    def models(self, mode: str) -> Any:
        from physlab.llm.models import RunModels

        return RunModels(self.spec, meter=self.meter, api_base=self.api_base, api_key_env=self.api_key_env,
                         registry=self.registry, retry=PROBE_RETRY, output_mode=mode, events=lambda *a, **k: None)

    async def run(self) -> None:
        from physlab.llm.models import RunModels

        r = self.report
        r.api_base = RunModels.api_base_for(self.spec, self.defaults, self.api_base)
        async with self.models("tool") as models:  # a bad key variable is a UserError here, before any request
            reached = await self.reach(models)
            if reached:
                await self.limits(models)
        if not reached:
            for check in ("tool calling", "native output", "prompted output", "output mode", "context window",
                          "output cap", "streaming", "usage", "cached tokens"):
                r.add(check, "skip", "not tried: the first request failed")
            self._totals()
            return
        await self.output_modes()
        async with self.models("tool") as models:
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
        try:
            await Agent(models.for_role(PROBE_ROLE), instructions=READY).run("Are you there?")
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("reachable", "fail", cause(exc))
            return False
        key = api_key(parse_spec(self.spec)[0], self.defaults.api_key_env or self.api_key_env,
                      api_base=self.report.api_base)
        said = f"the key in {key.env} accepted" if key.key else "no key sent, none asked for"
        self.report.add("reachable", "ok", f"{where} answered in {time.monotonic() - started:.1f} s ({said})")
        return True

    async def limits(self, models: Any) -> None:
        """A tiny request with an output cap no model allows: the seam lowers it as the server's
        refusal says (physlab.llm.seam.limits) and keeps what it learned."""
        from pydantic_ai import Agent

        try:
            await Agent(models.for_role(PROBE_ROLE), instructions=READY).run(
                "Are you there?", model_settings={"max_tokens": LIMIT_PROBE_CAP})
        except Exception as exc:  # noqa: BLE001 - a refusal the seam could not read
            self.report.limit_refusal = cause(exc)
        known = models.limits(self.spec)
        self.report.context_window, self.report.max_output_tokens = known.window, known.max_output

    async def output_modes(self) -> None:
        r = self.report
        results: dict[str, tuple[bool, str]] = {}
        for mode in MODES:
            async with self.models(mode) as models:
                results[mode] = await self.structured(models, mode)
        works = [m for m in MODES if results[m][0]]
        labels = {"tool": "tool calling", "native": "native output", "prompted": "prompted output"}
        for mode in MODES:
            usable, text = results[mode]
            r.add(labels[mode], "ok" if usable else ("warn" if works else "fail"), text)
        configured = self.defaults.output_mode
        if not works:
            r.add("output mode", "fail", "no output mode works: the model gave no structured answer in tool, native "
                                        "or prompted mode; a larger or instruction-tuned model is needed")
            return
        r.output_mode = works[0]
        why = {"tool": " (the default)", "native": ": tool calls do not work here, a JSON-schema response format "
                                                  "does (the lab's tools travel in it)",
               "prompted": ": neither tool calls nor a JSON-schema response format work here, JSON in the text does"}
        note = f"; the model registry says output_mode: {configured}" if configured and configured != works[0] else ""
        r.add("output mode", "ok", f"use --output-mode {works[0]}{why[works[0]]}{note}")

    async def structured(self, models: Any, mode: str) -> tuple[bool, str]:
        """A tool call, then the structured answer, as the lab's roles make them (in ``mode``)."""
        from pydantic_ai import Agent
        from pydantic_ai.messages import ToolCallPart

        from physlab.llm.output import structured_output

        model = models.for_role(PROBE_ROLE)
        how = {"tool": "a tool call and the answer as a tool call",
               "native": "a JSON-schema response format (the tool carried in it)",
               "prompted": "JSON in the text (the tool carried in it)"}[mode]
        agent = Agent(model, instructions=TOOL_TASK, tools=[multiply],
                      output_type=structured_output(model, Product, name=PROBE_OUTPUT))
        try:
            result = await agent.run("What is 6 times 7? Use the tool.")
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            return False, self._structured_failure(exc, mode)
        called = any(isinstance(p, ToolCallPart) and p.tool_name == PROBE_TOOL
                     for m in result.all_messages() for p in getattr(m, "parts", []))
        if not called:
            return False, f"the model answered without calling the tool it was asked to call ({how})"
        if result.output.value != 42:
            return True, f"usable ({how}), though the model answered {result.output.value}, not 6 x 7 = 42"
        return True, f"usable: {how}"

    def _structured_failure(self, exc: BaseException, mode: str) -> str:
        from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

        from physlab.llm.errors import find_error
        from physlab.llm.server_limits import message_of, refuses_tools

        http = find_error(exc, ModelHTTPError)
        if mode == "tool" and http is not None and refuses_tools(http):
            return f"refused by the server ({message_of(http)[:200]}); {VLLM_TOOLS}"
        if http is not None:
            return f"the server refused it (HTTP {http.status_code}: {message_of(http)[:200]})"
        odd = find_error(exc, UnexpectedModelBehavior)
        if odd is not None:
            first = str(odd).splitlines()[0] if str(odd) else type(odd).__name__
            return f"the model did not give the structured answer asked of it ({first})"
        return cause(exc)

    async def stream(self, models: Any) -> None:
        from pydantic_ai import Agent

        before = len(self.meter.records)
        try:
            async with Agent(models.for_role(PROBE_ROLE), instructions=READY).run_stream("Are you there?") as run:
                text = await run.get_output()
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("streaming", "warn", f"failed ({cause(exc)}); the lab does not stream, pydantic-ai's "
                                                 "run_stream from Python would")
            return
        rec = next((r for r in self.meter.records[before:] if not r.error), None)
        if not text.strip():
            self.report.add("streaming", "warn", "the stream ended without text")
        elif rec is not None and rec.input_tokens:
            self.report.add("streaming", "ok", "works, with the usage reported at the stream's end")
        else:
            self.report.add("streaming", "warn", "works, but the stream reports no usage (its tokens count 0)")

    def usage(self) -> None:
        answered = [r for r in self.meter.records if not r.error]
        silent = [r for r in answered if not (r.input_tokens or r.output_tokens)]
        if not silent:
            n_in, n_out = sum(r.input_tokens for r in answered), sum(r.output_tokens for r in answered)
            self.report.add("usage", "ok", f"every reply reports its tokens ({len(answered)} replies, "
                                           f"{n_in:,} in / {n_out:,} out)")
            return
        self.report.add("usage", "warn", f"no usage in {len(silent)} of {len(answered)} replies: their tokens and "
                                         "cost count as 0, so --max-tokens and --max-cost cannot hold (use "
                                         "--max-calls or --max-wall)")

    async def cache(self, models: Any) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.settings import CacheConfig, ModelSettings

        # As the lab asks for its one-request calls (lab/roles/_base.cache_settings), unless the registry says.
        settings = ModelSettings(cache=CacheConfig(messages=False)) if self.defaults.prompt_cache is None \
            else ModelSettings()
        agent = Agent(models.for_role(PROBE_ROLE), instructions=cache_instructions())
        try:
            for _ in range(2):
                await agent.run("Are you there?", model_settings=settings)
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
