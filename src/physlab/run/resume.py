"""Resuming a run as it was made: its recorded options, with what a flag given now changes (said,
one line each), and the check that the run's models would go where they went, with the key they
carried -- or one line saying why not (exit 2) before anything of the run changes.

A record is untrusted input: run directories are shared, and run.json says where the requests go
(the problem, every prompt, and the key variable's value as the bearer token) and which folder the
lab indexes. A record written on this machine and not edited since carries its seal
(:mod:`physlab.run.seal`) and resumes as it says. Any other is followed only with the user's word
(``--yes``, or the options given again on the command line; the dashboard asks) when it chooses a
server that is neither the provider's own nor on this machine, a key variable that is neither the
provider's nor the registry's, a model registry, a corpus folder or a literature server.

`physlab solve --resume DIR` and the dashboard's Resume button both come here: the button runs the
same check before it starts its process, and that process is `physlab solve --resume DIR`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from physlab.errors import UserError
from physlab.llm.defaults import ModelRegistry
from physlab.run.options import RunOptions, merge, registry_path
from physlab.run.record import RunStart, Server, options_file, read_start, recorded_options, written_here


class NeedsConfirmation(UserError):
    """A resume of a record not written here that chooses where requests, keys or files go: one line
    saying what it chooses, and how to confirm it."""


def resume_options(ws: Path, given: Mapping[str, Any], *, yes: bool = False) -> tuple[RunOptions, str | None]:
    """(the options to continue the run in ``ws`` with, where its problem was loaded from): the
    recorded ones with the ones ``given`` over them (only those the command line gave). What they
    change, the runner says as the resume starts (:func:`physlab.run.options.differences`).

    A record not written on this machine (or edited since) that chooses where the run's requests,
    key or files go is refused with :class:`NeedsConfirmation` unless ``yes`` or those options are
    ``given`` again (:func:`record_choices`)."""
    recorded, problem_spec = recorded_options(ws)
    if recorded is None:
        if "model" not in given:
            raise UserError("this run recorded no options to resume with (it was made before PhysLab recorded "
                            "them): give --model (and --api-base, --api-key-env as it was made)", path=ws,
                            field="--resume")
        if "strategy" not in given:
            raise UserError("this run recorded no options to resume with (it was made before PhysLab recorded "
                            "them): give --strategy", path=ws, field="--resume")
        recorded = RunOptions(strategy=given["strategy"], model=given["model"])
        return merge(recorded, given), problem_spec
    options = merge(recorded, given)
    if not yes and not written_here(ws):
        chosen = record_choices(options, registry_for(options), given)
        if chosen:
            raise NeedsConfirmation(
                f"{options_file(ws).name} was not written by PhysLab on this machine, or was edited since; resumed as "
                f"it says, the run would use {'; '.join(chosen)}. Check them, then give --yes to go on (or give those "
                f"options again: {', '.join(_flags_for(chosen))})", path=ws, field="--resume")
    return options, problem_spec


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (localhost, 127.0.0.0/8, ::1, or ::ffff:127.x.y.z)."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def record_choices(options: RunOptions, registry: ModelRegistry, given: Mapping[str, Any]) -> list[str]:
    """What ``options`` -- read from a record, with ``given`` over them -- choose that a received
    record must not choose unasked, one phrase each: a server that is neither the provider's own nor
    on this machine, a key variable that is neither the provider's nor the registry's, a model
    registry, a corpus folder, a literature server. An option ``given`` now is the user's own."""
    from physlab.llm.models import endpoint_of

    out: list[str] = []
    registry_recorded = (options.models_config is not None and "models_config" not in given
                         and options.models_config != registry_path(None))
    if registry_recorded:
        out.append(f"the model registry {options.models_config}")
    specs = dict.fromkeys([options.model, *options.role_models.values(), *registry.roles.values()])
    for spec in specs:
        found = endpoint_of(spec, registry, options.api_base, options.api_key_env)
        if found is None:
            continue
        base, env = found
        own = endpoint_of(spec, ModelRegistry())
        provider_env = own[1] if own is not None else None
        entry = registry.defaults_for(spec)
        base_recorded = registry_recorded if entry.api_base is not None else "api_base" not in given
        env_recorded = registry_recorded if entry.api_key_env else "api_key_env" not in given
        if base is not None and base_recorded and not is_loopback(base):
            out.append(f"the server {base} for {spec} (it is sent the problem and every prompt)")
        if env and env_recorded and env != provider_env:
            out.append(f"the key in ${env} for {spec} (sent as the bearer token to {_where(base)})")
    tools = options.tools
    if tools is not None and "tools" not in given:
        if tools.corpus:
            out.append(f"the corpus folder {tools.corpus} (indexed, and its notes shown to the models)")
        if tools.literature and tools.literature_url:
            out.append(f"the literature server {tools.literature_url}")
    return list(dict.fromkeys(out))


def _flags_for(chosen: list[str]) -> list[str]:
    flags = {"the model registry": "--models-config", "the server": "--api-base", "the key in": "--api-key-env",
             "the corpus folder": "--tools", "the literature server": "--tools"}
    return list(dict.fromkeys(flag for phrase in chosen for start, flag in flags.items() if phrase.startswith(start)))


def resume_lines(options: RunOptions, registry: ModelRegistry) -> list[str]:
    """What a resume shows before its first request: where each model's requests go, with which key
    variable, and the lab's tools."""
    from physlab.llm.models import endpoint_of

    lines = []
    for spec in dict.fromkeys([options.model, *options.role_models.values(), *registry.roles.values()]):
        found = endpoint_of(spec, registry, options.api_base, options.api_key_env)
        if found is not None:
            base, env = found
            lines.append(f"{spec} -> {_where(base)}, " + (f"the key in ${env}" if env else "no key"))
    if options.tools is not None:
        lines.append(f"tools: {options.tools}")
    return lines


def registry_for(options: RunOptions) -> ModelRegistry:
    """The model registry a run reads: the file its options name, else none (a run that read no
    registry is not changed by one set in the environment since)."""
    return ModelRegistry.load(options.models_config) if options.models_config else ModelRegistry()


def servers_for(options: RunOptions, registry: ModelRegistry) -> dict[str, Server]:
    """Where each model of the run sends its requests, and the variable of the key it sends (None
    when that variable is not set: no key is sent)."""
    from physlab.llm.models import endpoint_of

    specs = dict.fromkeys([options.model, *options.role_models.values(), *registry.roles.values()])
    out: dict[str, Server] = {}
    for spec in specs:
        found = endpoint_of(spec, registry, options.api_base, options.api_key_env)
        if found is not None:
            base, env = found
            out[spec] = Server(api_base=base, key_env=env if env and os.environ.get(env) else None)
    return out


def check_servers(ws: Path, options: RunOptions, registry: ModelRegistry, start: RunStart | None = None) -> None:
    """Refuse (one UserError line) a resume whose model would now go to another server than the
    run's -- the registry it read, or the environment, changed -- or would go without the key it
    carried. A server chosen on purpose (``--api-base``, ``--models-config`` given now) is not
    checked: the flag said so."""
    if options.api_key_env and not os.environ.get(options.api_key_env):
        raise UserError(f"the key's variable {options.api_key_env} is not set; set it (or name the key's variable "
                        "with --api-key-env)", path=ws, field="--api-key-env")
    start = start or read_start(ws)
    if start is None:
        return
    was, now = start.servers, servers_for(options, registry)
    same_choice = (options.api_base, options.models_config) == (start.options.api_base, start.options.models_config)
    for spec, server in was.items():
        if spec not in now:
            continue
        if same_choice and now[spec].api_base != server.api_base:
            raise UserError(f"this run's requests to {spec} went to {_where(server.api_base)}; resumed now they "
                            f"would go to {_where(now[spec].api_base)} (its model registry or environment "
                            f"changed). Give --api-base to choose, or restore the registry", path=ws, field="--resume")
        if server.key_env and not now[spec].key_env:
            env = server.key_env
            raise UserError(f"this run's requests to {spec} carried the key in {env}, which is not set; set {env} "
                            "(or name the key's variable with --api-key-env)", path=ws, field="--api-key-env")


def _where(base: str | None) -> str:
    return base or "the provider's own endpoint"
