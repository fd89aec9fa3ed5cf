"""`physlab models`: the strategies and the built-in scripted models, and `physlab models check
MODEL`, a preflight of a model before a long run (physlab.llm.preflight). Heavy modules are
imported inside the commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from physlab.llm.defaults import ModelRegistry
    from physlab.llm.preflight.report import Finding

DEFAULT_PROBLEM = "examples/quantum_error_correction_main"  # CritPt's own example: a typical problem's size


def heading_of(model: str, api_base: str | None, registry: ModelRegistry) -> str:
    """The check's first line, before any request (the server a registry entry names, else --api-base)."""
    from physlab.llm.models import RunModels
    from physlab.llm.preflight import Preflight, heading

    try:
        base = RunModels.api_base_for(model, registry.defaults_for(model), api_base)
    except Exception:  # noqa: BLE001 - a bad name or URL is said by the check itself, in one line
        base = api_base
    return heading(Preflight(model=model, api_base=base))


def register(app: typer.Typer) -> None:
    models_app = typer.Typer(invoke_without_command=True, no_args_is_help=False, add_completion=False)

    @models_app.callback()
    def models(ctx: typer.Context) -> None:
        """List the strategies and the built-in scripted models (no key needed).

        `physlab models check MODEL` checks a model before a long run."""
        if ctx.invoked_subcommand is not None:
            return
        from physlab.llm.scripted import scenario_names
        from physlab.strategies import registry

        typer.echo("strategies: " + ", ".join(registry.names()) + " (see `physlab strategies show NAME`)")
        typer.echo("scripted models (--model scripted:NAME):")
        for name, description in sorted(scenario_names().items()):
            typer.echo(f"  {name:22s} {description}")
        typer.echo("real models: provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, "
                   "google-gla:gemini-2.5-pro; openai:NAME --api-base URL for vLLM/Ollama/LiteLLM")

    @models_app.command("check")
    def check(
        model: str = typer.Argument(..., help="provider:model, e.g. openai:qwen3-32b."),
        api_base: str | None = typer.Option(None, "--api-base", help="The model's server (as for solve)."),
        api_key_env: str | None = typer.Option(None, "--api-key-env",
                                                  help="Environment variable holding the API key."),
        problem: str | None = typer.Option(
            None, "--problem", help="The problem a run would solve (file, FILE#ID or SUITE/ID): its lab prompts are "
            f"held against the context window (default: {DEFAULT_PROBLEM})."),
        models_config: Path | None = typer.Option(None, "--models-config", envvar="PHYSLAB_MODELS_CONFIG",
                                                     help="Model registry YAML (context window, prices, ...)."),
        as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    ) -> None:
        """Check MODEL before a long run in a few tiny requests (exit 0 a lab run can start, 1 it would fail).

        One line per finding, each as soon as it is known: reachable and authorised, the system message, tool
        calling and native, constrained and prompted output (the --output-mode to use), the lab's first requests
        counted by the server's tokenizer, context window and output cap (and the field the server reads it
        from), one request at a time or several, streaming, usage, cached tokens, the price PhysLab will charge,
        and a lab run's tokens and cost by the seed's figures. Every probe is capped and bounded in time. Bad
        input exits 2."""
        import asyncio

        from physlab.lab.footprint import lab_prompts, lab_requests
        from physlab.llm.defaults import ModelRegistry
        from physlab.llm.preflight import check_model, finding_line, footer
        from physlab.problems import resolve_problem

        registry = ModelRegistry.load(models_config)
        label = problem or DEFAULT_PROBLEM
        public = resolve_problem(label).public()
        lab = lab_prompts(public, label)

        def said(finding: Finding) -> None:  # each line as soon as it is known: a check may take minutes
            typer.echo(finding_line(finding))

        if not as_json:
            typer.echo(heading_of(model, api_base, registry))
        report = asyncio.run(check_model(model, api_base=api_base, api_key_env=api_key_env, registry=registry,
                                         lab=lab, lab_requests=lambda mode: lab_requests(public, mode),
                                         on_finding=None if as_json else said))
        if as_json:
            typer.echo(report.model_dump_json(indent=2))
        else:
            for line in footer(report):
                typer.echo(line)
        raise typer.Exit(0 if report.ok else 1)

    app.add_typer(models_app, name="models")
