"""Whether a provider's HTTP answer is a stream, and what a transport failure is in the library's terms.

Two rules live here, both shared by the readers (``_source.py``), the connection helpers
(``_connect.py``) and the bridge's upstream:

* a response is checked before its first read: a non-2xx status raises
  :class:`ProviderHTTPError` with the provider's body (read up to :data:`MAX_ERROR_BODY`, then the
  response is closed), a 2xx answer that is not a stream raises
  :class:`UnexpectedContentTypeError`;
* an httpx / httpx2 / ``OSError`` failure becomes a :class:`StreamTimeoutError` or
  :class:`StreamTransportError` (:func:`transport_error`), of the httpx-compatible variant for
  httpx's own errors.

It must not read a stream's data (that is the readers' job), hold timeouts, or contain protocol
logic; httpx is never imported (its classes are looked up only when it is already loaded).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import anyio
import httpx2

from ._exceptions import (
    ProviderHTTPError,
    StreamIOError,
    StreamTimeoutError,
    StreamTransportError,
    UnexpectedContentTypeError,
    error_summary,
    for_transport,
    parse_body,
)
from ._redact import redact_url

__all__ = ["MAX_ERROR_BODY", "check_response", "check_sync_response", "request_of", "transport_error"]

MAX_ERROR_BODY = 1024 * 1024
"""How much of an error body is read to put on the exception."""


def request_of(response: Any) -> Any:
    """The request an httpx / httpx2 response answers, or ``None`` when it has none."""
    try:
        return response.request
    except (RuntimeError, AttributeError):  # httpx raises RuntimeError when no request is set
        return None


_TIMEOUT_PHASES = {"ConnectTimeout": "connect", "PoolTimeout": "pool", "WriteTimeout": "write"}


def _transport_classes(name: str) -> tuple[type[BaseException], ...]:
    # httpx is not imported here: when it is not loaded, none of its errors can occur.
    found: list[type[BaseException]] = [getattr(httpx2, name)]
    mod = sys.modules.get("httpx")
    if mod is not None and hasattr(mod, name):
        found.append(getattr(mod, name))
    return tuple(found)


def transport_error(exc: BaseException, *, received: int = 0, where: str = "") -> StreamIOError | None:
    """The library error for a transport library's error (httpx, httpx2, ``OSError``), else ``None``.

    An httpx / httpx2 ``TimeoutException`` becomes a :class:`StreamTimeoutError` (its ``phase``
    from the class: connect, pool, write or read), any other ``TransportError`` or ``OSError`` a
    :class:`StreamTransportError`, of the httpx-compatible variant for httpx's errors. The
    caller raises it ``from exc``.

    Args:
        exc: The error caught.
        received: How many bytes (or messages) had arrived before it.
        where: What was being done, for the message (e.g. ``"connecting to the provider"``).
    """
    if isinstance(exc, StreamIOError) or not isinstance(exc, Exception):
        return None
    request = getattr(exc, "_request", None)
    detail = str(exc) or type(exc).__name__
    doing = where or f"reading the provider's stream (after {received} bytes)"
    if isinstance(exc, _transport_classes("TimeoutException")):
        phase = _TIMEOUT_PHASES.get(type(exc).__name__, "read")
        cls: type[StreamIOError] = for_transport(StreamTimeoutError, exc)
        return cls(  # type: ignore[call-arg]
            f"timed out ({phase}) {doing}: {detail}",
            phase=phase,
            timeout=None,
            received=received,
            request=request,
        )
    if isinstance(exc, (*_transport_classes("TransportError"), OSError)):
        cls = for_transport(StreamTransportError, exc)
        return cls(  # type: ignore[call-arg]
            f"the connection failed {doing}: {detail}", received=received, request=request
        )
    return None


def _status_error(response: Any, body: bytes) -> ProviderHTTPError:
    parsed = parse_body(body)
    status = int(response.status_code)
    reason = getattr(response, "reason_phrase", "") or ""
    url = getattr(request_of(response), "url", None)
    where = f" from {redact_url(str(url))}" if url is not None else ""
    cls = for_transport(ProviderHTTPError, response)
    err = cls(
        f"provider answered {status} {reason}{where}: {error_summary(parsed)}".replace("  ", " "),
        status=status,
        body=parsed,
        headers={k.lower(): v for k, v in response.headers.items()},
        content=body,
        request=request_of(response),
        response=response,
    )
    return err


def _type_error(response: Any, body: bytes, content_type: str) -> UnexpectedContentTypeError:
    parsed = parse_body(body)
    cls = for_transport(UnexpectedContentTypeError, response)
    err = cls(
        f"expected a stream (text/event-stream) but the provider sent {content_type or 'no content-type'}"
        f" with status {response.status_code}: {error_summary(parsed)}",
        status=int(response.status_code),
        content_type=content_type,
        body=parsed,
        request=request_of(response),
    )
    return err


def _bad_content_type(content_type: str, require_sse: bool) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    if require_sse:
        return media != "text/event-stream"
    # Lenient: only what is surely not a stream (a whole JSON document: ``stream`` forgotten).
    return media == "application/json"


async def check_response(response: Any, *, require_sse: bool = False) -> None:
    """Raise with the provider's body when an async response is not a 2xx stream.

    Args:
        response: An httpx / httpx2 streaming response.
        require_sse: Also require ``content-type: text/event-stream``; otherwise only a plain
            ``application/json`` answer is refused.

    Raises:
        ProviderHTTPError: A non-2xx status (the response is read, up to 1 MiB, and closed).
        UnexpectedContentTypeError: A 2xx answer that is not a stream.
    """
    status = int(response.status_code)
    content_type = response.headers.get("content-type", "")
    bad_status = not 200 <= status < 300
    if not bad_status and not _bad_content_type(content_type, require_sse):
        return
    body = bytearray()
    chunks = response.aiter_bytes()
    try:
        async for chunk in chunks:
            body += chunk
            if len(body) >= MAX_ERROR_BODY:
                break
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()
            # Ends httpx's nested generators if we stopped early (see _source.AsyncReader._close_response).
            with contextlib.suppress(Exception):
                await anext(chunks)
    if bad_status:
        raise _status_error(response, bytes(body))
    raise _type_error(response, bytes(body), content_type)


def check_sync_response(response: Any, *, require_sse: bool = False) -> None:
    """The synchronous twin of :func:`check_response`.

    Raises:
        ProviderHTTPError: A non-2xx status.
        UnexpectedContentTypeError: A 2xx answer that is not a stream.
    """
    status = int(response.status_code)
    content_type = response.headers.get("content-type", "")
    bad_status = not 200 <= status < 300
    if not bad_status and not _bad_content_type(content_type, require_sse):
        return
    body = bytearray()
    try:
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) >= MAX_ERROR_BODY:
                break
    finally:
        response.close()
    if bad_status:
        raise _status_error(response, bytes(body))
    raise _type_error(response, bytes(body), content_type)
