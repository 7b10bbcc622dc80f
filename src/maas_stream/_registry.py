"""The protocol registry: names → decoder, encoder, history codec, validation, detection.

Protocol modules register themselves here (``protocols/__init__.py``). Detection looks at the
first frames of a recording: SSE events for SSE protocols, ``{"dir", "msg"}`` JSON lines for
websocket protocols.

It must not contain protocol logic beyond dispatch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._exceptions import LocalProtocolError, ProtocolDetectionError
from .sse import Decoder, ServerSentEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import ModuleType

    from ._envelope import Envelope, EnvelopeCodec
    from ._interfaces import Framing, StreamDecoder, StreamEncoder
    from ._model import Message, Response

__all__ = [
    "Auth",
    "Endpoint",
    "EndpointMatch",
    "Detector",
    "ModelList",
    "ProtocolSpec",
    "SessionEndpoint",
    "TokenCount",
    "detect_body_protocol",
    "detect_protocol",
    "get_protocol",
    "match_endpoint",
    "match_model_list",
    "match_session",
    "protocol_names",
    "protocol_specs",
    "register",
    "spec_of",
]


@dataclass(frozen=True)
class Auth:
    """How a request to the protocol's provider is authenticated."""

    env: str
    """The environment variable that conventionally holds the API key."""
    header: str
    """The header that carries the key (lower case)."""
    format: str = "{}"
    """How the key is written into the header (``"Bearer {}"``)."""
    fixed: Mapping[str, str] = field(default_factory=dict)
    """Headers every request needs whatever the key (Anthropic's ``anthropic-version``)."""
    query: str | None = None
    """A query parameter that may carry the key instead of the header (Gemini's ``key``)."""
    alternatives: tuple[tuple[str, str], ...] = ()
    """Other ``(header, format)`` pairs the provider accepts the key in (Anthropic also takes
    ``authorization: Bearer {}``, which its SDK now sends)."""

    def headers(self, api_key: str | None) -> dict[str, str]:
        """The headers for a request: the fixed ones, plus the key's when there is one."""
        out = dict(self.fixed)
        if api_key:
            out[self.header] = self.format.format(api_key)
        return out


@dataclass(frozen=True)
class Endpoint:
    """A client-facing HTTP path the protocol is served on (by the bridge)."""

    pattern: str
    """A regular expression matched against the whole path; a named group ``model`` gives the
    model named in the path (Gemini)."""
    stream: bool | None = None
    """``True``/``False`` when the path decides streaming (Gemini), ``None`` when the body does."""
    query: str | None = None
    """A query parameter the streaming path needs on the wire (Gemini's ``alt=sse``)."""
    count: bool = False
    """The path counts a request's input tokens (the spec's :attr:`ProtocolSpec.count_tokens`)
    instead of answering it."""

    def match(self, path: str) -> re.Match[str] | None:
        """The match of ``path`` against :attr:`pattern`, if any."""
        return _compiled(self.pattern).fullmatch(path)


@dataclass(frozen=True)
class ModelList:
    """How the protocol's provider lists its models (``GET``): the path and the body's shape."""

    pattern: str
    """A regular expression matched against the whole request path."""
    body: Callable[[Sequence[str]], dict[str, Any]] = field(repr=False)
    """Model names → the listing body, shaped the way this protocol's SDK reads it."""
    header: str | None = None
    """A request header that tells this listing apart from another one at the same path
    (Anthropic's SDK sends ``anthropic-version``); ``None`` when the path alone decides."""

    def match(self, path: str, headers: Mapping[str, str]) -> bool:
        """Whether a ``GET`` of ``path`` with ``headers`` (lower-case names) asks for this listing."""
        if self.header is not None and self.header not in headers:
            return False
        return _compiled(self.pattern).fullmatch(path) is not None


@dataclass(frozen=True)
class TokenCount:
    """How a protocol's provider counts a request's input tokens without answering it."""

    url: Callable[[str], str] = field(repr=False)
    """The upstream's streaming URL → its count URL (``{model}`` kept for the caller)."""
    request: Callable[[dict[str, Any]], dict[str, Any]] = field(repr=False)
    """A request body of this protocol → the count endpoint's body (fields it refuses removed)."""
    answer: Callable[[int], dict[str, Any]] = field(repr=False)
    """A count → the body this protocol's SDK reads from its count endpoint."""
    read: Callable[[Any], int | None] = field(repr=False)
    """The provider's count answer → the count (``None``: not a count answer)."""


@dataclass(frozen=True)
class SessionEndpoint:
    """Where a session (websocket) protocol is served to clients and reached upstream.

    Declarative only: the bridge reads the model and the key where this says, and never looks
    into a message otherwise.
    """

    paths: tuple[str, ...]
    """Regular expressions matched against the whole websocket path a client connects to."""
    url: str
    """The provider's websocket URL (``{model}`` is filled in per session)."""
    model_query: str | None = None
    """The query parameter of the client's URL naming the model (OpenAI's ``model``)."""
    model_field: tuple[str, ...] = ()
    """Where the first client message names the model (Live's ``setup.model``), when the URL
    does not."""
    model_prefix: str = ""
    """A prefix of the model name in :attr:`model_field` that is not part of the name
    (``models/``)."""
    key_subprotocol: str | None = None
    """A websocket subprotocol prefix that carries the key where browsers cannot set headers
    (``openai-insecure-api-key.``)."""
    subprotocol: str | None = None
    """The subprotocol a server selects when the client offers it (``realtime``)."""
    forward_headers: tuple[str, ...] = ()
    """Client handshake headers passed on to a same-protocol upstream (``openai-beta``: the
    beta event names)."""
    beta_header: tuple[str, str] | None = None
    """A handshake header and value by which a client says it speaks the beta event names
    (``openai-beta: realtime=v1``), for a translator that writes them."""

    def match(self, path: str) -> bool:
        """Whether a client connecting to ``path`` speaks this protocol."""
        return any(_compiled(p).fullmatch(path) is not None for p in self.paths)


@dataclass(frozen=True)
class EndpointMatch:
    """A request path resolved to a protocol (see :func:`match_endpoint`)."""

    spec: ProtocolSpec
    endpoint: Endpoint
    model: str | None = None
    """The model named in the path, if it names one."""


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    found = _PATTERNS.get(pattern)
    if found is None:
        found = _PATTERNS[pattern] = re.compile(pattern)
    return found


@dataclass(frozen=True)
class ProtocolSpec:
    """Everything the library knows how to do with one wire protocol."""

    name: str
    """The protocol's name, as used by the CLI and the API (``openai-chat``, ``anthropic``...)."""
    framing: Framing
    """``"sse"`` for Server-Sent Events, ``"jsonl"`` for websocket frames recorded as JSON lines."""
    decoder: Callable[[], StreamDecoder]
    encoder: Callable[..., StreamEncoder]
    to_canonical: Callable[[Any], list[Message]]
    from_canonical: Callable[..., dict[str, Any]]
    validate: Callable[[Any], list[str]]
    detect: Callable[[str, Any], bool] = field(repr=False)
    """Given the first frame (SSE event name or direction, and the parsed JSON), is it ours?"""
    media_type: str = "text/event-stream"
    detect_body: Callable[[Any], int] | None = field(default=None, repr=False)
    """How sure is it that a request body is of this protocol: 0 no, 1 maybe, 2 surely."""
    encode_response: Callable[..., dict[str, Any]] | None = field(default=None, repr=False)
    """Canonical response → the provider's non-streaming response body (``lossy=`` keyword)."""
    replay_only: frozenset[str] = frozenset()
    """Unknown-part types the decoder itself makes for state only this protocol can replay (e.g.
    Gemini's ``gemini.thought_signature`` on a part kind without a signature field). They are
    understood, so converting elsewhere drops and reports them instead of failing closed."""
    decode_response: Callable[[Any], Response] | None = field(default=None, repr=False)
    """The provider's non-streaming response body → a canonical response."""
    endpoints: tuple[Endpoint, ...] = ()
    """The client-facing paths this protocol is served on (none for websocket protocols yet)."""
    auth: Auth | None = None
    """How requests to the provider are authenticated."""
    url: str | None = None
    """The provider's streaming endpoint (``{model}`` is filled in per request)."""
    error_body: Callable[[int, str], dict[str, Any]] | None = field(default=None, repr=False)
    """An error body (status, message) shaped the way this protocol's SDK reads it."""
    envelope: EnvelopeCodec | None = field(default=None, repr=False)
    """The request envelope codec (the fields around the conversation), when it has one."""
    encoder_options: Callable[[Envelope], dict[str, Any]] | None = field(default=None, repr=False)
    """The stream encoder options that honour what a client asked in its request (Chat's
    ``stream_options.include_usage``), for a bridge serving this protocol."""
    models: ModelList | None = field(default=None, repr=False)
    count_tokens: TokenCount | None = field(default=None, repr=False)
    """How the provider counts input tokens (its count endpoint), when it can."""
    """How a client of this protocol lists models (the bridge answers it with its routes)."""
    session: SessionEndpoint | None = None
    """The websocket endpoint of a session protocol (client paths, provider URL, where the
    model is named)."""


def spec_of(module: ModuleType, framing: Framing, **extra: Any) -> ProtocolSpec:
    """A protocol package's spec, from its conventional names plus what only it can say.

    The package defines ``NAME``, ``StreamDecoder``, ``StreamEncoder``, ``to_canonical``,
    ``from_canonical``, ``validate`` and ``detect``, and may define ``detect_body``,
    ``encode_response`` and ``decode_response``, and the constants ``ENVELOPE``,
    ``ENCODER_OPTIONS``, ``ENDPOINTS``, ``AUTH``, ``URL``, ``ERROR_BODY``, ``REPLAY_ONLY``,
    ``MODELS`` and ``SESSION``; ``extra`` gives anything else.
    """
    optional = ("detect_body", "encode_response", "decode_response")
    declared = {field: getattr(module, name) for name, field in _DECLARED.items() if hasattr(module, name)}
    return ProtocolSpec(
        name=module.NAME,
        framing=framing,
        decoder=module.StreamDecoder,
        encoder=module.StreamEncoder,
        to_canonical=module.to_canonical,
        from_canonical=module.from_canonical,
        validate=module.validate,
        detect=module.detect,
        **{name: getattr(module, name) for name in optional if hasattr(module, name)},
        **declared,
        **extra,
    )


_DECLARED: Final = {
    "ENVELOPE": "envelope",
    "COUNT_TOKENS": "count_tokens",
    "ENCODER_OPTIONS": "encoder_options",
    "ENDPOINTS": "endpoints",
    "AUTH": "auth",
    "URL": "url",
    "ERROR_BODY": "error_body",
    "REPLAY_ONLY": "replay_only",
    "MODELS": "models",
    "SESSION": "session",
}
"""Module constants a protocol package may declare, and the spec field each fills."""


_REGISTRY: Final[dict[str, ProtocolSpec]] = {}
_loaded: list[bool] = []


def _load() -> None:
    # The protocol package registers its modules on import; importing it lazily keeps the
    # registry free of import cycles.
    if not _loaded:
        _loaded.append(True)
        from . import protocols  # noqa: F401


def register(spec: ProtocolSpec) -> None:
    """Add (or replace) a protocol."""
    _REGISTRY[spec.name] = spec


def protocol_specs() -> tuple[ProtocolSpec, ...]:
    """Every registered protocol, sorted by name."""
    _load()
    return tuple(_REGISTRY[name] for name in sorted(_REGISTRY))


def match_endpoint(path: str) -> EndpointMatch | None:
    """The protocol whose client endpoint ``path`` is, or ``None`` for an unknown path."""
    _load()
    path = path.rstrip("/") or "/"
    for spec in _REGISTRY.values():
        for endpoint in spec.endpoints:
            m = endpoint.match(path)
            if m is not None:
                model = m.groupdict().get("model")
                return EndpointMatch(spec, endpoint, model)
    return None


def match_session(path: str) -> ProtocolSpec | None:
    """The session protocol whose websocket endpoint ``path`` is, or ``None``."""
    _load()
    path = path.rstrip("/") or "/"
    for spec in _REGISTRY.values():
        if spec.session is not None and spec.session.match(path):
            return spec
    return None


def match_model_list(path: str, headers: Mapping[str, str]) -> ProtocolSpec | None:
    """The protocol whose model listing a ``GET`` of ``path`` asks for, or ``None``.

    A listing that needs a header (:attr:`ModelList.header`) wins over one at the same path that
    needs none, so one path can serve two SDKs.
    """
    _load()
    path = path.rstrip("/") or "/"
    found: ProtocolSpec | None = None
    for spec in _REGISTRY.values():
        listing = spec.models
        if listing is not None and listing.match(path, headers):
            if listing.header is not None:
                return spec
            found = found or spec
    return found


def protocol_names() -> tuple[str, ...]:
    """The registered protocol names, sorted."""
    _load()
    return tuple(sorted(_REGISTRY))


def get_protocol(name: str) -> ProtocolSpec:
    """Look up a protocol by name.

    Raises:
        LocalProtocolError: No such protocol is registered.
    """
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(protocol_names())
        raise LocalProtocolError(f"unknown protocol {name!r} (known: {known})") from None


def detect_protocol(head: bytes, *, final: bool = False) -> str | None:
    """Tell the protocol of a stream from its first bytes.

    Args:
        head: The first bytes of the stream (at least one whole frame).
        final: The bytes are all there is; fail instead of asking for more.

    Returns:
        The protocol name, or ``None`` when more bytes are needed to decide.

    Raises:
        ProtocolDetectionError: The frames match no registered protocol (or ``final`` and
            there is no whole frame).
    """
    detector = Detector()
    name = detector.feed(head)
    if name is None and final:
        return detector.finish()
    return name


_MAX_FRAMES: Final = 8
"""How many leading frames detection looks at before giving up."""

_FIRST_SLICE: Final = 512
"""How many bytes detection frames first; each next slice is twice the last."""

_BLANK: Final = b"\xef\xbb\xbf \t\r\n"
"""What may come before the first frame (a BOM, blank lines), skipped to tell the framing."""


class Detector:
    """Incremental protocol detection: feed the first chunks, get a name once a frame decides.

    Each byte is scanned once (a megabyte of SSE comments costs a megabyte of scanning, not a
    megabyte per chunk); the chunks are kept so that the pipeline can decode them once the
    protocol is known.
    """

    def __init__(self) -> None:
        _load()
        self._chunks: list[bytes] = []
        self.size = 0
        """How many bytes were fed."""
        self._framing: str | None = None
        self._sse = Decoder()
        self._line: list[bytes] = []
        self._frames = 0
        self._step = _FIRST_SLICE
        """How many bytes the next slice framed holds (it doubles after each)."""

    @property
    def head(self) -> bytes:
        """Every byte fed so far."""
        if len(self._chunks) > 1:
            self._chunks = [b"".join(self._chunks)]
        return self._chunks[0] if self._chunks else b""

    def feed(self, data: bytes) -> str | None:
        """Scan one more chunk; return the protocol once a frame decides, else ``None``.

        Raises:
            ProtocolDetectionError: A leading frame matches no registered protocol.
        """
        self._chunks.append(data)
        self.size += len(data)
        if self._framing is None:
            head = self.head
            stripped = head[:_FIRST_SLICE].lstrip(_BLANK) or head.lstrip(_BLANK)
            if not stripped:
                return None
            self._framing = "jsonl" if stripped.startswith(b"{") else "sse"
            data = head
            if self._framing == "sse":
                name = self._plain_first(head)
                if name is not None:
                    return name
        frame = self._lines if self._framing == "jsonl" else self._sse_frames
        # Only as much as it takes: slices from _FIRST_SLICE bytes on, each twice the last (a
        # whole recording passed as one bytes object is not framed to read its first frame).
        at, size = 0, len(data)
        while at < size:
            step = self._step
            self._step = step * 2
            name = frame(data if at == 0 and step >= size else data[at : at + step])
            if name is not None:
                return name
            at += step
        return None

    def _sse_frames(self, data: bytes) -> str | None:
        return self._events(self._sse.feed(data))

    def _plain_first(self, head: bytes) -> str | None:
        """The protocol, when the stream opens with a plain frame that decides it; else ``None``.

        Plain: one ``data:`` line, or one ``event:`` and one ``data:`` line, ended by a blank
        line, LF or CRLF endings. Read straight from the first bytes, as the SSE decoder would
        frame it; when it does not decide, nothing is changed and the decoder frames from the start.
        """
        if head[:6] != b"data: " and head[:7] != b"event: ":
            return None  # no search for a first frame's end behind comments or blank lines
        lf = head.find(b"\n")
        nl = b"\r\n" if lf > 0 and head[lf - 1] == 0x0D else b"\n"
        end = head.find(nl + nl)  # the first frame's end: only the bytes up to it are read
        if end < 0:
            return None
        block = head[:end].replace(b"\r\n", b"\n") if nl == b"\r\n" else head[:end]
        if 13 in block:
            return None  # a lone CR: the decoder's
        if block[:6] == b"data: " and 10 not in block:
            event, data = "message", block[6:]
        elif block[:7] == b"event: ":
            line_end = block.find(b"\n")
            if (
                line_end < 0
                or block[line_end + 1 : line_end + 7] != b"data: "
                or block.find(b"\n", line_end + 1) >= 0
            ):
                return None
            event, data = block[7:line_end].decode("utf-8", "replace") or "message", block[line_end + 7 :]
        else:
            return None
        name = self._events([ServerSentEvent(event, data.decode("utf-8", "replace"))])
        if name is None:
            self._frames = 0  # the decoder reads this frame again
        return name

    def finish(self) -> str:
        """All bytes are in: decide, or fail.

        Raises:
            ProtocolDetectionError: No protocol can be told from the bytes.
        """
        if self._framing == "jsonl" and self._line:
            line, self._line = b"".join(self._line), []
            name = self._line_protocol(line)
            if name is not None:
                return name
        if self._frames == 0:
            raise ProtocolDetectionError("no complete SSE event or JSON line to detect the protocol from")
        raise ProtocolDetectionError("the first frames match no known protocol")

    def _events(self, events: list[ServerSentEvent]) -> str | None:
        for event in events:
            self._frames += 1
            try:
                payload = msgspec.json.decode(event.data)
            except (msgspec.DecodeError, RecursionError):
                if event.data.startswith("[DONE]"):
                    self._check_count()
                    continue
                payload = None
            for spec in _REGISTRY.values():
                if spec.framing == "sse" and spec.detect(event.event, payload):
                    return spec.name
            if event.event != "message" or payload is not None:
                raise ProtocolDetectionError(
                    f"the first frame matches no known protocol (event {event.event!r}, "
                    f"data {event.data[:80]!r})"
                )
            self._check_count()
        return None

    def _check_count(self) -> None:
        if self._frames >= _MAX_FRAMES:
            raise ProtocolDetectionError(f"the first {_MAX_FRAMES} frames match no known protocol")

    def _lines(self, data: bytes) -> str | None:
        if 10 not in data:
            self._line.append(data)
            return None
        self._line.append(data)
        lines = b"".join(self._line).split(b"\n")
        rest = lines.pop()
        self._line = [rest] if rest else []
        for line in lines:
            name = self._line_protocol(line)
            if name is not None:
                return name
        return None

    def _line_protocol(self, line: bytes) -> str | None:
        if not line.strip():
            return None
        self._frames += 1
        try:
            frame = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise ProtocolDetectionError(f"line {self._frames} is not JSON: {exc}") from None
        if not isinstance(frame, dict) or "msg" not in frame:
            raise ProtocolDetectionError(f'line {self._frames} is not a {{"dir", "msg"}} websocket frame')
        for spec in _REGISTRY.values():
            if spec.framing == "jsonl" and spec.detect(str(frame.get("dir")), frame["msg"]):
                return spec.name
        if self._frames >= _MAX_FRAMES:
            raise ProtocolDetectionError("the first JSON lines match no known websocket protocol")
        return None


def detect_body_protocol(body: Any) -> str:
    """Tell the protocol of a request body (or history) from its shape.

    Raises:
        ProtocolDetectionError: No registered protocol recognises it, or two are equally sure.
    """
    _load()
    scores = []
    for spec in _REGISTRY.values():
        if spec.detect_body is not None:
            score = spec.detect_body(body)
            if score:
                scores.append((score, spec.name))
    if not scores:
        raise ProtocolDetectionError(
            "the body matches no known protocol's request shape; name it with --from"
        )
    scores.sort(reverse=True)
    if len(scores) > 1 and scores[0][0] == scores[1][0]:
        raise ProtocolDetectionError(
            f"the body could be {scores[0][1]} or {scores[1][1]}; name the protocol with --from"
        )
    return scores[0][1]
