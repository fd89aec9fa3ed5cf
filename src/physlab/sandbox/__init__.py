"""Run untrusted Python: isolated, limited, fast.

Usage::

    from physlab.sandbox import Sandbox, SandboxLimits
    sb = Sandbox()                       # backend chosen automatically
    res = await sb.run("print(1+1)", limits=SandboxLimits(timeout_s=5))
    res = sb.run_sync("print(1+1)")      # blocking; fine from any thread or inside a running loop
    res = await sb.run(code, files={"in.json": b"{}"}, collect=["*.png"])   # files in / out
    await sb.aclose()                    # or rely on atexit: workers die with this process

Backends: ``bwrap`` (bubblewrap; no network, own PID/mount/user namespaces per run, read-only system
and Python, private tmpfs work dir, scrubbed environment) and the weaker ``rlimit`` fallback (limits,
scrubbed environment, private temp dir, process cleanup). ``auto`` probes bubblewrap once;
``PHYSLAB_SANDBOX_BACKEND`` forces one. Runs go to warm workers that have imported sympy, numpy,
scipy, mpmath and matplotlib (or, for a one-run command, only what ``preload`` names) and fork a
fresh child per run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from physlab.lazy import lazy_exports

if TYPE_CHECKING:
    from physlab.sandbox.core import Sandbox, default_sandbox
    from physlab.sandbox.types import SandboxLimits, SandboxResult

# Each name is imported from its module on first use: the command line imports this package to register
# its commands, and a help text should not pay for the workers' machinery.
_FROM: dict[str, tuple[str, ...]] = {
    "physlab.sandbox.types": ("SandboxLimits", "SandboxResult"),
    "physlab.sandbox.core": ("Sandbox", "default_sandbox"),
}
__all__ = ["Sandbox", "SandboxLimits", "SandboxResult", "default_sandbox"]

__getattr__, __dir__ = lazy_exports(__name__, _FROM)
