"""Reading the lab's prompts and tool returns from inside a scripted role player."""

from __future__ import annotations

import re

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    ToolReturnPart,
)

from physlab.llm.scripted import first_user_text


def prompt(messages: list[ModelMessage]) -> str:
    """The lab's prompt for this call (later user messages are pydantic-ai's retry requests)."""
    return first_user_text(messages)


def instructions(messages: list[ModelMessage]) -> str:
    """The role's instructions for this call: the problem (<problem-statement>, <answer-template>,
    <problem-guidelines>), then the role's own text. (A conversation read back from the wire, as
    the stand-in serving a scenario does, carries them as a system prompt part.)"""
    for m in messages:
        if isinstance(m, ModelRequest):
            if m.instructions:
                return m.instructions
            system = [p.content for p in m.parts if isinstance(p, SystemPromptPart)]
            if system:
                return "\n\n".join(system)
    return ""


def turn(messages: list[ModelMessage]) -> int:
    """How many replies this role has already given in the current call."""
    return sum(isinstance(m, ModelResponse) for m in messages)


def tool_returns(messages: list[ModelMessage], name: str | None = None) -> list[str]:
    """What the tools returned in this call (corrections excluded: see :func:`corrections`)."""
    out = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if (isinstance(p, ToolReturnPart) and getattr(p, "outcome", None) != "retried"
                        and (name is None or p.tool_name == name)):
                    out.append(p.model_response_str())
    return out


def printed(tool_return: str) -> str:
    """What a script printed, from its tool return (``[status]\nSTDOUT:\n…\nSTDERR:\n…``): its
    stdout, and its stderr only when it wrote some -- what a reviewer quotes, not the headers."""
    body = tool_return.split("STDOUT:\n", 1)[-1]
    stdout, *stderr = re.split(r"\nSTDERR:(?:\n|$)", body, maxsplit=1)
    err = stderr[0].strip() if stderr else ""
    return stdout.rstrip() + (f"\nstderr: {err}" if err else "")


def corrections(messages: list[ModelMessage]) -> list[str]:
    """The corrective messages the lab sent back in this call (refused output, unknown ids...)."""
    out = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, RetryPromptPart):
                    out.append(p.model_response())
                elif isinstance(p, ToolReturnPart) and getattr(p, "outcome", None) == "retried":
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
    """WH id -> status, from the <hypotheses> section."""
    return dict(re.findall(r"^(WH-\d+) \[(\w+)[^\]]*\]", block(text, "hypotheses"), flags=re.M))


def hypothesis_values(text: str, tag: str = "hypotheses") -> dict[str, str]:
    """WH id -> the value it claims, from a section listing hypotheses."""
    return dict(re.findall(r"^(WH-\d+) \[[^\]]*\][^\n]*\n  value: (.*)$", block(text, tag), flags=re.M))


def established(text: str, tag: str = "established-results") -> list[tuple[str, str, str, str]]:
    """(ER id, WH id, claim, value) from the <established-results> (or <demoted-results>) section."""
    out = []
    for m in re.finditer(r"^(ER-\d+) \(from (WH-\d+)[^)]*\)(?: \[short form\])?: (.*?)(?:\n  value: (.*?))?$",
                         block(text, tag), flags=re.M):
        out.append((m.group(1), m.group(2), m.group(3), m.group(4) or ""))
    return out


def new_evidence(text: str) -> list[str]:
    """The <evidence> items of the <new-evidence> section."""
    return blocks(block(text, "new-evidence"), "evidence")


def iteration(text: str) -> int:
    m = re.search(r"Iteration (\d+)\b", block(text, "turn"))
    return int(m.group(1)) if m else 0
