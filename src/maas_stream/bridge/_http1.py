"""An upstream's HTTP/1.1 answer, parsed by httptools (llhttp, in C): its head, its body pieces, its end.

The lean transport (``_transport``) feeds each socket read to an :class:`Answer` whole and takes
what the read brought; :func:`check_cut` says whether a connection that closed mid-body cut it.
:data:`AVAILABLE` says whether httptools is installed (without it the bridge keeps httpx2's own
transport).

It must not do IO, and must not contain protocol logic.
"""

from __future__ import annotations

import httpx2

# Whether httptools is installed: without it, new_client keeps httpx2's own transport.
try:
    from httptools import HttpParserError, HttpParserUpgrade, HttpResponseParser
except ImportError:  # pragma: no cover - the serve extra installs it
    AVAILABLE = False
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "MAX_HEAD", "MAX_LINE", "Answer", "check_cut"]

MAX_HEAD = 64 * 1024
"""The most bytes read before the response head (status line and headers) is complete."""
MAX_LINE = 4096
"""The most bytes of a chunked body read without any data in them (a chunk-size or trailer line)."""


class Answer:
    """httptools' callbacks for one answer: its final head, its end, the body pieces of a read.

    ``on_body`` is the list's own ``append`` (no Python frame per chunk); whoever feeds a read
    takes what it collected from :attr:`pieces`. Informational answers (1xx but 101) are passed
    over; a HEAD request's answer ends with its head (llhttp would wait for the body its
    ``content-length`` names, and httptools cannot tell it otherwise).
    """

    __slots__ = (
        "complete",
        "ended",
        "extra",
        "final",
        "head_only",
        "headers",
        "keep_alive",
        "on_body",
        "parser",
        "pieces",
        "reason",
        "stalled",
        "status",
        "trailer",
        "version",
    )

    def __init__(self, *, head_only: bool) -> None:
        self.pieces: list[bytes] = []
        self.on_body = self.pieces.append
        self.head_only = head_only
        self.headers: list[tuple[bytes, bytes]] = []
        self.reason = b""
        self.status = 0
        self.version = b"HTTP/1.1"
        self.final = False  # the final answer's head is complete
        self.complete = False  # ... and its message too (for HEAD: its head)
        self.ended = False  # the parser saw the final message end
        self.keep_alive = False
        self.extra = False  # bytes came after the end: the connection is not reused
        self.trailer = False  # a trailer field was read (progress without body data)
        self.stalled = 0  # bytes of the body read since the last data in it (framing, trailers)
        self.parser = HttpResponseParser(self)
        # Whitespace after a chunk size (some servers send it; h11 accepts it before the CRLF):
        # llhttp refuses it unless told.
        self.parser.set_dangerous_leniencies(lenient_spaces_after_chunk_size=True)

    def on_message_begin(self) -> None:
        if self.complete:
            self.extra = True
            return
        self.headers = []
        self.reason = b""

    def on_status(self, reason: bytes) -> None:
        if not self.complete:
            self.reason += reason  # a status line cut between reads comes in pieces

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.final:
            self.trailer = True  # trailers are read and dropped, as httpcore does
        else:
            self.headers.append((name, value.rstrip(b" \t")))

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        parser = self.parser
        status = parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            return  # an informational answer (100 Continue, 103 Early Hints): the real one follows
        version = parser.get_http_version()
        if not version.startswith("1.") or status < 100:
            raise httpx2.RemoteProtocolError(f"invalid status line: HTTP/{version} {status}")
        self.status = status
        self.version = b"HTTP/1.1" if version == "1.1" else f"HTTP/{version}".encode("ascii")
        self.keep_alive = status != 101 and parser.should_keep_alive()
        self.final = True
        if self.head_only:
            self.complete = True

    def on_message_complete(self) -> None:
        if self.ended or (self.complete and not self.head_only):
            self.extra = True
        elif self.final:
            self.ended = self.complete = True

    def feed(self, data: bytes) -> None:
        """Parse one read (body data lands in :attr:`pieces`); what follows the end is noted.

        Raises:
            httpx2.RemoteProtocolError: The answer is not valid HTTP/1.1.
        """
        try:
            self.parser.feed_data(data)
        except HttpParserUpgrade:
            self.keep_alive = False  # 101: the connection now speaks another protocol
        except HttpParserError as exc:
            if self.complete:
                self.extra = True  # bytes after the answer's end (even ones that parse as nothing)
                return
            cause = exc.__context__
            if isinstance(cause, httpx2.RemoteProtocolError):
                raise cause from None
            part = "body" if self.final else "head"
            raise httpx2.RemoteProtocolError(f"invalid response {part}: {exc}") from None

    def feed_body(self, data: bytes) -> None:
        """:meth:`feed` for a read after the head: chunk framing without data in it is bounded.

        Raises:
            httpx2.RemoteProtocolError: As :meth:`feed`; or more than :data:`MAX_LINE` bytes of
                the body came without data or a trailer field in them (a chunk-size or trailer
                line too long).
        """
        self.feed(data)
        if self.pieces or self.trailer:
            self.stalled = 0
            self.trailer = False
        elif not self.complete:
            self.stalled += len(data)
            if self.stalled > MAX_LINE:
                raise httpx2.RemoteProtocolError(
                    "invalid chunked body: a chunk-size or trailer line is too long"
                )

    def take(self) -> bytes:
        """The body data the reads since the last call brought, as one piece."""
        pieces = self.pieces
        if not pieces:
            return b""
        out = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        pieces.clear()
        return out

    def give_back(self, piece: bytes) -> None:
        """Undo the last :meth:`take` (``piece`` is what it returned): the next one returns it again."""
        self.pieces.insert(0, piece)


def check_cut(headers: list[tuple[bytes, bytes]], received: int) -> None:
    """The connection closed before the body's end: fine only when its end is the close.

    Raises:
        httpx2.RemoteProtocolError: The body is chunked or has a ``content-length`` (httpcore's
            messages).
    """
    length = None
    for name, value in headers:
        key = name.lower()
        if key == b"transfer-encoding" and value.rsplit(b",", 1)[-1].strip().lower() == b"chunked":
            raise httpx2.RemoteProtocolError(
                "peer closed connection without sending complete message body: incomplete chunked read"
            )
        if key == b"content-length":
            length = value
    if length is not None:
        raise httpx2.RemoteProtocolError(
            "peer closed connection without sending complete message body: "
            f"received {received} bytes, expected {int(length)}"
        )
