"""OpenAI Responses non-streaming body: canonical Response ↔ ``response`` object.

:func:`encode_response` makes the decisions the stream encoder (``_encode``) makes, through the
same mapping (``_items`` / ``_items_write`` for the output items, ``_meta`` for usage, status and error): the
assistant messages of choice 0 become output items (text and refusals in ``message`` items,
client tool calls in ``function_call`` / ``custom_tool_call`` items); reasoning is replayed
only from a Responses source (:func:`~maas_stream.protocols._replay.replayable`); hosted-tool and
unknown items are kept whole from a Responses source; everything else is dropped and recorded.

:func:`decode_response` reads a ``response`` object (a non-streaming answer, or the terminal
event's) with the mapping the stream decoder uses, so it agrees with aggregating the stream.

It must not do IO or know the stream's event grammar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._drops import DropLog
from ..._exceptions import RemoteProtocolError
from ..._model import ASSISTANT_ROLES, Message, ReasoningPart, Response, TextPart, ToolCallPart, UnknownPart
from .._names import OPENAI_RESPONSES as PROTOCOL
from .._replay import replayable
from ._items import REBUILT_TYPES, item_message, item_parts
from ._items_write import (
    call_item,
    content_json,
    drop_part,
    drop_signature,
    message_item,
    output_route,
    reasoning_item,
)
from ._meta import (
    error_from,
    error_json,
    finish_from,
    incomplete_details,
    response_fields,
    response_object,
    usage_from,
    usage_json,
)

if TYPE_CHECKING:
    from ..._model import FinishReason

__all__ = ["decode_response", "encode_response"]


def encode_response(response: Response, *, drops: DropLog | None = None) -> dict[str, Any]:
    """Encode a canonical response as an OpenAI Responses ``response`` object.

    Args:
        response: The canonical response (e.g. from :func:`maas_stream.aggregate`).
        drops: If given, receives a record for everything Responses cannot carry (dropped).

    Returns:
        The JSON object a non-streaming ``POST /v1/responses`` answers with.
    """
    log = drops if drops is not None else DropLog(PROTOCOL, response.protocol)
    same = response.protocol == PROTOCOL
    replay = replayable(response.protocol, PROTOCOL)
    output: list[dict[str, Any]] = []
    for i, msg in enumerate(response.messages):
        where = f"messages[{i}]"
        if (
            same
            and msg.type is not None
            and msg.type not in REBUILT_TYPES
            and isinstance(msg.provider_raw, dict)
        ):
            output.append(dict(msg.provider_raw))  # a hosted-tool, tool-output or unknown item, whole
        elif msg.role not in ASSISTANT_ROLES:
            log.add(
                "message",
                f"{msg.role} message in the output (Responses outputs are the model's)",
                where=where,
            )
        elif msg.choice_index not in (None, 0):
            log.add("message", "choices after the first (a Responses response carries one)", where=where)
        else:
            output.extend(_items(msg, len(output), same=same, replay=replay, drops=log, where=where))
    body = response_object(
        response.id,
        response.model,
        response_fields(response.provider_raw) if same else None,
        response.status,
        output,
        usage_json(response.usage, same=same),
    )
    if response.status == "incomplete":
        body["incomplete_details"] = incomplete_details(
            response.finish_reason, response.provider_finish_reason, same=same, drops=log
        )
    if response.error is not None:
        body["error"] = error_json(response.error, log)
    return body


def _items(
    msg: Message, start: int, *, same: bool, replay: bool, drops: DropLog, where: str
) -> list[dict[str, Any]]:
    """The output items of one assistant message, from output index ``start`` on."""
    raw = msg.provider_raw if same else None
    parts = [TextPart(text=msg.content)] if isinstance(msg.content, str) else msg.content
    items: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []

    def flush(status: str) -> None:
        # Text before a call is complete in itself; the message's status is its last item's.
        if content:
            item_id = msg.id if same and msg.id else f"msg_maas_{start + len(items)}"
            extras = raw if msg.type == "message" else None
            items.append(message_item(item_id, status, list(content), phase=msg.phase, extras=extras))
            content.clear()

    for part in parts:
        route = output_route(part, replay=replay)
        if route is not None:
            drop_signature(drops, part, where=where)  # a kept part's signature has no field
        kept = content_json(part, drops) if route in ("text", "refusal") or same else None
        if kept is not None:
            content.append(kept)
        elif route == "call":
            assert isinstance(part, ToolCallPart)
            flush("completed")
            extras = raw if msg.type in ("function_call", "custom_tool_call") else None
            item = call_item(part, part.status or "completed", extras)
            item.setdefault("id", f"fc_maas_{start + len(items)}")
            items.append(item)
        elif route == "reasoning":
            flush("completed")
            assert isinstance(part, ReasoningPart)
            item = reasoning_item(part, msg.status, raw if msg.type == "reasoning" else None)
            item.setdefault("id", f"rs_maas_{start + len(items)}")
            if item["type"] == "compaction" and item.get("encrypted_content") is None:
                item["encrypted_content"] = ""
            items.append(item)
        else:
            drop_part(drops, part, where=where)
    flush(msg.status or "completed")
    return items


def decode_response(body: Any) -> Response:
    """Decode an OpenAI Responses ``response`` object into a canonical response.

    Output items map to messages as the stream decoder maps them; ``status`` and
    ``incomplete_details`` give the status and finish reason (a completed response with client
    tool calls finishes ``tool_calls``); a ``failed`` response carries its ``error``.

    Args:
        body: The parsed JSON of a non-streaming ``POST /v1/responses`` answer (or the
            ``response`` of a terminal stream event).

    Raises:
        RemoteProtocolError: The body is not a response object (not a JSON object, or its
            ``output`` is not a list).
    """
    if not isinstance(body, dict):
        raise RemoteProtocolError("a Responses body must be a JSON object", protocol=PROTOCOL, raw=body)
    output = body.get("output")
    if output is None:
        output = []
    if not isinstance(output, list):
        raise RemoteProtocolError(
            "the response's 'output' must be a list of items", protocol=PROTOCOL, raw=body
        )
    messages: list[Message] = []
    unknown: dict[str, int] = {}
    for item in output:
        parts = item_parts(item)
        for key, part in parts:
            if key == "unknown" and isinstance(part, UnknownPart):
                unknown[part.provider_type] = unknown.get(part.provider_type, 0) + 1
        messages.append(item_message(item, [p for _, p in parts]))
    status, finish, provider_finish = finish_from(body.get("status"), body.get("incomplete_details"))
    error = error_from(body.get("error") or {"type": "response.failed"}) if status == "failed" else None
    model = body.get("model")
    rid = body.get("id")
    return Response(
        protocol=PROTOCOL,
        status=status,
        messages=messages,
        id=rid if isinstance(rid, str) else None,
        model=model if isinstance(model, str) else None,
        finish_reason=_with_calls(finish, messages),
        provider_finish_reason=provider_finish,
        usage=usage_from(body.get("usage")),
        error=error,
        unknown=unknown,
        provider_raw=response_fields(body),
    )


def _with_calls(finish: FinishReason | None, messages: list[Message]) -> FinishReason | None:
    """``stop`` with a client call the model made is ``tool_calls``.

    The aggregator's rule for every protocol (``_aggregate._has_client_call``), applied here
    because a body is not aggregated; it should become one shared helper.
    """
    if finish != "stop":
        return finish
    for msg in messages:
        for part in msg.content if isinstance(msg.content, list) else ():
            if (
                isinstance(part, ToolCallPart)
                and part.kind in ("function", "custom")
                and part.status != "incomplete"
            ):
                return "tool_calls"
    return finish
