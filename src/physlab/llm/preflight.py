"""A preflight of a model before a long run (``physlab models check``): a handful of tiny requests
through the runs' own model seam (RunModels, pydantic-ai Agents) that say, one finding each, whether
a lab run can go: reachable and authorised, which output mode works, the limits the server says or
the registry tells, streaming, usage and cached tokens, the price PhysLab will charge, and what a
lab run would cost by the seed's per-problem figures.

A lab run would fail (``Preflight.ok`` is False) when the server cannot be reached or refuses the
key, when no output mode gives a structured answer, or when the context window cannot hold the
lab's smallest prompt for the problem with a useful reply. Everything else is a warning.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from physlab.llm.defaults import ModelDefaults, ModelRegistry, RetryPolicy

PREFLIGHT_MARK = "PhysLab preflight check."  # opens every probe's instructions (the stand-in answers probes by it)
PROBE_ROLE = "preflight"
PROBE_TOOL = "multiply"
PROBE_OUTPUT = "submit_product"
# An output cap above any model's: the server's refusal says its real cap, or its context window.
LIMIT_PROBE_CAP = 10_000_000
# Lines of the repeated prompt of the cache probe: about 2K tokens, above the 1,024 below which
# OpenAI's prompt cache does not apply.
CACHE_PROBE_LINES = 160
CHARS_PER_TOKEN = 4  # English prose; code and LaTeX run nearer 3, so prompt sizes here are not overstated
# A check waits out what a busy server asks, but does not retry for minutes.
PROBE_RETRY = RetryPolicy(max_attempts=2, backoff_s=0.5, max_backoff_s=2.0, max_wait_s=60.0)
MODES = ("tool", "native", "prompted")
# The findings in the order they are shown: can it answer, how, within what, at what price.
CHECKS = ("reachable", "tool calling", "native output", "prompted output", "output mode", "lab prompts",
          "context window", "output cap", "streaming", "cached tokens", "usage", "price", "estimate")
VLLM_TOOLS = ("vLLM enables tool calls with --enable-auto-tool-choice --tool-call-parser NAME, and for a reasoning "
              "model the matching --reasoning-parser NAME (e.g. kimi_k2 for Kimi K2: seed 000 §6, 'vLLM rejects "
              "tool_choice=\"auto\" without them')")

Status = Literal["ok", "warn", "fail", "skip"]


class Finding(BaseModel):
    check: str
    status: Status
    text: str


class LabRunFigures(BaseModel):
    """What one physics-intern run took per CritPt problem: seed 000_dd0601bf2cd9213d.txt §5,
    "Analysis of runs and agent behavior" (Gemini 3.1 Pro on the 70 problems)."""

    tokens: int = Field(default=600_000, description="'The average number of tokens was about 600k'")
    input_share: float = Field(default=0.5, description="'roughly equal split between input and output'")
    low_tokens: int = Field(default=113_000, description="'from 113K on the cheapest problem'")
    high_tokens: int = Field(default=3_900_000, description="'to 3.9M on the most demanding'")
    calls: int = Field(default=28, description="'mean 28 LLM calls per problem'")
    iterations: int = Field(default=8, description="'median 8 iterations' (3 up to 40)")
    source: str = "seed 000 §5: Gemini 3.1 Pro on CritPt"

    @property
    def call_input(self) -> int:
        """The average lab call's prompt."""
        return round(self.tokens * self.input_share / self.calls)

    @property
    def call_output(self) -> int:
        """The average lab call's reply."""
        return round(self.tokens * (1 - self.input_share) / self.calls)


class LabPrompts(BaseModel):
    """What the lab's first requests weigh for one problem, in characters (physlab.lab.footprint):
    the largest as sent, and the largest of the shortest each role can be shrunk to (no run can
    go in a window smaller than that)."""

    problem: str
    largest_role: str
    largest_chars: int
    floor_role: str
    floor_chars: int

    @property
    def largest_tokens(self) -> int:
        return -(-self.largest_chars // CHARS_PER_TOKEN)

    @property
    def floor_tokens(self) -> int:
        return -(-self.floor_chars // CHARS_PER_TOKEN)


class Price(BaseModel):
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    source: str = "unpriced"  # free | registry | genai-prices | proxy | unpriced
    stated_usd_per_token: float | None = None  # proxy: what its stated costs came to per token in this check


class Estimate(BaseModel):
    tokens: int
    input_tokens: int
    output_tokens: int
    low_tokens: int
    high_tokens: int
    calls: int
    iterations: int
    cost_usd: float | None = None
    low_cost_usd: float | None = None
    high_cost_usd: float | None = None
    source: str


class Preflight(BaseModel):
    """The check of one model: its findings in the order they are shown, and what they found."""

    model: str
    api_base: str | None = None
    findings: list[Finding] = []
    output_mode: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    limit_refusal: str | None = None  # a refusal of the limit probe the seam could not read
    price: Price = Price()
    estimate: Estimate | None = None
    lab_prompts: LabPrompts | None = None
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """A lab run can start: no finding is a failure."""
        return not any(f.status == "fail" for f in self.findings)

    def add(self, check: str, status: Status, text: str) -> None:
        self.findings.append(Finding(check=check, status=status, text=text))

    def failed(self) -> list[str]:
        return [f.check for f in self.findings if f.status == "fail"]


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


# ---- the check -----------------------------------------------------------------------------------

async def check_model(spec: str, *, api_base: str | None = None, api_key_env: str | None = None,
                      registry: ModelRegistry | None = None, lab: LabPrompts | None = None,
                      figures: LabRunFigures | None = None) -> Preflight:
    """Check ``spec`` (at ``api_base``) as a lab run would use it. Bad input (a malformed name, an
    unusable URL, a key variable that is not set) is a UserError before anything is sent."""
    from physlab.llm.models import check_model_name, parse_spec

    registry = registry or ModelRegistry()
    figures = figures or LabRunFigures()
    check_model_name(spec, api_base)
    defaults = registry.defaults_for(spec)
    report = Preflight(model=spec, api_base=api_base, lab_prompts=lab)
    provider, rest = parse_spec(spec)
    if provider in ("scripted", "replay"):
        _in_process(report, provider, rest)
    else:
        await _Probes(spec, api_base, api_key_env, registry, report).run()
    _price(report, spec, defaults, provider)
    _lab_fit(report, defaults, figures)
    report.estimate = estimate(figures, report.price)
    report.add("estimate", "ok", estimate_text(report.estimate, report.price))
    report.findings.sort(key=lambda f: CHECKS.index(f.check))
    return report


def _in_process(report: Preflight, provider: str, rest: str) -> None:
    what = (f"scripted:{rest} is played in-process" if provider == "scripted"
            else f"replay:{rest} replays a recorded run")
    report.add("reachable", "ok", f"{what} (no server, no key)")
    report.output_mode = "tool"
    for check in ("tool calling", "native output", "prompted output"):
        report.add(check, "skip", "not asked of a deterministic model")
    report.add("output mode", "ok", "--output-mode tool (the default; a scenario plays tool calls)")
    for check in ("context window", "output cap", "streaming", "usage", "cached tokens"):
        report.add(check, "skip", "no server")


class _Probes:
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
            self.report.add("reachable", "fail", _cause(exc))
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
            self.report.limit_refusal = _cause(exc)
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
        return _cause(exc)

    async def stream(self, models: Any) -> None:
        from pydantic_ai import Agent

        before = len(self.meter.records)
        try:
            async with Agent(models.for_role(PROBE_ROLE), instructions=READY).run_stream("Are you there?") as run:
                text = await run.get_output()
        except Exception as exc:  # noqa: BLE001 - whatever failed is the finding
            self.report.add("streaming", "warn", f"failed ({_cause(exc)}); the lab does not stream, pydantic-ai's "
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
            self.report.add("cached tokens", "warn", f"the repeated prompt failed ({_cause(exc)})")
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


def _cause(exc: BaseException) -> str:
    """A failure in one line: the seam's named cause without the probe's role in front."""
    from physlab.llm import failures as F
    from physlab.llm.errors import ModelFailure, find_error

    named = find_error(exc, ModelFailure)
    text = str(named) if named is not None else F.describe(exc)
    return text.removeprefix(f"{PROBE_ROLE}: ").splitlines()[0] if text else type(exc).__name__


# ---- what the findings mean for a lab run ----------------------------------------------------------

def _price(report: Preflight, spec: str, defaults: ModelDefaults, provider: str) -> None:
    from physlab.llm.pricing import Pricer

    if report.price.source == "proxy":  # the server stated the cost of this check's replies
        per_m = (report.price.stated_usd_per_token or 0) * 1e6
        report.add("price", "ok", f"the server states each reply's cost (x-litellm-response-cost) and PhysLab "
                                  f"charges what it states: about ${per_m:,.2f} per million tokens in this check")
        return
    if provider in ("scripted", "replay") or defaults.free:
        report.price = Price(input_usd_per_mtok=0.0, output_usd_per_mtok=0.0, source="free")
        report.add("price", "ok", "free" + (" (the model registry says so)" if defaults.free else ""))
        return
    inp, out = Pricer(spec, defaults).per_token()
    source = "registry" if defaults.has_price else "genai-prices"
    if defaults.has_price or inp or out:
        report.price = Price(input_usd_per_mtok=inp * 1e6, output_usd_per_mtok=out * 1e6, source=source)
        report.add("price", "ok", f"${inp * 1e6:,.2f} in / ${out * 1e6:,.2f} out per million tokens ({source})")
        return
    report.price = Price(source="unpriced")
    report.add("price", "warn", f"unpriced: no price is known for '{spec.split(':', 1)[1]}', so its cost counts as $0 "
                                "and --max-cost cannot hold (give input_usd_per_mtok and output_usd_per_mtok, or "
                                "free: true, in the model registry)")


def _lab_fit(report: Preflight, defaults: ModelDefaults, figures: LabRunFigures) -> None:
    """The context window and output cap, told or discovered, against what the lab sends."""
    lab = report.lab_prompts
    if lab is not None:
        report.add("lab prompts", "ok", f"for {lab.problem}: the largest first request is ~{_k(lab.largest_tokens)} "
                                        f"tokens ({lab.largest_role}); the lab cannot shrink its prompts below "
                                        f"~{_k(lab.floor_tokens)} ({lab.floor_role})")
    skipped = {f.check for f in report.findings if f.status == "skip"}
    limit_error = report.limit_refusal
    if "context window" not in skipped:
        told, found = defaults.context_window, report.context_window
        window = found or told
        report.context_window = window
        if window is None:
            why = f" (it refused a {LIMIT_PROBE_CAP:,}-token cap without saying: {limit_error})" if limit_error else ""
            report.add("context window", "warn", f"not said by the server{why}, so the lab's prompts cannot be checked "
                                                 "against it (context_window in the model registry tells it)")
        else:
            how = "told by the model registry" if window == told and (found is None or found == told) else \
                f"discovered: the server's refusal of a {LIMIT_PROBE_CAP:,}-token cap"
            need = (lab.floor_tokens if lab else 0) + defaults.min_reply_tokens
            typical = figures.call_input + figures.call_output
            if lab is not None and window < need:
                report.add("context window", "fail", f"{window:,} tokens ({how}): too small for the lab's prompts, "
                                                     f"which need ~{_k(need)} ({lab.floor_role} at its shortest with a "
                                                     f"{defaults.min_reply_tokens}-token reply)")
            elif window < typical:
                report.add("context window", "warn", f"{window:,} tokens ({how}): below the lab's average call "
                                                     f"(~{_k(figures.call_input)} in + ~{_k(figures.call_output)} out,"
                                                     f" {figures.source}); expect shortened contexts and cut replies")
            else:
                report.add("context window", "ok", f"{window:,} tokens ({how})")
    if "output cap" not in skipped:
        told, found = defaults.truncation_max_output_tokens, report.max_output_tokens
        cap = found or told
        report.max_output_tokens = cap
        if cap is None and limit_error:
            report.add("output cap", "warn", f"not said: the server refused a {LIMIT_PROBE_CAP:,}-token cap without "
                                             f"saying its maximum ({limit_error})")
        elif cap is None:
            text = ("none of its own: a reply may use what the window leaves" if report.context_window
                    else "not said by the server (a cut reply is re-asked and continued during a run)")
            report.add("output cap", "ok", text)
        else:
            how = "told by the model registry" if cap == told and found in (None, told) else "discovered"
            if cap < defaults.min_reply_tokens:
                report.add("output cap", "fail", f"{cap:,} tokens ({how}): below the smallest useful reply "
                                                 f"({defaults.min_reply_tokens})")
            elif cap < figures.call_output:
                report.add("output cap", "warn", f"{cap:,} tokens ({how}): below the lab's average reply "
                                                 f"(~{_k(figures.call_output)}, {figures.source}); longer replies are "
                                                 "cut, then re-asked or continued")
            else:
                report.add("output cap", "ok", f"{cap:,} tokens ({how})")


def estimate(figures: LabRunFigures, price: Price) -> Estimate:
    """A lab run's tokens and cost by the seed's per-problem figures at ``price``."""
    def cost(tokens: int) -> float | None:
        if price.stated_usd_per_token is not None:
            return tokens * price.stated_usd_per_token
        if price.input_usd_per_mtok is None or price.output_usd_per_mtok is None:
            return None
        return (tokens * figures.input_share * price.input_usd_per_mtok
                + tokens * (1 - figures.input_share) * price.output_usd_per_mtok) / 1e6

    inp = round(figures.tokens * figures.input_share)
    return Estimate(tokens=figures.tokens, input_tokens=inp, output_tokens=figures.tokens - inp,
                    low_tokens=figures.low_tokens, high_tokens=figures.high_tokens, calls=figures.calls,
                    iterations=figures.iterations, cost_usd=cost(figures.tokens), low_cost_usd=cost(figures.low_tokens),
                    high_cost_usd=cost(figures.high_tokens), source=figures.source)


def estimate_text(e: Estimate, price: Price) -> str:
    text = (f"a lab run takes about {_k(e.tokens)} tokens ({_k(e.input_tokens)} in / {_k(e.output_tokens)} out; "
            f"{_k(e.low_tokens)} to {_k(e.high_tokens)} across CritPt), {e.calls} calls, {e.iterations} iterations "
            f"({e.source})")
    if e.cost_usd is None:
        return text + "; its cost is unknown (unpriced)"
    return text + f": about ${e.cost_usd:,.2f} (${e.low_cost_usd:,.2f} to ${e.high_cost_usd:,.2f}) at this price"


def _k(n: int) -> str:
    """600000 -> '600K', 3900000 -> '3.9M', 10714 -> '10.7K'."""
    for div, unit in ((1_000_000, "M"), (1_000, "K")):
        if n >= div:
            return f"{n / div:.1f}".rstrip("0").rstrip(".") + unit
    return str(n)


def lines(report: Preflight) -> list[str]:
    """The report as the terminal shows it: a heading, one line per finding, the conclusion."""
    where = f" at {report.api_base}" if report.api_base else ""
    out = [f"physlab models check {report.model}{where}"]
    shown = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}
    out += [f"{shown[f.status]:5} {f.check}: {f.text}" for f in report.findings]
    if report.requests:
        requests = f"{report.requests} request" + ("s" if report.requests != 1 else "")
        out.append(f"(this check: {requests}, {report.tokens:,} tokens, ${report.cost_usd:.4f})")
    if report.ok:
        flags = f" --api-base {report.api_base}" if report.api_base else ""
        if report.output_mode and report.output_mode != "tool":
            flags += f" --output-mode {report.output_mode}"
        out.append(f"lab run: can start (physlab solve PROBLEM --model {report.model}{flags})")
    else:
        out.append(f"lab run: would fail ({', '.join(report.failed())})")
    return out
