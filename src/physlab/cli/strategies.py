"""`physlab strategies list` and `physlab strategies show NAME`: every strategy, and each parameter's
default under each --protocol, its range, its meaning and where the default comes from. Heavy modules
are imported inside the commands."""

from __future__ import annotations

from typing import Any

import typer

strategies_app = typer.Typer(help="The strategies (scaffolds) and their parameters.", no_args_is_help=True)


@strategies_app.command("list")
def list_strategies() -> None:
    """Every --strategy name, with what it does."""
    from physlab.strategies import registry

    for name in registry.names():
        typer.echo(f"{name:14s} {_summary(registry.get(name))}")


@strategies_app.command("show")
def show_strategy(name: str = typer.Argument(..., help="A strategy name (see `physlab strategies list`)."),
                  as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Every parameter of a strategy: its default under each --protocol and its range, what it means, where
    the default comes from."""
    import json

    from physlab.run.options import PROTOCOLS
    from physlab.strategies import registry
    from physlab.strategies.params import cite
    from physlab.strategies.protocols import defaults_under

    kind = registry.get(name)
    params = kind.Params.model_json_schema().get("properties", {})
    under = {protocol: defaults_under(kind.Params, name, protocol) for protocol in PROTOCOLS}
    for key, prop in params.items():  # fields the lab inherits from its own settings say it beside them
        prop["description"] = prop.get("description") or kind.Params.descriptions.get(key, "")
        prop["source"] = cite(prop.get("source") or kind.Params.sources.get(key, ""))
        prop["defaults"] = {protocol: under[protocol].get(key) for protocol in PROTOCOLS}
        if presets := kind.Params.preset_values(key):      # its value under each named setting
            prop["presets"] = presets
            prop["departs"] = len({json.dumps(v, sort_keys=True) for v in presets.values()}) > 1
    from physlab.llm import output_caps

    cap = {"default": output_caps.DEFAULT_OUTPUT_CAP, "by_role": output_caps.ROLE_OUTPUT_CAPS,
           "source": output_caps.SOURCE}
    if as_json:
        typer.echo(json.dumps({"strategy": name, "summary": _summary(kind), "params": params,
                               "output_cap": cap}, indent=2))
        return
    typer.echo(f"{name}: {_summary(kind)}")
    typer.echo("parameters (--param KEY=VALUE, or a --config YAML file):" if params else "no parameters")
    for key, prop in params.items():
        typer.echo(f"  {key} = {_shown(prop.get('default'))}  ({_kind(prop)})")
        for protocol, value in prop["defaults"].items():  # a preset's own line below says it for the lab
            if protocol != "physlab" and value != prop["defaults"]["physlab"] and not prop.get("departs"):
                typer.echo(f"      --protocol {protocol}: {_shown(value)}")
        typer.echo(f"      {prop['description']}")
        typer.echo(f"      default from: {prop['source']}")
        if prop.get("departs"):
            typer.echo("      departs from the paper: " + ", ".join(
                f"preset={preset} {_shown(value)}" for preset, value in prop["presets"].items()))
    typer.echo(f"output cap of a request to an OpenAI-compatible server (--api-base) when the model registry gives "
               f"no max_output_tokens: {output_caps.described()} ({output_caps.SOURCE})")


def _summary(kind: Any) -> str:
    return (kind.__doc__ or "").strip().splitlines()[0] if kind.__doc__ else ""


def _kind(prop: dict[str, Any]) -> str:
    """'integer >= 1', 'number in [0, 2] or unset', 'expert|novice|default': a JSON-schema property."""
    kinds = []
    for p in prop.get("anyOf", [prop]):
        text = "|".join(map(str, p["enum"])) if "enum" in p else {"null": "unset"}.get(p.get("type"), p.get("type", "?"))
        lo, hi, above = p.get("minimum"), p.get("maximum"), p.get("exclusiveMinimum")
        text += (f" in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else f" >= {lo:g}" if lo is not None
                 else f" > {above:g}" if above is not None else f" <= {hi:g}" if hi is not None else "")
        kinds.append(text)
    return " or ".join(kinds)


def _shown(value: Any) -> str:
    """A default as it would be written after --param KEY= (YAML)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}" if value else "{}"
    return str(value)


def register(app: typer.Typer) -> None:
    app.add_typer(strategies_app, name="strategies")
