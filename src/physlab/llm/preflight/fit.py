"""What a preflight's numbers mean for a lab run, as pure functions from what was found to a
finding: the price PhysLab will charge, the context window and output cap against the lab's prompts
and the seed's average call, and a lab run's tokens and cost by the seed's per-problem figures."""

from __future__ import annotations

from physlab.llm.defaults import ModelDefaults
from physlab.llm.preflight.report import CHARS_PER_TOKEN, Estimate, Finding, LabPrompts, LabRunFigures, Price, k

LIMIT_PROBE_CAP = 10_000_000  # an output cap above any model's: the refusal says the real one, or the window


def price_finding(spec: str, defaults: ModelDefaults, *, in_process: bool, stated: Price | None = None
                  ) -> tuple[Price, Finding]:
    """The price of ``spec`` as calls.jsonl would price its replies (physlab.llm.pricing): the cost a
    proxy stated, the registry's, genai-prices', else none."""
    from physlab.llm.pricing import Pricer

    if stated is not None:
        per_m = (stated.stated_usd_per_token or 0) * 1e6
        return stated, Finding(check="price", status="ok", text=(
            "the server states each reply's cost (x-litellm-response-cost) and PhysLab charges what it "
            f"states: about ${per_m:,.2f} per million tokens in this check"))
    if in_process or defaults.free:
        free = Price(input_usd_per_mtok=0.0, output_usd_per_mtok=0.0, source="free")
        return free, Finding(check="price", status="ok",
                             text="free" + (" (the model registry says so)" if defaults.free else ""))
    inp, out = Pricer(spec, defaults).per_token()
    if defaults.has_price or inp or out:
        source = "registry" if defaults.has_price else "genai-prices"
        price = Price(input_usd_per_mtok=inp * 1e6, output_usd_per_mtok=out * 1e6, source=source)
        return price, Finding(check="price", status="ok",
                              text=f"${inp * 1e6:,.2f} in / ${out * 1e6:,.2f} out per million tokens ({source})")
    return Price(source="unpriced"), Finding(check="price", status="warn", text=(
        f"unpriced: no price is known for '{spec.split(':', 1)[1]}', so its cost counts as $0 and --max-cost "
        "cannot hold (give input_usd_per_mtok and output_usd_per_mtok, or free: true, in the model registry)"))


def lab_prompts_finding(lab: LabPrompts) -> Finding:
    how = (f"counted by {lab.counted_by}, the requests as sent in {lab.mode} mode with their tools and schema"
           if lab.counted_by else f"estimated at {CHARS_PER_TOKEN} characters a token, instructions and context only")
    return Finding(check="lab prompts", status="ok", text=(
        f"for {lab.problem}: the largest first request is ~{k(lab.largest_tokens)} tokens ({lab.largest_role}); "
        f"the lab cannot shrink its prompts below ~{k(lab.floor_tokens)} ({lab.floor_role}) ({how})"))


def window_finding(told: int | None, found: int | None, *, lab: LabPrompts | None, min_reply: int,
                   figures: LabRunFigures, refusal: str | None = None, how: str | None = None
                   ) -> tuple[int | None, Finding]:
    """The context window (discovered, else told by the registry) against the lab's prompts: a
    failure when the lab's shortest prompt and a useful reply do not fit, a warning below the
    seed's average call. ``how`` says how a window was discovered other than by a cap's refusal."""
    window = found or told
    if window is None:
        why = f" (it refused a {LIMIT_PROBE_CAP:,}-token cap without saying: {refusal})" if refusal else ""
        return None, Finding(check="context window", status="warn", text=(
            f"not said by the server{why}, so the lab's prompts cannot be checked against it (context_window "
            "in the model registry tells it)"))
    how = ("told by the model registry" if window == told and found in (None, told)
           else "discovered: " + (how or f"the server's refusal of a {LIMIT_PROBE_CAP:,}-token cap"))
    if lab is not None and window < lab.floor_tokens + min_reply:
        return window, Finding(check="context window", status="fail", text=(
            f"{window:,} tokens ({how}): too small for the lab's prompts, which need ~{k(lab.floor_tokens + min_reply)}"
            f" ({lab.floor_role} at its shortest with a {min_reply}-token reply)"))
    if window < figures.call_input + figures.call_output:
        return window, Finding(check="context window", status="warn", text=(
            f"{window:,} tokens ({how}): below the lab's average call (~{k(figures.call_input)} in + "
            f"~{k(figures.call_output)} out, {figures.source}); expect shortened contexts and cut replies"))
    return window, Finding(check="context window", status="ok", text=f"{window:,} tokens ({how})")


def cap_finding(told: int | None, found: int | None, *, window: int | None, min_reply: int,
                figures: LabRunFigures, refusal: str | None = None, took_cap: bool = False, field: str = ""
                ) -> tuple[int | None, Finding]:
    """The output cap (discovered, else told by the registry): a failure below a useful reply, a
    warning below the seed's average reply. ``field`` says the field the server reads it from."""
    cap = found or told
    also = f"; {field}" if field else ""
    if cap is None and refusal:
        return None, Finding(check="output cap", status="warn", text=(
            f"not said: the server refused a {LIMIT_PROBE_CAP:,}-token cap without saying its maximum ({refusal})"
            + also))
    if cap is None:
        said = (f"none of its own (it took a {LIMIT_PROBE_CAP:,}-token cap): a reply may run to the end of the window "
                "unless the request's cap stops it" if took_cap else
                "none of its own: a reply may use what the window leaves" if window
                else "not said by the server (a cut reply is re-asked and continued during a run)")
        return None, Finding(check="output cap", status="ok", text=said + also)
    how = "told by the model registry" if cap == told and found in (None, told) else "discovered"
    if cap < min_reply:
        return cap, Finding(check="output cap", status="fail",
                            text=f"{cap:,} tokens ({how}): below the smallest useful reply ({min_reply}){also}")
    if cap < figures.call_output:
        return cap, Finding(check="output cap", status="warn", text=(
            f"{cap:,} tokens ({how}): below the lab's average reply (~{k(figures.call_output)}, {figures.source}); "
            f"longer replies are cut, then re-asked or continued{also}"))
    return cap, Finding(check="output cap", status="ok", text=f"{cap:,} tokens ({how}){also}")


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


def estimate_finding(e: Estimate) -> Finding:
    text = (f"a lab run takes about {k(e.tokens)} tokens ({k(e.input_tokens)} in / {k(e.output_tokens)} out; "
            f"{k(e.low_tokens)} to {k(e.high_tokens)} across CritPt), {e.calls} calls, {e.iterations} iterations "
            f"({e.source})")
    if e.cost_usd is None:
        return Finding(check="estimate", status="ok", text=text + "; its cost is unknown (unpriced)")
    spread = f"${e.low_cost_usd or 0:,.2f} to ${e.high_cost_usd or 0:,.2f}"
    return Finding(check="estimate", status="ok", text=text + f": about ${e.cost_usd:,.2f} ({spread}) at this price")
