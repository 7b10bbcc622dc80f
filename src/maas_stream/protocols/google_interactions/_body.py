"""Google Interactions non-streaming body: an Interaction resource ↔ a canonical Response.

``POST /v1beta/interactions`` without ``stream`` answers with the Interaction resource
(PROTOCOLS.md §5.3): ``id``, ``status``, ``usage``, ``steps`` (legacy: ``outputs``, content
blocks), ``errors`` when failed, ``model`` and bookkeeping fields (``object``, ``created``,
``service_tier``...). Both directions use the package's one mapping (``_steps``): the steps the
stream encoder writes, the usage it writes and the status it writes are the ones written here,
and :func:`decode_response` reads a body the way the stream decoder reads a stream.

A body cannot say "cut": a response that ended early is written ``incomplete``. It must not do
IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..._exceptions import RemoteProtocolError
from ..._model import Message, Response, StreamError, ToolCallPart, UnknownPart
from .._json import UNREADABLE
from .._names import GOOGLE_INTERACTIONS as PROTOCOL
from ._content import report
from ._steps import (
    CHOICE_DROP,
    INPUT_DROP,
    INPUT_ROLES,
    error_wire,
    failure_of,
    finish_from_status,
    interaction_extra,
    legacy_step,
    message_from_step,
    status_wire,
    steps_from_message,
    unknown_what,
    usage_from,
    usage_wire,
)
from ._wire import InteractionFields, check_depth, decode_raw

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = ["decode_response", "encode_response"]


def encode_response(response: Response, *, drops: DropLog | None = None) -> dict[str, Any]:
    """Encode a canonical response as an Interactions ``Interaction`` resource.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        drops: If given, records everything Interactions cannot carry (dropped).

    Returns:
        The JSON object ``POST /v1beta/interactions`` answers with when not streaming.
    """
    same = response.protocol == PROTOCOL
    steps: list[dict[str, Any]] = []
    for i, message in enumerate(response.messages):
        where = f"messages[{i}]"
        if message.role in INPUT_ROLES:
            report(drops, "message", INPUT_DROP, where)
            continue
        if message.choice_index not in (None, 0):
            report(drops, "message", CHOICE_DROP, f"choice {message.choice_index}")
            continue
        origin = message.provider or response.protocol
        steps.extend(steps_from_message(message, origin=origin, drops=drops, where=where))
    for event in response.unknown_events or ():
        # Stream-level frames: a same-protocol stream passes them on; a body has no place.
        report(drops, "unknown", unknown_what(event.provider_type, "frames", same=same))
    body: dict[str, Any] = {}
    if response.id:
        body["id"] = response.id
    body["status"] = status_wire(
        response.status, response.finish_reason, response.provider_finish_reason, same=same
    )
    if response.usage is not None:
        body["usage"] = usage_wire(response.usage, same=same)
    if same and isinstance(response.provider_raw, dict):
        for key, value in response.provider_raw.items():
            body.setdefault(key, value)
    body["steps"] = steps
    if response.error is not None:
        body["errors"] = [error_wire(response.error, same=same)]
    body.setdefault("object", "interaction")
    if response.model:
        body["model"] = response.model
    return body


def decode_response(body: Any) -> Response:
    """Decode an Interaction resource (a non-streaming answer) into a canonical Response.

    Args:
        body: The parsed JSON object, or its JSON text.

    Returns:
        The response, with one message per step, as :func:`maas_stream.aggregate` gives for the
        same interaction streamed.

    Raises:
        RemoteProtocolError: Not an Interaction object: not JSON, not an object, a field of the
            wrong JSON type, or nested too deeply.
    """
    try:
        if isinstance(body, bytes | bytearray | memoryview | str):
            body = decode_raw(body if isinstance(body, bytes | str) else bytes(body), what="response body")
        if not isinstance(body, dict):
            raise RemoteProtocolError("an Interactions response body must be a JSON object")
        check_depth(body, what="response body")
        inter = msgspec.convert(body, InteractionFields)
        if inter.steps is not None:
            raw_steps = inter.steps
        else:
            raw_steps = [legacy_step(c) for c in inter.outputs or ()]
        messages = [message_from_step(step) for step in raw_steps]
        usage = usage_from(inter.usage)
    except RemoteProtocolError as exc:
        exc.protocol = PROTOCOL
        raise
    except (msgspec.ValidationError, *UNREADABLE) as exc:
        raise RemoteProtocolError(f"invalid {PROTOCOL} response body: {exc}", protocol=PROTOCOL) from exc
    wire = inter.status or "completed"
    status, finish = finish_from_status(wire)
    error: StreamError | None = failure_of(inter.errors) if status == "failed" else None
    unknown: dict[str, int] = {}
    for message in messages:
        for part in message.content if isinstance(message.content, list) else ():
            if isinstance(part, UnknownPart):
                unknown[part.provider_type] = unknown.get(part.provider_type, 0) + 1
    return Response(
        protocol=PROTOCOL,
        status=status,
        messages=_settled(messages, cut=status == "incomplete"),
        id=inter.id or None,
        model=inter.model or inter.agent or None,
        finish_reason=finish,
        provider_finish_reason=inter.status,
        usage=usage,
        error=error,
        unknown=unknown,
        provider_raw=interaction_extra(body),
    )


def _settled(messages: list[Message], *, cut: bool) -> list[Message]:
    """Statuses as a stream would end them: every step closed.

    In an incomplete interaction the last step (where the model stopped) and its calls are
    ``incomplete``: a cut call is never reported as completed.
    """
    out: list[Message] = []
    last = len(messages) - 1
    for i, message in enumerate(messages):
        status = "incomplete" if cut and i == last else "completed"
        content = message.content
        if isinstance(content, list):
            content = [
                msgspec.structs.replace(p, status=status) if isinstance(p, ToolCallPart) else p
                for p in content
            ]
        out.append(msgspec.structs.replace(message, content=content, status=status, provider=PROTOCOL))
    return out
