"""What a source is, and the synchronous reader.

Kinds, told apart by duck typing (no import of httpx or websockets): an httpx / httpx2 streaming
response (also behind an official SDK's wrapper: :func:`unwrap`), read with ``aiter_raw`` /
``iter_raw`` when its body has no content encoding (:func:`response_chunks`); a websocket; an
EventSource; any (async) iterable of bytes or of server-sent events, each event written back as
one SSE frame (:func:`reframe`). The async reader and its timeouts are ``_source``'s; the
synchronous one (:class:`SyncReader`, no timeouts) is here.

It must not contain protocol logic.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Literal

from ._checks import check_sync_response

__all__ = [
    "Kind",
    "SyncReader",
    "hint",
    "identity_encoded",
    "is_response",
    "is_websocket",
    "reframe",
    "response_chunks",
    "sync_response_chunks",
    "unwrap",
]

Kind = Literal["bytes", "messages"]
"""How a source's items are read: chunks of a byte stream, or whole messages (a websocket)."""


def unwrap(source: Any) -> Any:
    """The transport response behind an SDK wrapper, or ``source`` itself."""
    for attr in ("http_response", "response"):
        inner = getattr(source, attr, None)
        if inner is not None and (hasattr(inner, "aiter_bytes") or hasattr(inner, "iter_bytes")):
            return inner
    return source


def reframe(item: Any) -> bytes:
    """A chunk as bytes: a server-sent event object is written back as one SSE frame.

    A ``ServerSentEvent`` (httpx-sse's or httpx2's: ``event``, ``data``, ``id``, ``retry``)
    becomes ``event:`` (left out for the default ``message``), ``id:``, ``retry:`` and one
    ``data:`` line per line of its data, then the blank line that ends it: the protocol decoder
    sees the event as it crossed the wire. An event without data is written without a ``data:``
    line, so the decoder skips it as it would on the raw stream.

    Raises:
        TypeError: ``item`` is neither bytes nor a server-sent event (``str`` included: read
            ``aiter_bytes()``, not ``aiter_text()``).
    """
    if isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    try:
        name, data, ident, retry = item.event, item.data, item.id, item.retry
    except AttributeError:
        name = None
    if not isinstance(name, str) or not isinstance(data, str):
        what = type(item).__name__
        hint = (
            " (read aiter_bytes(), not aiter_text())"
            if isinstance(item, str)
            else " (an SDK's parsed objects cannot be re-read: pass its raw streaming response,"
            " e.g. client.chat.completions.with_streaming_response.create(...))"
        )
        raise TypeError(
            f"the stream yielded {what}: expected bytes chunks or server-sent events "
            f"(httpx-sse / httpx2 ServerSentEvent){hint}"
        )
    out = []
    if name and name != "message":
        out.append(f"event: {name}\n")
    if ident:
        out.append(f"id: {ident}\n")
    if retry is not None:
        out.append(f"retry: {retry}\n")
    if data:
        out.extend(f"data: {line}\n" for line in data.split("\n"))
    out.append("\n")
    return "".join(out).encode()


def hint(source: Any, replay: str, other: str) -> str:
    if isinstance(source, str | bytes | bytearray):
        what = "a path" if isinstance(source, str) else "whole bytes"
        return f" (got {what}: read a recording with {replay}, or pass bytes to ms.aggregate)"
    if isinstance(source, AsyncIterable) or isinstance(source, Iterable):
        return f" (it is the other kind of iterable: use {other})"
    return ""


def is_response(obj: Any) -> bool:
    return hasattr(obj, "status_code") and hasattr(obj, "headers")


def is_websocket(obj: Any) -> bool:
    return hasattr(obj, "recv") and hasattr(obj, "send")


def identity_encoded(response: Any) -> bool:
    """Whether the response's body is sent as is (no ``content-encoding`` but ``identity``)."""
    headers = getattr(response, "headers", None)
    get_list = getattr(headers, "get_list", None)
    if get_list is None:
        return False
    return all(
        value.strip().lower() == "identity" for value in get_list("content-encoding", split_commas=True)
    )


def response_chunks(response: Any) -> AsyncIterator[bytes]:
    """The body of an httpx / httpx2 streaming response, chunk by chunk, content decoded.

    A body sent without a content encoding is read with ``aiter_raw``: the same bytes as
    ``aiter_bytes`` yields then (its decoder is the identity and its chunker passes chunks
    through), one async generator and two calls per chunk fewer; and when the response's
    ``stream`` offers ``maas_chunks`` (the bridge's upstream transport; also behind the
    elapsed-time wrapper of an httpx2 client's ``stream``, whose ``_stream`` it is), that one
    reads it: what ``aiter_raw()`` yields, the response consumed and closed as it leaves it,
    without the layers between. Anything else (gzip, a body already read, a response-like
    object without ``aiter_raw``) is read with ``aiter_bytes``.
    """
    if getattr(response, "is_stream_consumed", None) is False and identity_encoded(response):
        own = _own(response, "maas_chunks")
        if own is not None:
            return own(response)  # type: ignore[no-any-return]
        raw = getattr(response, "aiter_raw", None)
        if raw is not None:
            return raw()  # type: ignore[no-any-return]
    return response.aiter_bytes()  # type: ignore[no-any-return]


def chunk_pusher(response: Any) -> Callable[[Callable[[bytes], bool] | None], None] | None:
    """The ``maas_push`` of the stream :func:`response_chunks` reads through ``maas_chunks``, if it has one.

    ``maas_push(sink)`` (the bridge's upstream transport, ``bridge._body``): while the reader of
    ``maas_chunks`` waits, each chunk it would yield may be handed to ``sink`` in a callback of
    the loop instead (``True``: taken, not yielded; ``False``: yielded as usual); ``None`` stops
    it. A stream read otherwise (``aiter_bytes``: a content encoding) hands nothing over.
    """
    return _own(response, "maas_push")  # type: ignore[no-any-return]


def _own(response: Any, name: str) -> Any:
    """The method ``name`` of the response's stream (the bridge's upstream transport), if it has one.

    Also behind the elapsed-time wrapper of an httpx2 client's ``stream`` (its ``_stream``).
    """
    stream = getattr(response, "stream", None)
    return getattr(stream, name, None) or getattr(getattr(stream, "_stream", None), name, None)


def sync_response_chunks(response: Any) -> Iterable[bytes]:
    """The synchronous twin of :func:`response_chunks` (``iter_raw`` or ``iter_bytes``)."""
    raw = getattr(response, "iter_raw", None)
    if (
        raw is not None
        and getattr(response, "is_stream_consumed", None) is False
        and identity_encoded(response)
    ):
        return raw()  # type: ignore[no-any-return]
    return response.iter_bytes()  # type: ignore[no-any-return]


class SyncReader:
    """The synchronous twin of :class:`AsyncReader` (no idle timeout: use the client's read timeout).

    Raises:
        TypeError: ``source`` is none of the supported kinds.
    """

    def __init__(self, source: Any, *, close: bool = True) -> None:
        source = unwrap(source)
        self.source = source
        self._checked = not is_response(source)
        self._close = close
        self._closed = False
        self.kind: Kind
        self._iter: Iterator[Any]
        if hasattr(source, "iter_bytes") and hasattr(source, "close"):
            self.kind = "bytes"
            self._iter = iter(sync_response_chunks(source))
        elif is_websocket(source) and isinstance(source, Iterable):
            self.kind = "messages"
            self._iter = iter(source)
        elif isinstance(source, Iterable) and not isinstance(source, bytes | bytearray | str):
            self.kind = "bytes"
            self._iter = iter(source)
        else:
            raise TypeError(
                f"cannot read a stream from {type(source).__name__}: expected an httpx/httpx2 streaming "
                "response, an SDK raw streaming response, an httpx-sse / httpx2 EventSource, a websocket, "
                "an Iterable[bytes] or an Iterable of server-sent events"
                + hint(source, "ms.io.replay(path)", "ms.astream(...) or ms.aaggregate(...)")
            )

    def read(self) -> bytes | str | None:
        """The next chunk or message; ``None`` at the end.

        Raises:
            ProviderHTTPError: The response's status is not 2xx.
            UnexpectedContentTypeError: The response is a whole JSON document, not a stream.
        """
        if not self._checked:
            self._checked = True
            check_sync_response(self.source)
        item = next(self._iter, None)
        if item is not None and self.kind == "bytes" and type(item) is not bytes:
            return reframe(item)
        return item

    def close(self) -> None:
        """Close the iterator and the source (once)."""
        if self._closed:
            return
        self._closed = True
        it_close = getattr(self._iter, "close", None)
        if it_close is not None and self._iter is not self.source:
            it_close()
        if self._close:
            close = getattr(self.source, "close", None)
            if close is not None:
                close()
