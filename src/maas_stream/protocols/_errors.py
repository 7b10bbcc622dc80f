"""Error bodies in the shapes the official SDKs read, one per provider family.

OpenAI's shape serves Chat, Responses and Realtime; Google's serves Gemini, Interactions and
Live; Anthropic's serves Messages. Each protocol's spec names its shape; the bridge writes an
error through the spec and never chooses a shape itself.

It must not do IO.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["anthropic_error_body", "google_error_body", "openai_error_body"]

_OPENAI_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
_ANTHROPIC_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_GOOGLE_STATUS: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def openai_error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI error body (``{"error": {"message", "type", "param", "code"}}``)."""
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def anthropic_error_body(status: int, message: str) -> dict[str, Any]:
    """An Anthropic error body (``{"type": "error", "error": {"type", "message"}}``)."""
    kind = _ANTHROPIC_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def google_error_body(status: int, message: str) -> dict[str, Any]:
    """A Google API error body (``{"error": {"code", "message", "status"}}``)."""
    state = _GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": state}}
