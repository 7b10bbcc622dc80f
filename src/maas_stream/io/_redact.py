"""Redaction: the one home of the rules that keep secrets out of recordings, logs and errors.

Credential headers (``authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``,
``cookie``...), credential query parameters (``key=``...), URL userinfo and credential body
fields are replaced by ``[REDACTED]``; every value redacted is collected so that it can also be
scrubbed from anywhere else it shows up (a response that echoes the key).

It must not do IO or contain protocol logic.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["REDACTED", "redact_body", "redact_headers", "redact_url", "scrub"]

REDACTED = "[REDACTED]"
"""What a secret is replaced by, in recordings, logs and errors."""

_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-auth-token",
        "x-amz-security-token",
    }
)
_SECRET_WORDS = frozenset(
    {
        "auth",
        "authorization",
        "key",
        "apikey",
        "secret",
        "token",
        "cookie",
        "session",
        "password",
        "passwd",
        "signature",
        "sig",
        "credential",
        "credentials",
    }
)
_SECRET_ENDINGS = ("key", "token", "secret", "password", "auth")
_SECRET_FIELDS = frozenset(
    {"api_key", "apikey", "api-key", "access_token", "refresh_token", "client_secret", "password", "secret"}
)


def _secret_name(name: str) -> bool:
    # By word, so that ``max_tokens`` or ``x-ratelimit-remaining-tokens`` stay readable while
    # ``x-api-key``, ``access_token`` and ``accessToken`` go.
    low = name.lower()
    if low in _SECRET_HEADERS or low.endswith(_SECRET_ENDINGS):
        return True
    return any(word in _SECRET_WORDS for word in re.split(r"[^a-z0-9]+", low))


def redact_headers(
    headers: Mapping[str, str] | Any, *, secrets: set[str] | None = None, request: bool = True
) -> dict[str, str]:
    """Headers with credential values replaced by ``[REDACTED]`` (names lower-cased).

    Args:
        headers: A mapping, or an httpx ``Headers`` (repeated names are joined with ``, ``).
        secrets: If given, receives every value that was redacted.
        request: Request headers (redact any name that looks like a credential) rather than
            response headers (redact only the known credential headers, so that rate-limit
            headers such as ``x-ratelimit-remaining-tokens`` are kept).
    """
    out: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        hidden = _secret_name(low) if request else low in _SECRET_HEADERS
        if hidden:
            if secrets is not None:
                secrets.add(value)
                # "Bearer sk-..." style: the token alone is the secret too.
                secrets.update(v for v in value.split() if len(v) >= 8)
            value = REDACTED
        out[low] = f"{out[low]}, {value}" if low in out else value
    return out


def redact_url(url: str, *, secrets: set[str] | None = None) -> str:
    """``url`` with credential query parameters (``key=``, ``api_key=``, ``token=``...) and userinfo redacted."""
    parts = urlsplit(str(url))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if secrets is not None:
            secrets.update(p for p in userinfo.split(":") if p)
        netloc = f"{REDACTED}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        redacted = []
        for name, value in pairs:
            if _secret_name(name):
                if secrets is not None and value:
                    secrets.add(value)
                value = REDACTED
            redacted.append((name, value))
        query = urlencode(redacted, safe="[]:/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_body(obj: Any, secrets: set[str]) -> Any:
    """A JSON value with credential fields (``api_key``, ``access_token``...) replaced by ``[REDACTED]``.

    Args:
        obj: The parsed JSON value (dicts and lists are walked; nothing is changed in place).
        secrets: Receives every value that was redacted.
    """
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if isinstance(key, str) and key.lower() in _SECRET_FIELDS and isinstance(value, str):
                secrets.add(value)
                out[key] = REDACTED
            else:
                out[key] = redact_body(value, secrets)
        return out
    if isinstance(obj, list):
        return [redact_body(v, secrets) for v in obj]
    return obj


def scrub(data: bytes, secrets: set[str]) -> bytes:
    """``data`` with every secret of 6 characters or more replaced by ``[REDACTED]`` (longest first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 6 and secret != REDACTED:
            data = data.replace(secret.encode(), REDACTED.encode())
    return data
