"""Async IO adapters: httpx / httpx2 responses, async byte iterators, websockets, record and replay.

The sans-IO core (:class:`~maas_stream.StreamAggregator`, :class:`~maas_stream.StreamConverter`)
does the decoding; this package only reads, feeds and forwards, on anyio (asyncio or trio).
"""

from __future__ import annotations

from ._connect import EventSource as EventSource
from ._connect import aconnect as aconnect
from ._exceptions import IdleTimeoutError as IdleTimeoutError
from ._exceptions import IncompleteStreamError as IncompleteStreamError
from ._exceptions import ProviderHTTPError as ProviderHTTPError
from ._exceptions import StreamIOError as StreamIOError
from ._exceptions import StreamTimeoutError as StreamTimeoutError
from ._exceptions import StreamTransportError as StreamTransportError
from ._exceptions import UnexpectedContentTypeError as UnexpectedContentTypeError
from ._record import REDACTED as REDACTED
from ._record import RecordedRequest as RecordedRequest
from ._record import Recorder as Recorder
from ._record import Recording as Recording
from ._record import RecordingMeta as RecordingMeta
from ._record import arecord as arecord
from ._record import arecord_request as arecord_request
from ._record import areplay as areplay
from ._record import meta_path as meta_path
from ._record import redact_headers as redact_headers
from ._record import redact_url as redact_url
from ._record import replay as replay
from ._stream import aaggregate as aaggregate
from ._stream import aconvert as aconvert
from ._stream import astream as astream
from ._stream import iter_convert as iter_convert
from ._stream import stream as stream
from ._wsrecord import WebSocketRecording as WebSocketRecording
from ._wsrecord import arecord_websocket as arecord_websocket

__all__ = (
    "EventSource",
    "IdleTimeoutError",
    "IncompleteStreamError",
    "ProviderHTTPError",
    "REDACTED",
    "RecordedRequest",
    "Recorder",
    "Recording",
    "RecordingMeta",
    "StreamIOError",
    "StreamTimeoutError",
    "StreamTransportError",
    "UnexpectedContentTypeError",
    "WebSocketRecording",
    "aaggregate",
    "aconnect",
    "aconvert",
    "arecord",
    "arecord_request",
    "arecord_websocket",
    "areplay",
    "astream",
    "iter_convert",
    "meta_path",
    "redact_headers",
    "redact_url",
    "replay",
    "stream",
)
