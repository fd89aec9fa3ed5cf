"""Resuming a run as it was made: its recorded options, with what a flag given now changes (said,
one line each), and the check that the run's models would go where they went, with the key they
carried -- or one line saying why not (exit 2) before anything of the run changes.

`physlab solve --resume DIR` and the dashboard's Resume button both come here: the button runs the
same check before it starts its process, and that process is `physlab solve --resume DIR`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from physlab.errors import UserError
from physlab.llm.defaults import ModelRegistry
from physlab.run.options import RunOptions, merge
from physlab.run.record import RunStart, Server, read_start, recorded_options


def resume_options(ws: Path, given: Mapping[str, Any]) -> tuple[RunOptions, str | None]:
    """(the options to continue the run in ``ws`` with, where its problem was loaded from): the
    recorded ones with the ones ``given`` over them (only those the command line gave). What they
    change, the runner says as the resume starts (:func:`physlab.run.options.differences`)."""
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
