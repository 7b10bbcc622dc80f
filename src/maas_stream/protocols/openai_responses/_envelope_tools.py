"""Responses ``tools[]`` entries ↔ canonical tools: function, custom (grammar) and built-in tools.

A function tool (``{"type": "function", name, parameters, strict}``) and a custom tool
(``{"type": "custom", name, format}``, free text optionally constrained by a Lark or regex
grammar) are client-executed :class:`FunctionTool` s; every other entry (``web_search``,
``file_search``, ``code_interpreter``, ``computer``, ``mcp``, ``image_generation``, ``shell``,
``namespace``...) is a :class:`NativeTool` with a cross-protocol category, written back as declared
to Responses. Built-in tools of other protocols are mapped where Responses has an equivalent
(web search, code execution) and reported otherwise.

It must not read or write anything but ``tools[]`` entries (the rest of the envelope is
``_envelope``'s) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._envelope import FunctionTool, NativeTool, Unread
from .._names import GEMINI
from .._names import OPENAI_RESPONSES as NAME

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["TOOL_EXTRAS", "read_tool", "write_tools"]

_CATEGORIES: Final[dict[str, str]] = {
    "web_search": "web_search",
    "web_search_2025_08_26": "web_search",
    "web_search_preview": "web_search",
    "web_search_preview_2025_03_11": "web_search",
    "file_search": "file_search",
    "code_interpreter": "code_execution",
    "computer": "computer_use",
    "computer_use_preview": "computer_use",
    "mcp": "mcp",
    "image_generation": "image_generation",
}
"""Built-in tool type → cross-protocol category (other types are their own category)."""

TOOL_EXTRAS: Final = ("defer_loading", "allowed_callers", "output_schema", "async")
"""Fields of a function or custom tool that no other protocol has (tool search, programmatic
calling, an output schema, asynchronous calls): reported by the envelope reader."""


def read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    """One ``tools[]`` entry → the tool it declares (client-executed or built-in)."""
    kind = tool.get("type")
    if kind == "function":
        return [FunctionTool.of(tool, "parameters")], []
    if kind == "custom":
        name, description = tool.get("name"), tool.get("description")
        return [
            FunctionTool(
                name if isinstance(name, str) else "",
                description if isinstance(description, str) else None,
                kind="custom",
                format=tool.get("format"),
            )
        ], []
    if not isinstance(kind, str):
        return [], [f"tool of type {kind!r}"]
    return [NativeTool(NAME, dict(tool), _CATEGORIES.get(kind, kind))], []


def write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    """Canonical tools → Responses ``tools[]``; what cannot be carried goes to ``lost``.

    ``strict`` is written when the envelope says it; an envelope of another protocol gets an
    explicit ``strict: false`` from the write hook (a Responses function tool without ``strict``
    is strict).
    """
    out: list[Any] = [_declaration(t, lost) for t in tools]
    for t in native:
        written = dict(t.decl) if t.protocol == NAME else _builtin(t, lost)
        if written is not None:
            out.append(written)
    return out


def _declaration(tool: FunctionTool, lost: list[Unread]) -> dict[str, Any]:
    if tool.cache_control is not None:
        lost.append(Unread(f"cache_control of tool {tool.name}", field="tools.cache_control"))
    if tool.kind == "custom":
        out: dict[str, Any] = {"type": "custom", "name": tool.name}
        if tool.description is not None:
            out["description"] = tool.description
        if tool.format is not None:
            out["format"] = tool.format
        return out
    out = {"type": "function", **tool.declaration("parameters")}
    if tool.strict is not None:
        out["strict"] = tool.strict
    return out


def _builtin(tool: NativeTool, lost: list[Unread]) -> dict[str, Any] | None:
    """Another protocol's built-in tool as the Responses equivalent, or ``None`` (reported)."""
    settings = _settings(tool)
    if tool.decl.get("cache_control") is not None and tool.protocol != GEMINI:
        lost.append(Unread(f"cache_control of built-in tool {tool.category}", field="tools.cache_control"))
    out: dict[str, Any]
    if tool.category == "web_search":
        # Anthropic's web search takes the same user_location object and allowed_domains.
        out = {"type": "web_search"}
        domains = settings.pop("allowed_domains", None)
        if domains is not None:
            out["filters"] = {"allowed_domains": domains}
        location = settings.pop("user_location", None)
        if location is not None:
            out["user_location"] = location
    elif tool.category == "code_execution":
        out = {"type": "code_interpreter", "container": {"type": "auto"}}
    else:
        lost.append(Unread(f"built-in tool {tool.category}", field="native_tools"))
        return None
    lost.extend(
        Unread(f"setting {k} of built-in tool {tool.category}", field="native_tools")
        for k in sorted(settings)
    )
    return out


def _settings(tool: NativeTool) -> dict[str, Any]:
    """What a built-in declaration configures (besides its type, name and cache breakpoint)."""
    if tool.protocol == GEMINI:
        # {"googleSearch": {...}}: the settings are the one key's object.
        inner = next(iter(tool.decl.values()), None) if len(tool.decl) == 1 else dict(tool.decl)
        return dict(inner) if isinstance(inner, dict) else {}
    return {k: v for k, v in tool.decl.items() if k not in ("type", "name", "cache_control")}
