"""OpenAI Chat Completions non-streaming bodies: a canonical Response ↔ a ``chat.completion`` object.

:func:`encode_response` makes the decisions the stream encoder makes, through the same mapping
(``_map``, ``_message``): every assistant message maps to the choice of its ``choice_index``
(choice 0 without one); reasoning goes back only to the compatible field it came from when the
source is Chat; the usage object is :func:`~._map.usage_to_wire`'s, exactly as in the stream's
usage chunk; what Chat cannot carry is dropped and reported as records, never turned into text.
:func:`decode_response` reads a body back into the canonical Response.

It must not re-decide cross-protocol rules (finish-reason normalization is the aggregator's) or
do IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..._drops import DropLog
from ..._exceptions import RemoteProtocolError
from ..._model import ASSISTANT_ROLES, FinishReason, Message, Response, ResponseStatus, TextPart
from .._json import NOT_JSON
from ._map import (
    PROTOCOL,
    ReasoningMode,
    drop_frame,
    error_from,
    finish_from,
    finish_to_wire,
    header_from,
    response_raw,
    usage_from,
    usage_to_wire,
)
from ._message import ChoiceWriter, message_parts, with_status
from ._wire import Completion, CompletionChoice, completion_decoder

if TYPE_CHECKING:
    from ._wire import Delta

__all__ = ["decode_response", "encode_response"]


def encode_response(
    response: Response, *, drops: DropLog | None = None, reasoning: ReasoningMode = "auto"
) -> dict[str, Any]:
    """Encode a canonical response as an OpenAI ``chat.completion`` object.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        drops: If given, receives a record for everything Chat cannot carry (dropped).
        reasoning: Where reasoning goes, as the stream encoder's option of that name.

    Returns:
        The JSON object a non-streaming ``POST /v1/chat/completions`` answers with.
    """
    log = drops if drops is not None else DropLog(PROTOCOL, response.protocol)
    source = response.protocol
    choices: dict[int, ChoiceWriter] = {}
    finishes: dict[int, FinishReason] = {}
    for msg in response.messages:
        if msg.role not in ASSISTANT_ROLES:
            log.add("message", f"{msg.role} message in the output")
            continue
        index = msg.choice_index if msg.choice_index is not None else 0
        writer = choices.get(index)
        if writer is None:
            writer = choices[index] = ChoiceWriter(log, source=source, reasoning=reasoning)
        if msg.finish_reason is not None:
            finishes[index] = msg.finish_reason
        if isinstance(msg.content, str):
            writer.add(TextPart(text=msg.content))
            continue
        for part in msg.content:
            writer.add(part)
    if not choices:
        choices[0] = ChoiceWriter(log, source=source, reasoning=reasoning)
    for frame in response.unknown_events or ():
        drop_frame(log, frame.provider_type)  # a body has no place for stream-level frames
    body: dict[str, Any] = {
        "id": response.id or "chatcmpl-maas",
        "object": "chat.completion",
        "created": 0,
        "model": response.model or "unknown",
    }
    if source == PROTOCOL:
        body.update(header_from(response.provider_raw))
    default = response.finish_reason or "stop"
    body["choices"] = [
        {
            "index": i,
            "message": choices[i].message(),
            "finish_reason": finish_to_wire(finishes.get(i, default), legacy_only=choices[i].legacy_only),
            "logprobs": choices[i].logprobs or None,
        }
        for i in sorted(choices)
    ]
    if response.usage is not None:
        body["usage"] = usage_to_wire(response.usage, source)
    return body


def decode_response(body: Any) -> Response:
    """Decode a non-streaming ``chat.completion`` body into the canonical Response.

    Each choice becomes one assistant message with its ``choice_index`` and finish reason;
    the response's finish reason is the first choice's. An ``error`` object makes the response
    ``failed``.

    Args:
        body: The body as parsed JSON (a dict), or its raw JSON bytes or text.

    Raises:
        RemoteProtocolError: The body is not a ``chat.completion`` object (not a JSON object, or
            a field of the wrong JSON type, such as a non-list ``choices``).
    """
    try:
        if isinstance(body, bytes | bytearray | memoryview | str):
            completion = completion_decoder.decode(body)
        elif isinstance(body, dict):
            completion = msgspec.convert(body, Completion)
        else:
            raise RemoteProtocolError(
                "a chat.completion body must be a JSON object", protocol=PROTOCOL, raw=body
            )
    except (msgspec.ValidationError, *NOT_JSON) as exc:
        raise RemoteProtocolError(
            f"invalid chat.completion body: {exc}", protocol=PROTOCOL, raw=body
        ) from exc
    messages = [_message(choice) for choice in completion.choices]
    first = completion.choices[0].finish_reason if completion.choices else None
    finish: FinishReason | None = finish_from(first) if first else None
    status: ResponseStatus = "incomplete" if finish in ("length", "content_filter") else "completed"
    error = error_from(completion.error) if completion.error else None
    if error is not None:
        status = "failed"
        finish = finish or "error"
    return Response(
        protocol=PROTOCOL,
        status=status,
        messages=messages,
        id=completion.id or None,
        model=completion.model or None,
        finish_reason=finish,
        provider_finish_reason=first or None,
        usage=usage_from(completion.usage),
        error=error,
        provider_raw=response_raw(completion.created, completion.system_fingerprint, completion.service_tier),
    )


def _message(choice: CompletionChoice) -> Message:
    message: Delta | None = choice.message
    parts = message_parts(message, choice.logprobs) if message is not None else []
    finish = finish_from(choice.finish_reason) if choice.finish_reason else None
    cut = finish in ("length", "content_filter")
    return Message(
        role="assistant",
        content=with_status(parts, "incomplete" if finish == "length" else "completed"),
        status="incomplete" if cut else "completed",
        choice_index=choice.index,
        finish_reason=finish,
    )
