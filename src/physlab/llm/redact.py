"""Secrets out of what a server says: the one redaction every server-provided text goes through
before PhysLab prints it or keeps it (calls.jsonl, metrics.json, state.json, LOG.md, the run's git
history, `models check`, the CritPt export).

A careless proxy answers 401 with "Incorrect API key provided: <the key>", and may pass on an
upstream's key in its message. :func:`redact` replaces the keys in use (which the caller names) and
any token-shaped string (the forms API keys and bearer tokens are issued in) with ``[redacted]``.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET = 8  # a shorter "key" would redact ordinary words; no provider issues one

# The shapes keys and tokens are issued in (providers' documented prefixes), and a bearer token or
# api_key value written out in a message, whatever its shape.
_TOKENS = re.compile(
    r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{10,}"               # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"   # GitHub
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"                    # AWS access key ids
    r"|\bAIza[0-9A-Za-z_\-]{30,}"                        # Google API keys
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"                  # Slack
    r"|\bhf_[A-Za-z0-9]{20,}"                            # Hugging Face
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # JSON web tokens
)
_SAID = re.compile(r"(?i)(\bbearer\s+|\b(?:x-)?api[_-]?key[\"']?\s*[:=]\s*[\"']?)([^\s\"',;)]{8,})")


def redact_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with each of ``secrets`` and every token-shaped string replaced by ``[redacted]``."""
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _TOKENS.sub(REDACTED, text)
    return _SAID.sub(lambda m: m.group(1) + REDACTED, text)


def redact(value: Any, *secrets: str) -> Any:
    """``value`` (a server's message, or its JSON answer: strings, mappings, lists) with the keys in
    use (``secrets``) and token-shaped strings redacted, keys and values alike."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {redact(k, *secrets): redact(v, *secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, *secrets) for v in value]
    return value
