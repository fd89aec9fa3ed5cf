"""The output cap a request to an OpenAI-compatible server (``openai:`` at an ``--api-base``) is sent
with when nothing else sets one (no ``max_output_tokens`` in the model registry, no budget nearer):
such a server may have no cap of its own and let a model that does not stop generate to the end of
its context (issue #47: a 270M model behind llama-cpp-python wrote 8,178 tokens to "Reply with:
ready"). A provider's own API caps each model's reply itself (pydantic-ai knows Anthropic's). A reply cut at the cap is
asked again with twice the cap (``truncation_retries``), then continued, so a default that errs
small costs a re-ask, not an answer.

The default is PhysLab's choice: 16,384 tokens holds the seed's average reply (seed 000 §5: about
600K tokens a problem, half of them out, over 28 calls: ~10.7K out a call) with room; roles whose
reply is a short decision or a formatted answer get less.
"""

from __future__ import annotations

DEFAULT_OUTPUT_CAP = 16_384
ROLE_OUTPUT_CAPS: dict[str, int] = {
    "orchestrator": 4_096,  # the lab's routing decision: a turn's few tool calls, not research
    "formatter": 8_192,  # the final answer written out from what the lab found
    "preflight": 256,  # `physlab models check`'s probes ask for a word or a number
}
SOURCE = ("PhysLab: 16,384 tokens holds the seed's average reply (seed 000 §5: ~10.7K out a call) "
          "with room; a reply cut at the cap is asked again with twice the cap")


def default_output_cap(role: str) -> int:
    """The cap ``role``'s requests carry when the model registry gives none."""
    return ROLE_OUTPUT_CAPS.get(role, DEFAULT_OUTPUT_CAP)


def described() -> str:
    """The defaults in one line (``physlab strategies show``)."""
    others = "; ".join(f"{role} {cap:,}" for role, cap in ROLE_OUTPUT_CAPS.items() if role != "preflight")
    return f"{DEFAULT_OUTPUT_CAP:,} tokens ({others})"
