"""Anthropic Messages non-streaming body: a canonical Response ↔ a ``message`` object.

Both directions go through the protocol's one mapping (``_blocks``), the one the stream
encoder, the stream decoder and the history codec use: the body holds exactly the blocks, usage
and stop reason the stream encoder writes for the same response, and reads back as the stream
decoder would read them. It must not do IO or hold state.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..._drops import DropLog
from ..._exceptions import RemoteProtocolError
from ..._model import FinishReason, Message, Part, Response, ToolCallPart, UnknownPart
from .._names import ANTHROPIC as PROTOCOL
from ._blocks import (
    KNOWN_RAW_TYPES,
    MESSAGE_FIELDS,
    block_to_part,
    error_from,
    finish_of,
    keep_message,
    message_object,
    stop_reason_of,
    string,
    usage_body,
    usage_from,
)
from ._writer import BlockWriter

__all__ = ["decode_response", "encode_response"]

_INCOMPLETE: Final[frozenset[FinishReason | None]] = frozenset({"length", "content_filter"})


def encode_response(response: Response, *, drops: DropLog | None = None) -> dict[str, Any]:
    """Encode a canonical response as an Anthropic ``message`` object.

    The assistant messages of choice 0 become the blocks of the one message (a Responses
    source's items, say); thinking keeps its signature only where it may be replayed.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        drops: If given, what Anthropic cannot carry is recorded there (and dropped).

    Returns:
        The JSON object a non-streaming ``POST /v1/messages`` answers with.
    """
    log = drops if drops is not None else DropLog(PROTOCOL, response.protocol)
    writer = BlockWriter(response.protocol, log)
    blocks: list[dict[str, Any]] = []
    for i, msg in enumerate(response.messages):
        where = f"messages[{i}]"
        if keep_message(msg.role, msg.choice_index, log, where):
            blocks.extend(writer.blocks(msg.content, where=where))
    for frame in response.unknown_events or ():
        writer.drop_frame(frame.provider_type, body=True)
    native = writer.native
    return message_object(
        id=response.id,
        model=response.model,
        content=blocks,
        stop_reason=stop_reason_of(
            response.finish_reason,
            response.provider_finish_reason,
            native=native,
            completed=response.status == "completed",
        ),
        usage=usage_body(response.usage, native=native),
        extra=response.provider_raw if native else None,
    )


def _bad(what: str) -> RemoteProtocolError:
    return RemoteProtocolError(what, protocol=PROTOCOL)


def decode_response(body: Any) -> Response:
    """Decode an Anthropic non-streaming response body into a canonical response.

    A ``message`` object becomes one assistant message with its blocks as parts, in order (as
    the stream decoder and the history codec map them); ``stop_reason`` gives the finish reason
    (``max_tokens``, or none at all, leaves the response and a trailing tool call
    ``incomplete``); an error body
    (``{"type": "error", ...}``) gives a ``failed`` response holding the error.

    Args:
        body: The body as parsed JSON, or its bytes or text.

    Raises:
        RemoteProtocolError: The body is not JSON, not a ``message`` or error object, or a field
            has the wrong JSON type.
    """
    if isinstance(body, bytes | bytearray | memoryview | str):
        try:
            body = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise _bad(f"the response body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise _bad(f"a response body must be an object, not {type(body).__name__}")
    kind = body.get("type")
    if kind == "error":
        return Response(protocol=PROTOCOL, status="failed", finish_reason="error", error=error_from(body))
    if kind not in (None, "message"):
        raise _bad(f"a response body of type {kind!r} (expected 'message' or 'error')")
    content = body.get("content")
    if content is not None and not isinstance(content, list):
        raise _bad(f"message: 'content' must be a list, not {type(content).__name__}")
    stop = string(body, "stop_reason", "message")
    finish = finish_of(stop)
    # A finished message always has a stop reason; without one it was cut (or is partial).
    incomplete = stop is None or finish in _INCOMPLETE
    parts, unknown = _parts(content or [], incomplete)
    msg_id = string(body, "id", "message")
    message = Message(
        role="assistant",
        content=parts,
        id=msg_id,
        status="incomplete" if incomplete else "completed",
        finish_reason=finish,
        provider=PROTOCOL,
    )
    extra = {k: v for k, v in body.items() if k not in MESSAGE_FIELDS}
    return Response(
        protocol=PROTOCOL,
        status="incomplete" if incomplete else "completed",
        messages=[message],
        id=msg_id,
        model=string(body, "model", "message"),
        finish_reason=finish,
        provider_finish_reason=stop,
        usage=usage_from(body.get("usage")),
        unknown=unknown,
        provider_raw=extra or None,
    )


def _parts(content: list[Any], incomplete: bool) -> tuple[list[Part], dict[str, int]]:
    parts: list[Part] = []
    unknown: dict[str, int] = {}
    for block in content:
        part = block_to_part(block)
        if isinstance(part, UnknownPart) and part.provider_type not in KNOWN_RAW_TYPES:
            unknown[part.provider_type] = unknown.get(part.provider_type, 0) + 1
        if isinstance(part, ToolCallPart):
            part = msgspec.structs.replace(part, status="completed")
        parts.append(part)
    last = parts[-1] if parts else None
    if incomplete and isinstance(last, ToolCallPart):
        # Cut (by max_tokens) inside a tool call: its input may be partial; never run it.
        parts[-1] = msgspec.structs.replace(last, status="incomplete")
    return parts, unknown
