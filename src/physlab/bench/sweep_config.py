"""A sweep's configuration (`physlab bench run`'s flags, typed): its grid (suite, strategies,
models, repeats, tools arms), budget and parameters, where it writes, and how its cells run (in
this process or on a Ray cluster). Every executor of cells reads it (the sweep, a cell, a Ray node).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from physlab.llm.usage import Budget
from physlab.run.options import ProtocolName
from physlab.tools.choice import ToolChoice


class SweepConfig(BaseModel):
    suite: str
    strategies: list[str]
    models: list[str]
    repeats: int = Field(default=1, ge=1)
    concurrency: int = Field(default=8, ge=1, description="Cells running at once in this process.")
    max_inflight: int | None = Field(default=None, ge=1,
                                     description="Model requests in flight at once (default: concurrency).")
    sandbox_workers: int | None = Field(default=None, ge=1,
                                        description="Sandbox runs at once (default: CPU count).")
    budget: Budget = Field(default_factory=Budget)
    db: Path = Path("results.sqlite")
    workspace_root: Path | None = Field(default=None, description="Default: <db stem>_runs beside the db.")
    api_base: str | None = None
    api_key_env: str | None = None
    seed: int = 0
    params: dict[str, Any] = Field(default_factory=dict)
    role_models: dict[str, str] = Field(default_factory=dict, description="Roles played by another model.")
    judge: str | None = Field(default=None, description="provider:model grading answers whose reference is prose "
                                                        "(--judge); its cells are reported apart.")
    output_mode: str | None = None
    tools: list[ToolChoice] = Field(default_factory=list, description="The lab's tools, one arm each (cells for "
                                                                      "every one); none: each problem's default.")
    protocol: ProtocolName = Field(default="physlab", description="physlab: PhysLab's defaults; paper: every "
                                                                  "strategy at its published setting (--param "
                                                                  "given still wins). Other cells than physlab's.")
    name: str = ""
    retry_failed: bool = True
    lease_s: float = Field(default=120.0, gt=0)
    executor: Literal["local", "ray"] = Field(
        default="local", description="local: the cells run in this process; ray: on the nodes of a Ray cluster "
                                     "(physlab[ray]), this process writing the database.")
    ray_address: str | None = Field(default=None, description="The Ray cluster to join (ray.init's address; "
                                                               "None: Ray's own choice, RAY_ADDRESS or a local one).")

    def runs_dir(self) -> Path:
        if self.workspace_root is not None:
            return self.workspace_root
        return self.db.resolve().parent / f"{self.db.stem}_runs"
