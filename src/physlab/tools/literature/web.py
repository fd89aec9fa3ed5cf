"""Web search for a role's agent: pydantic-ai's WebSearch capability, for providers that search natively.

Off unless asked. When asked, a role's agent gets ``pydantic_ai.capabilities.WebSearch`` with the
provider's own (native) web search only: ``local=False``, so no local fallback (DuckDuckGo) ever
sends a query from this machine. A model whose provider has no native web search (by pydantic-ai's
profile of that model) gets nothing, and the run is told so in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai import WebSearchTool
from pydantic_ai.capabilities import AbstractCapability, WebSearch
from pydantic_ai.models import Model


@dataclass
class WebSearchChoice:
    """What a role's agent gets for web search: the capabilities to pass to ``Agent(capabilities=...)``
    and, when web search was asked for but cannot be given, the one line saying why."""

    capabilities: list[AbstractCapability] = field(default_factory=list)
    notice: str | None = None


def supports_web_search(model: Model) -> bool:
    """Whether the model's provider searches the web itself (pydantic-ai's profile of the model)."""
    return WebSearchTool in model.profile.get("supported_native_tools", frozenset())


def web_search(model: Model, enabled: bool, *, max_uses: int | None = None) -> WebSearchChoice:
    """The web search a role's agent gets: none unless ``enabled`` and the provider supports it."""
    if not enabled:
        return WebSearchChoice()
    if not supports_web_search(model):
        return WebSearchChoice(notice=f"web search: {model.system}:{model.model_name} has no built-in web search "
                                      "(pydantic-ai lists Anthropic, OpenAI Responses, Google, Groq, xAI, OpenRouter); "
                                      "running without it")
    return WebSearchChoice(capabilities=[WebSearch(local=False, max_uses=max_uses)])
