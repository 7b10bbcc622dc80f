"""How a stored record is shown: each stateful API's resource shape, rendered from the record alone.

* :func:`response_body`: OpenAI's ``Response`` object of a stored response (the store's
  ``status``, ``background``, ``previous_response_id``, ``store``, ``created_at``); encrypted
  reasoning only when ``include`` asks for it, as OpenAI does.
* :func:`interaction_body`: Google's ``Interaction`` resource (``created``/``updated``,
  ``previous_interaction_id``, the input only with ``include_input``).
* :func:`input_items`: OpenAI's ``input_items`` list (``after``, ``limit``, ``order``, item ids
  derived from the response id).

Pure functions of a :class:`~maas_stream.bridge._store.StoredResponse`: they must not read or
write the store, send anything, or decide who may see a record (``Stateful`` does).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._bodies import encode_response, from_canonical
from .._model import Response
from ._request import Rejected

if TYPE_CHECKING:
    from ._store import StoredResponse

__all__ = ["input_items", "interaction_body", "response_body", "whole_number"]


def interaction_body(record: StoredResponse, include_input: bool) -> dict[str, Any]:
    """A stored interaction as Google's ``Interaction`` resource."""
    name = record.request.protocol
    response = record.response or Response(
        protocol=name, id=record.id, model=record.request.envelope.model, status="in_progress"
    )
    body = encode_response(response, name)
    body["id"] = record.id
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created_at))
    body.update(created=created, updated=created)
    if record.previous_id is not None:
        body["previous_interaction_id"] = record.previous_id
    if include_input:
        body["input"] = from_canonical(list(record.request.input), name, lossy=[]).get("input", [])
    return body


def response_body(record: StoredResponse, include: Any, protocol: str) -> dict[str, Any]:
    """A stored response as OpenAI's ``Response`` object (``include``: the fields asked for)."""
    response = record.response or Response(
        protocol=protocol, id=record.id, model=record.request.envelope.model, status="in_progress"
    )
    body = encode_response(response, protocol)
    body.update(
        status=record.status,
        background=record.background,
        previous_response_id=record.previous_id,
        store=True,
        created_at=int(record.created_at),
    )
    if "reasoning.encrypted_content" not in include:  # OpenAI returns it only when asked
        for item in body.get("output", ()):
            if isinstance(item, dict):
                item.pop("encrypted_content", None)
    return body


def input_items(record: StoredResponse, params: list[tuple[str, str]], protocol: str) -> dict[str, Any]:
    """A stored response's input as OpenAI's ``input_items`` list (``after``, ``limit``, ``order``).

    Raises:
        Rejected: A bad ``order`` or ``limit`` (400).
    """
    query = dict(params)
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise Rejected(400, "order must be asc or desc")
    limit = whole_number(query.get("limit", "20"), "limit")
    if not 1 <= limit <= 100:
        raise Rejected(400, "limit must be between 1 and 100")
    items = from_canonical(list(record.request.input), protocol).get("input", [])
    items = [{"id": f"item_{record.id.partition('_')[2]}_{i}", **item} for i, item in enumerate(items)]
    for item in items:
        item.setdefault("type", "message")
        if item["type"] == "message" and isinstance(item.get("content"), str):
            item["content"] = [{"type": "input_text", "text": item["content"]}]
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after is not None:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }


def whole_number(value: str, name: str) -> int:
    """``value`` (a query parameter named ``name``) as an int.

    Raises:
        Rejected: Not a whole number (400).
    """
    try:
        return int(value)
    except ValueError:
        raise Rejected(400, f"{name} must be a whole number, not {value!r}") from None
