"""The Messages request envelope: ``model``, ``stream``, ``max_tokens``, sampling, custom tools.

It must not convert the conversation (``messages`` and ``system`` are the history codec's) or
do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._envelope import EnvelopeCodec, FunctionTool, NativeTool, Unread, other_tool
from .._names import ANTHROPIC as NAME

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_MAX_TOKENS", "ENVELOPE"]

DEFAULT_MAX_TOKENS: Final = 4096
"""Anthropic requires ``max_tokens``; used when the request to carry names no limit."""


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    # Client tools have no type (or "custom") and a schema; server tools have a versioned type.
    if tool.get("type") in (None, "custom") and "input_schema" in tool:
        return [FunctionTool.of(tool, "input_schema")], []
    return [], [other_tool(tool.get("type"))]


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    lost.extend(Unread(f"built-in tool {t.category}", field="native_tools") for t in native)
    return [t.declaration("input_schema") for t in tools]


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"messages", "system"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("max_tokens",),
    default_max_tokens=DEFAULT_MAX_TOKENS,
)
"""Where a Messages request keeps its envelope."""
