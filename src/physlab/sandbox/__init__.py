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
scipy, mpmath and matplotlib and fork a fresh child per run.
"""

from physlab.sandbox.types import SandboxLimits, SandboxResult
from physlab.sandbox.core import Sandbox, default_sandbox  # noqa: E402 - after the types

__all__ = ["Sandbox", "SandboxLimits", "SandboxResult", "default_sandbox"]
