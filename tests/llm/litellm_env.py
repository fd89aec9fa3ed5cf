"""Where the LiteLLM proxy for the integration test lives: ``$PHYSLAB_LITELLM`` (a ``litellm``
executable), else one on the PATH, else a virtual environment of its own under
``~/.cache/physlab/litellm-proxy``, made on first use from tests/litellm-proxy-requirements.txt
(litellm pins openai<3 and PhysLab needs openai>=3.31: the proxy cannot live in PhysLab's
environment, and in production it is a separate server anyway)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[1] / "litellm-proxy-requirements.txt"
VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "physlab" / "litellm-proxy"


def litellm_executable() -> Path:
    if env := os.environ.get("PHYSLAB_LITELLM"):
        return Path(env)
    if found := shutil.which("litellm"):
        return Path(found)
    exe = VENV / "bin" / "litellm"
    if not exe.exists():
        VENV.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "-r", str(REQUIREMENTS)], check=True,
                       timeout=1800)
    return exe
