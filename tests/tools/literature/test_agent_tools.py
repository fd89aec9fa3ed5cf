"""The literature tools as a role's agent gets them (pydantic-ai, with deterministic models), and web
search attached only when asked for and only where the provider has it."""

from __future__ import annotations

import json

from pydantic_ai import Agent, WebSearchTool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from physlab.tools.literature import Library, web_search


async def test_a_role_searches_reads_and_quotes_a_paper(standin, tmp_path):
    """A scripted model calls the tools as a surveyor would; what comes back is small typed JSON."""
    returned: list[dict] = []

    def surveyor(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                returned.append(json.loads(part.model_response_str()))
        step = len(returned)
        if step == 0:
            return ModelResponse(parts=[ToolCallPart("search_literature", {"query": "toric code anyons"})])
        if step == 1:
            key = returned[0]["hits"][0]["key"]
            return ModelResponse(parts=[ToolCallPart("read_paper", {"key": key, "query": "stabilizers"})])
        if step == 2:
            return ModelResponse(parts=[ToolCallPart("citations", {"key": "INSPIRE:448893"})])
        read = returned[1]
        return ModelResponse(parts=[TextPart(f"Quoting {read['key']}: {read['passages'][0]['text'][:60]}")])

    async with Library(standin.settings(), cache_dir=tmp_path) as lib:
        agent = Agent(FunctionModel(surveyor), tools=lib.tools())
        result = await agent.run("What are the toric code's stabilizers?")
        tool_names = {t.name for t in lib.tools()}
        quote = returned[1]["passages"][0]["text"][:60]
        assert lib.source_for(returned[1]["key"], quote) is not None
    assert tool_names == {"search_literature", "read_paper", "citations"}  # no corpus given: no search_corpus
    assert returned[0]["hits"][0]["key"] == "arXiv:quant-ph/9707021"
    assert returned[1]["text_from"] == "latex source" and len(returned[1]["passages"]) <= 4
    assert returned[2]["total"] == 2
    assert result.output.startswith("Quoting arXiv:quant-ph/9707021: ")


async def test_every_tool_survives_whatever_arguments_a_model_sends(standin, tmp_path):
    """TestModel calls each tool with arguments generated from its schema: no tool raises."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "n.md").write_text("# Note\n\nA note about anyons.")
    async with Library(standin.settings(), corpus=tmp_path / "corpus", cache_dir=tmp_path / "cache") as lib:
        agent = Agent(TestModel(), tools=lib.tools())
        result = await agent.run("go")
    calls = [p.tool_name for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert sorted(calls) == ["citations", "read_paper", "search_corpus", "search_literature"]


def test_tool_descriptions_say_what_the_arguments_are(standin, tmp_path):
    lib = Library(standin.settings(), cache_dir=tmp_path)
    lib.corpus = object()  # type: ignore[assignment]  # as if a corpus were open: all four tools
    tools = {t.name: t for t in lib.tools()}
    read = tools["read_paper"].function_schema.json_schema
    assert set(read["properties"]) == {"key", "query", "start"} and read["required"] == ["key"]
    assert "INSPIRE:<recid>" in read["properties"]["key"]["description"]
    search = tools["search_literature"].function_schema.json_schema
    assert search["properties"]["source"]["enum"] == ["all", "arxiv", "inspire", "corpus"]


def _native_tools_seen(enabled: bool, **profile) -> list[str]:
    seen: list[str] = []

    def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.extend(t.kind for t in info.model_request_parameters.native_tools)
        return ModelResponse(parts=[TextPart("ok")])

    model = FunctionModel(model_fn, profile=profile or None)
    choice = web_search(model, enabled)
    Agent(model, capabilities=choice.capabilities).run_sync("hello")
    return seen


def test_web_search_is_off_unless_asked():
    assert _native_tools_seen(False) == []


def test_web_search_is_the_providers_own_when_asked():
    assert _native_tools_seen(True) == ["web_search"]


def test_web_search_on_a_provider_without_it_is_a_notice_not_an_error():
    model = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("ok")]), model_name="plain",
                          profile={"supported_native_tools": frozenset()})
    choice = web_search(model, True)
    assert choice.capabilities == []
    assert choice.notice is not None
    assert choice.notice.startswith("web search: function:plain has no built-in web search")
    assert _native_tools_seen(True, supported_native_tools=frozenset()) == []
    assert WebSearchTool not in model.profile.get("supported_native_tools", frozenset())
