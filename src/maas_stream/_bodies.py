"""Request bodies and non-streaming response bodies: the entry points, dispatched to the specs.

History conversion (:func:`to_canonical`, :func:`from_canonical`, :func:`convert_history`,
:func:`validate`) and the non-streaming bodies (:func:`encode_response`, :func:`decode_response`)
go to each protocol's spec; drops come back as :class:`~maas_stream.Dropped` records. Also here,
once for every protocol: the guard that turns a JSON value Python cannot process (nested too
deep, a lone surrogate: ``protocols/_json.py``) into the library's own error, the finish rule
for bodies read without a stream (:func:`normalize_finish`), and what counts as a cut answer
(:func:`is_cut`).

It must not do IO.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from ._accumulate import client_call_in, turn_finish
from ._drops import DropLog, Dropped
from ._exceptions import LocalProtocolError, RemoteProtocolError, ValidationError
from ._registry import get_protocol
from .protocols._json import UNREADABLE

if TYPE_CHECKING:
    from ._model import Message, Response

__all__ = [
    "convert_history",
    "decode_response",
    "encode_response",
    "from_canonical",
    "is_cut",
    "normalize_finish",
    "to_canonical",
    "validate",
]

log = logging.getLogger("maas_stream")


def to_canonical(body: Any, protocol: str) -> list[Message]:
    """Convert a request body (or history) of ``protocol`` to canonical messages.

    Raises:
        ValidationError: The body cannot be read as a ``protocol`` request, including a value
            nested past the interpreter's limit or a string that is not valid Unicode.
    """
    spec = get_protocol(protocol)
    try:
        return spec.to_canonical(body)
    except UNREADABLE as exc:
        raise ValidationError(protocol, [_unreadable(exc)]) from exc


def from_canonical(
    messages: list[Message],
    protocol: str,
    *,
    lossy: list[Dropped] | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Convert canonical messages to a request body of ``protocol``.

    Args:
        messages: The conversation.
        protocol: The target protocol.
        lossy: If given, receives a :class:`~maas_stream.Dropped` record for each kind of
            thing the target cannot carry.
        source: The protocol the messages came from, for the records.
    """
    drops = DropLog(protocol, source)
    out = get_protocol(protocol).from_canonical(messages, drops=drops)
    if lossy is not None:
        lossy.extend(drops.records)
    return out


def convert_history(
    body: Any, *, to: str, protocol: str, lossy: list[Dropped] | None = None
) -> dict[str, Any]:
    """Convert a request body from ``protocol`` to ``to`` through the canonical model.

    What ``to`` cannot carry is dropped, appended to ``lossy`` as records when given, and
    logged once per record as a warning on the ``maas_stream`` logger.
    """
    found: list[Dropped] = []
    out = from_canonical(to_canonical(body, protocol), to, lossy=found, source=protocol)
    for rec in found:
        log.warning("%s -> %s history: dropped %s", protocol, to, rec)
    if lossy is not None:
        lossy.extend(found)
    return out


def is_cut(response: Response) -> bool:
    """Whether ``response`` failed or was cut: the provider never ended it (no final event).

    ``failed`` (an error), ``in_progress`` (a snapshot) and ``incomplete`` without a finish
    reason (the stream stopped before the provider said why) are; an ``incomplete`` response
    the provider ended itself (``length``, ``content_filter``) is an honest answer, not a cut.
    """
    status = response.status
    return status in ("failed", "in_progress") or (status == "incomplete" and response.finish_reason is None)


def encode_response(
    response: Response, protocol: str, *, lossy: list[Dropped] | None = None, strict: bool = False
) -> dict[str, Any]:
    """Encode a canonical response as ``protocol``'s non-streaming response body.

    A body reads as an answer (a Chat ``finish_reason``, an Anthropic ``stop_reason``), and a
    target may have no way to say "this was cut". A server answering a client with the body
    passes ``strict=True``: a response that failed or was cut (:func:`is_cut`) is then refused,
    and the server answers with an error instead (the bridge sends 502). Without it the body
    is written as far as the target can say (for recordings, tests, inspection).

    Args:
        response: The canonical response (e.g. from :func:`aggregate`).
        protocol: The target protocol.
        lossy: If given, receives a :class:`~maas_stream.Dropped` record for each kind of
            thing the target cannot carry (dropped).
        strict: Refuse a failed or cut response instead of writing it.

    Raises:
        LocalProtocolError: No such protocol, or it has no non-streaming body (websocket ones);
            or ``strict`` is set and ``response`` failed or was cut.
    """
    spec = get_protocol(protocol)
    if spec.encode_response is None:
        raise LocalProtocolError(f"{protocol} has no non-streaming response body")
    if strict and is_cut(response):
        error = response.error
        why = (error.message or error.type) if error is not None else "no final event from the provider"
        raise LocalProtocolError(
            f"the response is {response.status} ({why}); a body would read as an answer",
            protocol=protocol,
        )
    drops = DropLog(protocol, response.protocol)
    out = spec.encode_response(response, drops=drops)
    if lossy is not None:
        lossy.extend(drops.records)
    return out


def decode_response(body: Any, protocol: str) -> Response:
    """Read ``protocol``'s non-streaming response body into a canonical response.

    The protocol's own mapping reads the body; the rules that hold for every protocol are then
    applied here, once, as the aggregator applies them to a stream: a turn that holds a client
    (function or custom) call and says "stop" finishes ``tool_calls``. So a body and the stream
    of the same answer read the same.

    Args:
        body: The JSON body (parsed, or its text/bytes where the protocol accepts that).
        protocol: The body's protocol.

    Raises:
        LocalProtocolError: No such protocol, or it has no non-streaming body.
        RemoteProtocolError: The body is not a valid ``protocol`` response.
    """
    spec = get_protocol(protocol)
    if spec.decode_response is None:
        raise LocalProtocolError(f"{protocol} has no non-streaming response body")
    try:
        response = spec.decode_response(body)
    except UNREADABLE as exc:
        raise RemoteProtocolError(
            f"invalid {protocol} response body: {_unreadable(exc)}", protocol=protocol
        ) from exc
    if any(m.provider is None for m in response.messages):
        # The replay rule's origin: what a body says was made by its protocol.
        response = msgspec.structs.replace(
            response,
            messages=[
                m if m.provider else msgspec.structs.replace(m, provider=protocol) for m in response.messages
            ],
        )
    return normalize_finish(response)


def normalize_finish(response: Response) -> Response:
    """Apply the one finish rule (:func:`turn_finish`) to a response that was not aggregated."""
    calls = [not isinstance(m.content, str) and client_call_in(m.content) for m in response.messages]
    if not any(calls):
        return response
    messages = [
        msgspec.structs.replace(m, finish_reason=turn_finish(m.finish_reason, call))
        if m.finish_reason == "stop" and call
        else m
        for m, call in zip(response.messages, calls, strict=True)
    ]
    return msgspec.structs.replace(
        response, messages=messages, finish_reason=turn_finish(response.finish_reason, True)
    )


def validate(body: Any, protocol: str) -> list[str]:
    """Check a request body against ``protocol``'s rules; return every fault (empty when valid).

    Each fault names the offending message index and, where one is involved, the call id. A
    value nested past the interpreter's limit or a string that is not valid Unicode is a fault.
    """
    spec = get_protocol(protocol)
    try:
        return spec.validate(body)
    except UNREADABLE as exc:
        return [_unreadable(exc)]


def _unreadable(exc: BaseException) -> str:
    """The fault of an input value Python cannot process (see ``protocols/_json.py``)."""
    if isinstance(exc, RecursionError):
        return "a value is nested too deep to read"
    return "a string is not valid Unicode (a lone surrogate)"
