"""maas-stream: LLM provider streams in, typed events and canonical messages out, and back.

Decode OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini, Google
Interactions, Google Live and OpenAI Realtime streams into typed events and one canonical
:class:`Response`, and re-encode them as any other provider's stream, losing nothing: not a
parallel tool call, not a thinking signature, not a citation, not an unknown type.

The core is sans-IO and synchronous (``aggregate``, ``convert``, :class:`StreamAggregator`,
:class:`StreamConverter`); thin async adapters live in ``maas_stream.io``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._aggregate import Aggregator as Aggregator
from ._aggregate import AggregatorState as AggregatorState
from ._bodies import convert_history as convert_history
from ._bodies import decode_response as decode_response
from ._bodies import encode_response as encode_response
from ._bodies import from_canonical as from_canonical
from ._bodies import to_canonical as to_canonical
from ._bodies import validate as validate
from ._convert import StreamConverter as StreamConverter
from ._convert import convert as convert
from ._convert import convert_session as convert_session
from ._drops import DropKind as DropKind
from ._drops import DropLog as DropLog
from ._drops import Dropped as Dropped
from ._envelope import Envelope as Envelope
from ._exceptions import ConversionError as ConversionError
from ._exceptions import EventTooLargeError as EventTooLargeError
from ._exceptions import LocalProtocolError as LocalProtocolError
from ._exceptions import MaasStreamError as MaasStreamError
from ._exceptions import ProtocolDetectionError as ProtocolDetectionError
from ._exceptions import ProtocolError as ProtocolError
from ._exceptions import RemoteProtocolError as RemoteProtocolError
from ._exceptions import ValidationError as ValidationError
from ._model import AudioPart as AudioPart
from ._model import CitationPart as CitationPart
from ._model import CodePart as CodePart
from ._model import FilePart as FilePart
from ._model import FinishReason as FinishReason
from ._model import ImagePart as ImagePart
from ._model import Message as Message
from ._model import Part as Part
from ._model import ReasoningPart as ReasoningPart
from ._model import RefusalPart as RefusalPart
from ._model import Response as Response
from ._model import ResponseStatus as ResponseStatus
from ._model import Role as Role
from ._model import Session as Session
from ._model import SessionEvent as SessionEvent
from ._model import SessionEventKind as SessionEventKind
from ._model import StreamError as StreamError
from ._model import TextPart as TextPart
from ._model import ToolCallKind as ToolCallKind
from ._model import ToolCallPart as ToolCallPart
from ._model import ToolResultPart as ToolResultPart
from ._model import UnknownPart as UnknownPart
from ._model import Usage as Usage
from ._models import ModelCaps as ModelCaps
from ._registry import ProtocolSpec as ProtocolSpec
from ._registry import detect_body_protocol as detect_body_protocol
from ._registry import detect_protocol as detect_protocol
from ._registry import get_protocol as get_protocol
from ._registry import protocol_names as protocol_names
from ._request import ConvertedRequest as ConvertedRequest
from ._request import UnsupportedParamsError as UnsupportedParamsError
from ._request import convert_request as convert_request
from ._request import read_envelope as read_envelope
from ._session_bridge import SampleRates as SampleRates
from ._session_bridge import SessionBridge as SessionBridge
from ._session_bridge import Translated as Translated
from ._session_bridge import TurnRequest as TurnRequest
from ._stream_aggregator import StreamAggregator as StreamAggregator
from ._stream_aggregator import aggregate as aggregate
from ._stream_aggregator import aggregate_session as aggregate_session

# A library's log records are the application's to route: without a handler of its own, a
# warning would reach the user's stderr through logging's last resort.
logging.getLogger("maas_stream").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from . import io as io
    from .io import IdleTimeoutError as IdleTimeoutError
    from .io import IncompleteStreamError as IncompleteStreamError
    from .io import ProviderHTTPError as ProviderHTTPError
    from .io import StreamIOError as StreamIOError
    from .io import StreamTimeoutError as StreamTimeoutError
    from .io import StreamTransportError as StreamTransportError
    from .io import UnexpectedContentTypeError as UnexpectedContentTypeError
    from .io import aaggregate as aaggregate
    from .io import aconvert as aconvert
    from .io import astream as astream
    from .io import stream as stream

__version__ = "0.1.0"

# The IO adapters import httpx2 (~100 ms); load them on first use so that the sans-IO core and
# the CLI start fast.
_LAZY_IO = frozenset(
    {
        "IdleTimeoutError",
        "IncompleteStreamError",
        "ProviderHTTPError",
        "StreamIOError",
        "StreamTimeoutError",
        "StreamTransportError",
        "UnexpectedContentTypeError",
        "aaggregate",
        "aconvert",
        "astream",
        "stream",
    }
)


def __getattr__(name: str) -> Any:
    if name == "io" or name in _LAZY_IO:
        import importlib

        io = importlib.import_module(".io", __name__)
        return io if name == "io" else getattr(io, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = (
    "Aggregator",
    "AggregatorState",
    "AudioPart",
    "CitationPart",
    "CodePart",
    "ConversionError",
    "ConvertedRequest",
    "DropKind",
    "DropLog",
    "Dropped",
    "Envelope",
    "EventTooLargeError",
    "FilePart",
    "FinishReason",
    "IdleTimeoutError",
    "ImagePart",
    "IncompleteStreamError",
    "LocalProtocolError",
    "MaasStreamError",
    "Message",
    "ModelCaps",
    "Part",
    "ProtocolDetectionError",
    "ProtocolError",
    "ProtocolSpec",
    "ProviderHTTPError",
    "ReasoningPart",
    "RefusalPart",
    "RemoteProtocolError",
    "Response",
    "ResponseStatus",
    "Role",
    "SampleRates",
    "Session",
    "SessionBridge",
    "SessionEvent",
    "SessionEventKind",
    "StreamAggregator",
    "StreamConverter",
    "StreamError",
    "StreamIOError",
    "StreamTimeoutError",
    "StreamTransportError",
    "TextPart",
    "ToolCallKind",
    "ToolCallPart",
    "ToolResultPart",
    "Translated",
    "TurnRequest",
    "UnexpectedContentTypeError",
    "UnknownPart",
    "UnsupportedParamsError",
    "Usage",
    "ValidationError",
    "aaggregate",
    "aconvert",
    "aggregate",
    "aggregate_session",
    "astream",
    "convert",
    "convert_history",
    "convert_request",
    "convert_session",
    "decode_response",
    "detect_body_protocol",
    "detect_protocol",
    "encode_response",
    "from_canonical",
    "get_protocol",
    "protocol_names",
    "read_envelope",
    "stream",
    "to_canonical",
    "validate",
)
