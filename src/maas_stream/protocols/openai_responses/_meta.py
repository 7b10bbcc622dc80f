"""OpenAI Responses ``response`` envelope ↔ canonical: usage, status and finish, error, skeleton.

The one mapping of everything around the output items (PROTOCOLS.md §2.4-2.6), used in both
directions by the stream decoder (the terminal event), the stream encoder (``response.created``
and the terminal event), the body encoder and :func:`~._body.decode_response`:

* ``usage`` ↔ :class:`~maas_stream.Usage` (:func:`usage_from`, :func:`usage_json`). The SDK's
  ``ResponseUsage`` requires every count, so a count the source did not report is written as 0;
  a same-protocol usage object is kept whole with only the missing counts filled in.
* ``status`` + ``incomplete_details`` ↔ canonical status and finish reason (:func:`finish_from`,
  :func:`incomplete_details`). Responses has no "tool calls" finish: a completed response says
  ``stop`` and the aggregator decides ``tool_calls`` (the one rule for every protocol).
* ``error`` ↔ :class:`~maas_stream.StreamError` (:func:`error_from`, :func:`error_json`).
* The ``response`` object's fixed fields (:func:`response_object`).

It must not know the output items (``_items``) or the stream's event grammar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._model import FinishReason, ResponseStatus, StreamError, Usage
from ..._usage import total_of, usage_of

if TYPE_CHECKING:
    from ..._drops import DropLog

__all__ = [
    "error_from",
    "error_json",
    "finish_from",
    "flat_error",
    "incomplete_details",
    "response_object",
    "usage_from",
    "usage_json",
]

# ---------------------------------------------------------------------- usage


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


_USAGE: Final = (
    ("input_tokens", None, "input_tokens"),
    ("output_tokens", None, "output_tokens"),
    ("total_tokens", None, "total_tokens"),
    ("reasoning_tokens", "output_tokens_details", "reasoning_tokens"),
    ("cache_read_tokens", "input_tokens_details", "cached_tokens"),
    ("cache_write_tokens", "input_tokens_details", "cache_write_tokens"),
)
"""Canonical usage field ↔ (details object or ``None`` for the top level, Responses key): the
one table both directions read."""

_DETAILS: Final = ("input_tokens_details", "output_tokens_details")


def usage_from(raw: Any) -> Usage | None:
    """Map a Responses ``usage`` object to canonical usage (``None`` for a missing one).

    Responses already counts as canonical usage does: ``input_tokens`` includes
    ``input_tokens_details.cached_tokens``/``cache_write_tokens`` and ``output_tokens``
    includes ``output_tokens_details.reasoning_tokens`` (PROTOCOLS.md §2.4).
    """
    if not isinstance(raw, dict):
        return None
    counts: dict[str, int | None] = {}
    for name, group, key in _USAGE:
        source = raw if group is None else _dict(raw.get(group))
        counts[name] = _int(source.get(key))
    return usage_of(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        reasoning_tokens=counts["reasoning_tokens"],
        cache_read_tokens=counts["cache_read_tokens"],
        cache_write_tokens=counts["cache_write_tokens"],
        reported_total=counts["total_tokens"],
        raw=raw,
    )


def usage_json(usage: Usage | None, *, same: bool) -> dict[str, Any] | None:
    """The ``usage`` object of a response (the body and the stream's terminal event alike).

    Args:
        usage: The canonical usage (``None``: the response has none).
        same: Whether ``usage.raw`` is a Responses usage object (a Responses source): it is then
            kept whole, extra keys included, and only the counts it lacks are filled in.
    """
    if usage is None:
        return None
    body: dict[str, Any] = dict(usage.raw) if same and isinstance(usage.raw, dict) else {}
    groups = {group: dict(_dict(body.get(group))) for group in _DETAILS}
    for name, group, key in _USAGE:
        value = total_of(usage) if name == "total_tokens" else getattr(usage, name)
        # The SDK's ResponseUsage requires every count: what the source did not report is 0.
        (body if group is None else groups[group]).setdefault(key, value or 0)
    body.update(groups)
    return body


# ---------------------------------------------------------------------- status and finish

_FINISH: Final[dict[str, FinishReason]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
"""``incomplete_details.reason`` → canonical finish reason (any other reason is ``other``)."""

_REASON: Final[dict[str, str]] = {"length": "max_output_tokens", "content_filter": "content_filter"}
"""Canonical finish reason → ``incomplete_details.reason``."""

_REASONS: Final = frozenset({"max_output_tokens", "max_messages", "content_filter", "steered"})
"""Every ``incomplete_details.reason`` the SDK's model accepts."""


def finish_from(status: Any, details: Any) -> tuple[ResponseStatus, FinishReason | None, str | None]:
    """Map a response's ``status`` and ``incomplete_details`` to canonical ones.

    Returns:
        ``(status, finish_reason, provider_finish_reason)``: ``completed`` finishes ``stop``
        (the aggregator makes it ``tool_calls`` when client calls were made); ``incomplete``
        (and ``cancelled``) finishes by its reason, ``None`` when none is given; ``failed``
        finishes ``error``; ``in_progress`` / ``queued`` have no finish yet.
    """
    reason = _dict(details).get("reason")
    if status == "failed":
        return "failed", "error", None
    if status in ("incomplete", "cancelled"):
        if isinstance(reason, str):
            return "incomplete", _FINISH.get(reason, "other"), reason
        return "incomplete", None, status
    if status in ("in_progress", "queued"):
        return "in_progress", None, status
    return "completed", "stop", status if isinstance(status, str) else None


def incomplete_details(
    finish_reason: FinishReason | None,
    provider_finish_reason: str | None,
    *,
    same: bool,
    drops: DropLog | None = None,
) -> dict[str, Any] | None:
    """The ``incomplete_details`` of an incomplete response.

    Args:
        finish_reason: The canonical finish reason.
        provider_finish_reason: The source's own reason (kept when the source is Responses).
        same: Whether the source is Responses.
        drops: Where a finish reason Responses has no reason for is recorded.
    """
    reason = _REASON.get(finish_reason) if finish_reason is not None else None
    if reason is None and same and provider_finish_reason in _REASONS:
        reason = provider_finish_reason
    if reason is None:
        if finish_reason is not None and drops is not None:
            drops.add("field", f"finish reason {finish_reason!r} (Responses has no incomplete reason for it)")
        return None
    return {"reason": reason}


# ---------------------------------------------------------------------- errors

_CODES: Final = frozenset(
    {
        "server_error",
        "rate_limit_exceeded",
        "invalid_prompt",
        "data_residency_mismatch",
        "bio_policy",
        "misalignment_policy_violation",
        "vector_store_timeout",
        "invalid_image",
        "invalid_image_format",
        "invalid_base64_image",
        "invalid_image_url",
        "image_too_large",
        "image_too_small",
        "image_parse_error",
        "image_content_policy_violation",
        "invalid_image_mode",
        "image_file_too_large",
        "unsupported_image_media_type",
        "empty_image_file",
        "failed_to_download_image",
        "image_file_not_found",
    }
)
"""The closed set of ``response.error.code`` values (the SDK's ``ResponseError``)."""


def error_from(raw: Any, event: dict[str, Any] | None = None) -> StreamError:
    """Map a Responses error (flat event, nested ``error`` object, or ``response.error``)."""
    body = _dict(raw)
    code = body.get("code")
    message = body.get("message")
    kind = body.get("type") if isinstance(body.get("type"), str) and body.get("type") != "error" else None
    return StreamError(
        type=str(kind or code or "error"),
        message=message if isinstance(message, str) else None,
        code=None if code is None else str(code),
        raw=event if event is not None else raw,
    )


def error_json(error: StreamError, drops: DropLog | None = None) -> dict[str, Any]:
    """The ``error`` of a failed response: its code is one of the fixed set."""
    code = error.code or error.type
    if code not in _CODES:
        if drops is not None:
            drops.add("field", f"error code {code!r} (not a Responses error code; sent as server_error)")
        code = "rate_limit_exceeded" if "rate_limit" in code else "server_error"
    return {"code": code, "message": error.message or error.type}


def flat_error(error: StreamError) -> dict[str, Any]:
    """The body of a stream's ``error`` event (its code is free text)."""
    return {"code": error.code or error.type, "message": error.message or error.type, "param": None}


# ---------------------------------------------------------------------- the response object

_KEPT_ELSEWHERE: Final = ("status", "output", "usage")


def response_fields(raw: Any) -> dict[str, Any] | None:
    """A response object's fields with no canonical home (all but status, output and usage)."""
    if not isinstance(raw, dict):
        return None
    return {k: v for k, v in raw.items() if k not in _KEPT_ELSEWHERE}


def response_object(
    id: str | None,
    model: str | None,
    base: Any,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``response`` object.

    The SDK's required fields, then ``base`` (a Responses source's own fields, kept), then the
    given values.

    Args:
        id: The response id (``resp_maas`` when unknown).
        model: The model (``unknown`` when unknown).
        base: A Responses source's response fields (see :func:`response_fields`), or ``None``.
        status: The wire status.
        output: The output items.
        usage: The usage object (:func:`usage_json`).
    """
    body: dict[str, Any] = {
        "id": "resp_maas",
        "object": "response",
        "created_at": 0,
        "model": "unknown",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
    }
    if isinstance(base, dict):
        body.update(base)
    body["id"] = id or body["id"]
    body["model"] = model or body["model"]
    body["status"] = status
    body["output"] = output
    body["usage"] = usage
    return body
