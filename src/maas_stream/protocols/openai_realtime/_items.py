"""OpenAI Realtime's one two-way mapping between canonical values and Realtime wire objects.

Content parts, conversation items (``message``, ``function_call``, ``function_call_output``),
usage and the response status, both ways. The decoder, the stream encoder and the history codec
all go through these functions, so an item or a usage count reads and writes the same
everywhere.

It must not hold state, do IO, or decide a cross-protocol rule (finish normalization, replay).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._model import (
    AudioPart,
    FinishReason,
    Part,
    ResponseStatus,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from ..._usage import total_of, usage_of
from .._session import result_text

__all__ = [
    "call_from_item",
    "call_item",
    "content_wire",
    "finish_from",
    "output_item",
    "part_from_content",
    "result_from_item",
    "status_wire",
    "usage_from",
    "usage_wire",
]

_CANCELLED: Final = frozenset({"turn_detected", "client_cancelled"})
_FINISH: Final[dict[str, FinishReason]] = {"max_output_tokens": "length", "content_filter": "content_filter"}


# ---------------------------------------------------------------------- wire → canonical


def part_from_content(content: Any) -> Part | None:
    """A Realtime content part (``output_text``, ``output_audio``, ``text``, ``audio``...)."""
    if not isinstance(content, dict):
        return None
    kind = content.get("type")
    if kind in ("text", "output_text", "input_text"):
        text = content.get("text")
        return TextPart(text=text if isinstance(text, str) else "")
    if kind in ("audio", "output_audio", "input_audio"):
        transcript = content.get("transcript")
        audio = content.get("audio")
        return AudioPart(
            transcript=transcript if isinstance(transcript, str) and transcript else None,
            data=audio if isinstance(audio, str) else None,
        )
    return None


def call_from_item(item: dict[str, Any]) -> ToolCallPart | None:
    """A ``function_call`` item as a tool call (``status: "incomplete"`` when the item says so).

    Returns ``None`` when its ``call_id``, ``name``, ``arguments`` or ``id`` is not a string.
    """
    fields = [item.get(name) for name in ("call_id", "name", "arguments", "id")]
    if not all(isinstance(value, str | None) for value in fields):
        return None
    call_id, name, arguments, item_id = fields
    return ToolCallPart(
        id=call_id or "",
        name=name or "",
        arguments=arguments or "",
        item_id=item_id or None,
        status="incomplete" if item.get("status") == "incomplete" else None,
    )


def result_from_item(item: dict[str, Any]) -> ToolResultPart | None:
    """A ``function_call_output`` item as a tool result (a non-string output as JSON text).

    Returns ``None`` when its ``call_id`` is not a string.
    """
    call_id = item.get("call_id")
    if not isinstance(call_id, str | None):
        return None
    output = item.get("output")
    content = output if isinstance(output, str) else msgspec.json.encode(output).decode()
    return ToolResultPart(tool_call_id=call_id or "", content=content)


def usage_from(raw: Any) -> Usage | None:
    """Map a Realtime ``response.usage`` object to canonical usage.

    Realtime already counts as canonical usage does: ``input_tokens`` includes
    ``input_token_details.cached_tokens``; ``output_tokens`` is every generated token (text and
    audio). It reports no reasoning count.
    """
    if not isinstance(raw, dict):
        return None
    details = raw.get("input_token_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None

    def num(value: Any) -> int | None:
        return value if type(value) is int else None

    return usage_of(
        input_tokens=num(raw.get("input_tokens")),
        output_tokens=num(raw.get("output_tokens")),
        reported_total=num(raw.get("total_tokens")),
        cache_read_tokens=num(cached),
        raw=raw,
    )


def finish_from(status: str, reason: str | None) -> tuple[ResponseStatus, FinishReason]:
    """A ``response.done`` status (and ``status_details.reason``) as canonical status and finish.

    A completed response says ``stop``: the aggregator, not this mapping, says ``tool_calls``
    when the response holds client calls.
    """
    if status == "failed":
        return "failed", "error"
    if status in ("cancelled", "incomplete"):
        return "incomplete", _FINISH.get(reason or "", "other")
    return "completed", "stop"


# ---------------------------------------------------------------------- canonical → wire


def content_wire(part: TextPart | AudioPart, role: str) -> dict[str, Any]:
    """A text or audio part as an item content part (``output_*`` for the assistant, else ``input_*``)."""
    side = "output" if role == "assistant" else "input"
    if isinstance(part, TextPart):
        return {"type": f"{side}_text", "text": part.text}
    wire: dict[str, Any] = {"type": f"{side}_audio"}
    if part.data is not None:
        wire["audio"] = part.data
    if part.transcript is not None:
        wire["transcript"] = part.transcript
    return wire


def call_item(call: ToolCallPart, arguments: str, **fields: Any) -> dict[str, Any]:
    """A ``function_call`` item (``fields`` adds ``id`` and ``status`` for a server event)."""
    return {"type": "function_call", **fields, "name": call.name, "call_id": call.id, "arguments": arguments}


def output_item(result: ToolResultPart) -> dict[str, Any]:
    """A tool result as a ``function_call_output`` item (its output as text)."""
    return {"type": "function_call_output", "call_id": result.tool_call_id, "output": result_text(result)}


def status_wire(
    status: ResponseStatus | None, finish: FinishReason | None, reason: str | None
) -> tuple[str, dict[str, Any] | None]:
    """A canonical response end as ``response.done`` ``status`` and ``status_details``."""
    if status == "failed" or finish == "error":
        return "failed", {"type": "failed"}
    if status == "incomplete" or finish in ("length", "content_filter"):
        if reason == "interrupted":
            return "cancelled", {"type": "cancelled", "reason": "turn_detected"}
        if reason in _CANCELLED:
            return "cancelled", {"type": "cancelled", "reason": reason}
        wire_reason = "content_filter" if finish == "content_filter" else "max_output_tokens"
        return "incomplete", {"type": "incomplete", "reason": wire_reason}
    return "completed", None


def usage_wire(usage: Usage, *, same: bool) -> dict[str, Any]:
    """Canonical usage as a Realtime ``usage`` object.

    Args:
        usage: The canonical usage.
        same: The usage came from Realtime: its own object goes back unchanged (details by
            modality). Any other source's object is never copied (an Anthropic
            ``input_tokens`` leaves the cache out; Realtime's does not): the counts are the
            canonical ones, which mean what Realtime's mean.
    """
    if same and isinstance(usage.raw, dict):
        return usage.raw
    pairs = (
        ("total_tokens", total_of(usage)),
        ("input_tokens", usage.input_tokens),
        ("output_tokens", usage.output_tokens),
    )
    out: dict[str, Any] = {name: value for name, value in pairs if value is not None}
    if usage.cache_read_tokens is not None:
        out["input_token_details"] = {"cached_tokens": usage.cache_read_tokens}
    return out
