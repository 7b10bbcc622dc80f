"""The Gemini request envelope: ``generationConfig`` (limit, sampling) and function declarations.

The model and the streaming switch are in the URL (``models/{model}:streamGenerateContent``),
not the body.

It must not convert the conversation (``contents`` and ``systemInstruction`` are the history
codec's) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._envelope import EnvelopeCodec, FunctionTool, NativeTool, Unread
from .._names import GEMINI as NAME

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ENVELOPE"]

_DECLARATIONS: Final = ("functionDeclarations", "function_declarations")
_SCHEMAS: Final = ("parametersJsonSchema", "parameters_json_schema", "parameters")


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    decls = next((tool[k] for k in _DECLARATIONS if k in tool), None)
    tools: list[FunctionTool | NativeTool] = []
    others: list[str] = []
    for decl in decls if isinstance(decls, list) else []:
        if isinstance(decl, dict):
            tools.append(FunctionTool.of(decl, *_SCHEMAS))
        else:
            others.append("a function declaration that is not an object")
    others.extend(
        f"tool field {k} (not a function declaration)" for k in sorted(tool) if k not in _DECLARATIONS
    )
    return tools, others


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    lost.extend(Unread(f"built-in tool {t.category}", field="native_tools") for t in native)
    return [
        {"functionDeclarations": [t.declaration("parametersJsonSchema", empty_schema=False) for t in tools]}
    ]


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"contents", "systemInstruction", "system_instruction"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("maxOutputTokens", "max_output_tokens"),
    top_p=("topP", "top_p"),
    settings_in=("generationConfig", "generation_config"),
    writes_model=False,
    stream_field=None,
)
"""Where a Gemini request keeps its envelope."""
