"""The Responses request envelope: ``model``, ``stream``, the limit, sampling, function tools.

It must not convert the conversation (``input`` and ``instructions`` are the history codec's)
or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._envelope import EnvelopeCodec, FunctionTool, NativeTool, Unread, other_tool
from .._names import OPENAI_RESPONSES as NAME

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ENVELOPE"]


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    if tool.get("type") == "function":
        return [FunctionTool.of(tool, "parameters")], []
    return [], [other_tool(tool.get("type"))]


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    lost.extend(Unread(f"built-in tool {t.category}", field="native_tools") for t in native)
    return [{"type": "function", **t.declaration("parameters")} for t in tools]


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"input", "instructions"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("max_output_tokens",),
)
"""Where a Responses request keeps its envelope."""
