"""Reading the lab's prompts and tool returns from inside a scripted role player."""

from __future__ import annotations

import re

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart

from physlab.llm.scripted import last_user_text


def prompt(messages: list[ModelMessage]) -> str:
    return last_user_text(messages)


def turn(messages: list[ModelMessage]) -> int:
    """How many replies this role has already given in the current call."""
    return sum(isinstance(m, ModelResponse) for m in messages)


def tool_returns(messages: list[ModelMessage], name: str | None = None) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, ToolReturnPart) and (name is None or p.tool_name == name):
                    out.append(p.model_response_str())
    return out


def block(text: str, tag: str) -> str:
    m = re.search(rf"<{re.escape(tag)}>\n(.*?)\n</{re.escape(tag)}>", text, flags=re.S)
    return m.group(1) if m else ""


def blocks(text: str, tag: str) -> list[str]:
    return re.findall(rf"<{re.escape(tag)}>\n(.*?)\n</{re.escape(tag)}>", text, flags=re.S)


def ids(text: str, prefix: str) -> list[str]:
    return list(dict.fromkeys(re.findall(rf"\b{prefix}-\d+\b", text)))


def hypotheses(text: str) -> dict[str, str]:
    """WH id -> status, from the <hypotheses> block."""
    return dict(re.findall(r"^(WH-\d+) \[(\w+)\]", block(text, "hypotheses"), flags=re.M))


def established(text: str) -> list[tuple[str, str, bool, str, str]]:
    """(ER id, WH id, flagged, claim, value) from the <established-results> block."""
    out = []
    body = block(text, "established-results")
    for m in re.finditer(r"^(ER-\d+) \(from (WH-\d+)\)( \[FLAGGED[^\]]*\])?(?: \(depends on [^)]*\))?: (.*?)(?:\n  value: (.*?))?$",
                         body, flags=re.M):
        out.append((m.group(1), m.group(2), bool(m.group(3)), m.group(4), m.group(5) or ""))
    return out
