"""The Chat Completions request envelope: ``model``, ``stream``, the limit, sampling, function tools.

It must not convert the conversation (``messages`` is the history codec's) or do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._envelope import Envelope, EnvelopeCodec, FunctionTool, NativeTool, Unread, other_tool
from .._names import OPENAI_CHAT as NAME

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ENVELOPE", "encoder_options"]


def _read_tool(tool: Mapping[str, Any]) -> tuple[list[FunctionTool | NativeTool], list[str]]:
    if tool.get("type") != "function":
        return [], [other_tool(tool.get("type"))]
    fn = tool.get("function")
    if not isinstance(fn, dict):
        return [], ["function tool without a function object"]
    return [FunctionTool.of(fn, "parameters")], []


def _write_tools(tools: list[FunctionTool], native: list[NativeTool], lost: list[Unread]) -> list[Any]:
    lost.extend(Unread(f"built-in tool {t.category}", field="native_tools") for t in native)
    return [{"type": "function", "function": t.declaration("parameters")} for t in tools]


def _read(body: Mapping[str, Any], env: Envelope) -> Iterable[str]:
    options = body.get("stream_options")
    if isinstance(options, dict) and isinstance(options.get("include_usage"), bool):
        env.include_usage = options["include_usage"]
        env.sources["include_usage"] = "stream_options.include_usage"
    return ()


def _write(body: dict[str, Any], env: Envelope, lost: list[Unread]) -> Iterable[str]:
    # The upstream is always asked for usage (``fixed``); the client's wish is the encoder's.
    return ()


def encoder_options(env: Envelope) -> dict[str, Any]:
    """Stream encoder options honouring the client's request: the usage chunk only when asked."""
    return {"include_usage": env.include_usage is True}


ENVELOPE = EnvelopeCodec(
    protocol=NAME,
    conversation=frozenset({"messages"}),
    read_tool=_read_tool,
    write_tools=_write_tools,
    max_tokens=("max_completion_tokens", "max_tokens"),
    # Without it the stream carries no usage.
    fixed={"stream_options": {"include_usage": True}},
    read_hook=_read,
    write_hook=_write,
)
"""Where a Chat Completions request keeps its envelope."""
