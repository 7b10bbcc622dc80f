"""The bridge's front door: bridge keys, content type, Host and Origin, CORS, model names.

Every request passes here before it costs anything upstream. A client proves it holds a bridge
key in its own protocol's credential header (the spec's ``Auth``: the header, its format, and a
query parameter where the provider accepts one), so each SDK authenticates as it would with its
provider. Keys are compared in constant time (as SHA-256 digests, so neither their content nor
their length leaks). A ``POST`` must be JSON (a web page can send ``text/plain`` cross-origin
without asking). The ``Host`` header must be one the operator serves (a DNS-rebinding page
reaches a loopback bridge with its own host name), a browser's ``Origin`` must be the bridge
itself or a CORS origin the operator allowed, and a model name must be safe to put into an
upstream URL.

It must not contain protocol logic: the header names come from the specs.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlsplit

from ._request import Rejected

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from .._registry import ProtocolSpec

__all__ = [
    "KEYS_ENV",
    "LOOPBACK_HOSTS",
    "Guard",
    "check_model",
    "is_loopback",
    "load_bridge_keys",
]

KEYS_ENV: Final = "MAAS_STREAM_BRIDGE_KEYS"
"""The environment variable holding bridge keys (comma- or whitespace-separated)."""

LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})
"""The host names a loopback bind accepts by default."""

_MODEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+/-]{0,255}")
"""A conservative model name: letters, digits and ``. _ : @ + / -``, starting with a letter or
digit (``gpt-4o``, ``claude-sonnet-4@20250514``, ``models/gemini-2.5-pro``,
``meta-llama/Llama-3-8b``)."""

_JSON_TYPE: Final = re.compile(r"application/(?:[\w.+-]+\+)?json\s*(?:;.*)?", re.IGNORECASE)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is loopback only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_model(model: str | None) -> None:
    """Refuse a model name that is not safe to put into an upstream URL.

    Raises:
        Rejected: ``model`` has characters outside a conservative set (``?``, ``#``, ``%``,
            spaces...) or a ``..`` path segment (400).
    """
    if model is None:
        return
    if _MODEL.fullmatch(model) is None or ".." in model.split("/") or "//" in model:
        shown = model if len(model) <= 80 else model[:80] + "..."
        raise Rejected(
            400,
            f"invalid model name {shown!r}: use letters, digits and . _ : @ + / - "
            "(no '..' segment, no '?', '#' or '%')",
        )


def load_bridge_keys(
    keys: Iterable[str] = (), *, env: Mapping[str, str] | None = None, files: Iterable[str | Path] = ()
) -> tuple[str, ...]:
    """Bridge keys from flags, the :data:`KEYS_ENV` environment variable and key files.

    A key file holds one key per line (blank lines and ``#`` comments skipped).

    Raises:
        OSError: A key file cannot be read.
        ValueError: A key is shorter than 8 characters.
    """
    environ = os.environ if env is None else env
    found = [k.strip() for k in keys]
    found += environ.get(KEYS_ENV, "").replace(",", " ").split()
    for path in files:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                found.append(line)
    short = [k for k in found if len(k) < 8]
    if short:
        raise ValueError(f"{len(short)} bridge key(s) shorter than 8 characters")
    return tuple(dict.fromkeys(k for k in found if k))


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).digest()


def _host_of(value: str) -> str:
    """The host name of a ``Host`` header value (port and IPv6 brackets removed, lower case)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class Guard:
    """What a request must show before the bridge works for it.

    Args:
        keys: Bridge keys; an empty tuple turns authentication off.
        allowed_hosts: ``Host`` names served (``None``: any host).
        cors_origins: Browser origins allowed cross-origin (``"*"``: any); empty turns CORS off.
        require_json: Refuse a ``POST`` body that is not ``application/json`` (415).
    """

    keys: tuple[str, ...] = ()
    allowed_hosts: frozenset[str] | None = None
    cors_origins: frozenset[str] = frozenset()
    require_json: bool = True
    _digests: tuple[bytes, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_digests", tuple(_digest(k) for k in self.keys))
        if self.allowed_hosts is not None:
            hosts = frozenset(h.strip("[]").lower() for h in self.allowed_hosts)
            object.__setattr__(self, "allowed_hosts", hosts)

    @property
    def auth(self) -> bool:
        """Whether bridge keys are required."""
        return bool(self._digests)

    def secrets(self) -> tuple[str, ...]:
        """The values no log line or error body may show."""
        return self.keys

    def check_host(self, headers: Mapping[str, str]) -> None:
        """Refuse a ``Host`` the bridge does not serve (DNS rebinding).

        Raises:
            Rejected: 421 naming the host.
        """
        if self.allowed_hosts is None:
            return
        host = _host_of(headers.get("host", ""))
        if host not in self.allowed_hosts:
            raise Rejected(
                421, f"host {host!r} is not served here (allowed: {', '.join(sorted(self.allowed_hosts))})"
            )

    def check_origin(self, headers: Mapping[str, str]) -> None:
        """Refuse a browser request from an origin that is neither the bridge nor an allowed one.

        Raises:
            Rejected: 403 naming the origin.
        """
        origin = headers.get("origin")
        if origin is None or self.cors_allows(origin):
            return
        if urlsplit(origin).netloc.lower() == headers.get("host", "").lower():
            return  # same origin
        raise Rejected(403, f"origin {origin!r} is not allowed (see --cors-origin)")

    def cors_allows(self, origin: str) -> bool:
        """Whether ``origin`` may call the bridge cross-origin."""
        return "*" in self.cors_origins or origin in self.cors_origins

    def cors_headers(self, headers: Mapping[str, str]) -> Sequence[tuple[bytes, bytes]]:
        """The CORS response headers for a request (none when its origin is not allowed)."""
        origin = headers.get("origin")
        if origin is None or not self.cors_allows(origin):
            return ()  # (shared: nothing per request)
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"vary", b"origin"),
            (
                b"access-control-expose-headers",
                b"retry-after, x-request-id, request-id, x-maas-stream-upstream",
            ),
        ]

    def preflight(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        """The headers of the answer to a CORS preflight (``OPTIONS``).

        Raises:
            Rejected: CORS is off, or the origin is not allowed (403).
        """
        origin = headers.get("origin")
        if origin is None or not self.cors_allows(origin):
            raise Rejected(403, "CORS preflight refused: the origin is not allowed (see --cors-origin)")
        asked = headers.get("access-control-request-headers", "")
        return [  # the app adds the allow-origin headers to every answer, this one too
            (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
            (b"access-control-allow-headers", asked.encode("latin-1")),
            (b"access-control-max-age", b"600"),
        ]

    def check_content_type(self, headers: Mapping[str, str]) -> None:
        """Refuse a ``POST`` body that is not JSON.

        Raises:
            Rejected: 415 naming the content type received.
        """
        if not self.require_json:
            return
        kind = headers.get("content-type", "")
        if _JSON_TYPE.fullmatch(kind.strip()) is None:
            raise Rejected(415, f"the request body must be application/json, not {kind or 'untyped'!r}")

    def authenticate(self, spec: ProtocolSpec | None, headers: Mapping[str, str], query: bytes) -> None:
        """Check the bridge key in ``spec``'s credential header (or query parameter).

        With no ``spec`` (the bridge's own endpoints) the key is read as ``Authorization:
        Bearer``.

        Raises:
            Rejected: Authentication is on and no valid key was shown (401).
        """
        if not self._digests:
            return
        given = self._presented(spec, headers, query)
        ok = False
        if given is not None:
            digest = _digest(given)
            for known in self._digests:  # every key is compared: the time does not tell which
                ok |= hmac.compare_digest(digest, known)
        if not ok:
            where = self._where(spec)
            what = "an invalid bridge key" if given is not None else "no bridge key"
            raise Rejected(401, f"{what}: send one in {where}", {"www-authenticate": "Bearer"})

    @staticmethod
    def _presented(spec: ProtocolSpec | None, headers: Mapping[str, str], query: bytes) -> str | None:
        auth = spec.auth if spec is not None else None
        ways = (
            [(auth.header, auth.format), *auth.alternatives]
            if auth is not None
            else [("authorization", "Bearer {}")]
        )
        for header, fmt in ways:
            value = headers.get(header)
            if value is not None:
                prefix, _, suffix = fmt.partition("{}")
                if value[: len(prefix)].lower() == prefix.lower() and value.endswith(suffix):
                    return value[len(prefix) : len(value) - len(suffix) if suffix else None].strip()
                return None
        if auth is not None and auth.query is not None and query:
            for name, found in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
                if name == auth.query:
                    return found
        return None

    @staticmethod
    def _where(spec: ProtocolSpec | None) -> str:
        auth = spec.auth if spec is not None else None
        if auth is None:
            return "the authorization header (Bearer)"
        where = " or ".join(f"the {h} header" for h in (auth.header, *(a[0] for a in auth.alternatives)))
        return f"{where} or the ?{auth.query}= query parameter" if auth.query else where
