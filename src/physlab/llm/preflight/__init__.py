"""A preflight of a model before a long run (``physlab models check``): a handful of tiny requests
through the runs' own model seam (:mod:`.probes`) that say, one finding each, whether a lab run can
go: reachable and authorised, which output mode works, the limits the server says or the registry
tells, streaming, usage and cached tokens, the price PhysLab will charge, and what a lab run would
cost by the seed's per-problem figures (:mod:`.fit`).

A lab run would fail (``Preflight.ok`` is False) when the server cannot be reached or refuses the
key, when no output mode gives a structured answer, or when the context window cannot hold the
lab's smallest prompt for the problem with a useful reply. Everything else is a warning.
"""

from __future__ import annotations

from collections.abc import Callable

from physlab.llm.defaults import ModelRegistry
from physlab.llm.preflight import fit
from physlab.llm.preflight.probes import PREFLIGHT_MARK, PROBE_ROLE, PROBE_TOOL, Probes
from physlab.llm.preflight.report import (
    CHECKS,
    Finding,
    LabPrompts,
    LabRequests,
    LabRunFigures,
    Preflight,
    finding_line,
    footer,
    heading,
    lines,
)

__all__ = ["PREFLIGHT_MARK", "PROBE_ROLE", "PROBE_TOOL", "Finding", "LabPrompts", "LabRequests", "LabRunFigures",
           "Preflight", "check_model", "finding_line", "footer", "heading", "lines"]


async def check_model(spec: str, *, api_base: str | None = None, api_key_env: str | None = None,
                      registry: ModelRegistry | None = None, lab: LabPrompts | None = None,
                      lab_requests: LabRequests | None = None, figures: LabRunFigures | None = None,
                      on_finding: Callable[[Finding], None] | None = None) -> Preflight:
    """Check ``spec`` (at ``api_base``) as a lab run would use it, the lab's prompts for the problem
    being ``lab`` (estimated from characters) and ``lab_requests`` (the requests themselves in an
    output mode, which a server with a tokenizer counts). ``on_finding`` hears each finding as soon
    as it is found. Bad input (a malformed name, an unusable URL, a key variable that is not set) is
    a UserError before anything is sent."""
    from physlab.llm.models import check_model_name, parse_spec

    registry = registry or ModelRegistry()
    figures = figures or LabRunFigures()
    check_model_name(spec, api_base)
    defaults = registry.defaults_for(spec)
    report = Preflight(model=spec, api_base=api_base, api_key_env=api_key_env, lab_prompts=lab)
    report.listen(on_finding)
    provider, rest = parse_spec(spec)
    in_process = provider in ("scripted", "replay")
    probes = None
    if in_process:
        _in_process(report, provider, rest)
    else:
        probes = Probes(spec, api_base, api_key_env, registry, report, lab=lab_requests)
        await probes.run()

    if report.lab_prompts is not None:
        report.add(**fit.lab_prompts_finding(report.lab_prompts).model_dump())
    if report.status_of("context window") is None:
        report.context_window, found = fit.window_finding(
            defaults.context_window, report.context_window, lab=report.lab_prompts, min_reply=defaults.min_reply_tokens,
            figures=figures, refusal=report.limit_refusal, how=probes.window_how if probes else None)
        report.add(**found.model_dump())
    if report.status_of("output cap") is None:
        report.max_output_tokens, found = fit.cap_finding(
            defaults.truncation_max_output_tokens, report.max_output_tokens, window=report.context_window,
            min_reply=defaults.min_reply_tokens, figures=figures, refusal=report.limit_refusal,
            took_cap=bool(probes and probes.took_cap), field=probes.cap_said if probes else "")
        report.add(**found.model_dump())
    stated = report.price if report.price.source == "proxy" else None
    report.price, found = fit.price_finding(spec, defaults, in_process=in_process, stated=stated)
    report.add(**found.model_dump())
    report.estimate = fit.estimate(figures, report.price)
    report.add(**fit.estimate_finding(report.estimate).model_dump())
    report.findings.sort(key=lambda f: CHECKS.index(f.check))
    return report


def _in_process(report: Preflight, provider: str, rest: str) -> None:
    what = (f"scripted:{rest} is played in-process" if provider == "scripted"
            else f"replay:{rest} replays a recorded run")
    report.add("reachable", "ok", f"{what} (no server, no key)")
    report.output_mode = "tool"
    for check in ("tool calling", "native output", "constrained output", "prompted output"):
        report.add(check, "skip", "not asked of a deterministic model")
    report.add("output mode", "ok", "--output-mode tool (the default; a scenario plays tool calls)")
    for check in ("context window", "output cap", "concurrency", "streaming", "usage", "cached tokens"):
        report.add(check, "skip", "no server")
