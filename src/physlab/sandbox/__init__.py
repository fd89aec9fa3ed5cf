"""Run untrusted Python: isolated, limited, fast.

Usage::

    from physlab.sandbox import Sandbox, SandboxLimits
    sb = Sandbox()                       # backend chosen automatically
    res = await sb.run("print(1+1)", limits=SandboxLimits(timeout_s=5))
    res = sb.run_sync("print(1+1)")      # from synchronous code (not from inside an event loop)
"""

from physlab.sandbox.types import SandboxLimits, SandboxResult
from physlab.sandbox.core import Sandbox, default_sandbox

__all__ = ["Sandbox", "SandboxLimits", "SandboxResult", "default_sandbox"]
