"""What PhysLab tells a user to try about output modes and commands, in one place: ``physlab models
check`` recommends from it, and a run that fails for the same reason says the same (issue #44: the
check recommended ``native`` while solve's hint said ``prompted``, and its suggested command left
out the ``--api-key-env`` it was given)."""

from __future__ import annotations

import shlex

# The order the check recommends in, and a failed run's hint lists the others in: tool calls where
# the server has them; then a JSON-schema response format (vLLM's guided decoding, OpenAI); then a
# schema the server holds the reply to (llama.cpp's json_object + schema: small local models); then
# JSON in the text, which only a model that follows instructions writes.
PREFERENCE = ("tool", "native", "constrained", "prompted")
WHAT = {
    "tool": "tool calls",
    "native": "a JSON-schema response format: vLLM, OpenAI",
    "constrained": "a schema the server holds the reply to: llama.cpp",
    "prompted": "JSON in the text",
}


def other_modes(failed: str | None) -> str:
    """The output modes to try after ``failed`` (None: tool calls were refused), in the check's
    order, and the command that tells which one works."""
    after = [m for m in PREFERENCE if m not in ("tool", failed)]
    tried = ", ".join(f"--output-mode {m} ({WHAT[m]})" for m in after)
    return f"try {tried}; `physlab models check MODEL --api-base URL` finds the one that works on this server"


TOOLS_HINT = (other_modes(None) + ", or enable tool calling on the server (vLLM: --enable-auto-tool-choice "
              "--tool-call-parser NAME)")


def solve_command(model: str, *, api_base: str | None = None, api_key_env: str | None = None,
                  output_mode: str | None = None, problem: str = "PROBLEM") -> str:
    """The ``physlab solve`` command that runs ``model`` as it was checked (every flag the check was
    given that a run needs: the server, the key's variable, the output mode that works)."""
    parts = ["physlab", "solve", problem, "--model", model]
    if api_base:
        parts += ["--api-base", api_base]
    if api_key_env:
        parts += ["--api-key-env", api_key_env]
    if output_mode and output_mode != "tool":
        parts += ["--output-mode", output_mode]
    return " ".join(p if p == problem else shlex.quote(p) for p in parts)
