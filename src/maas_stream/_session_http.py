"""A realtime session driven turn by turn over an HTTP upstream (sans-IO).

When a :class:`~maas_stream.SessionBridge`'s upstream is an HTTP protocol (``openai-chat``,
``openai-responses``, ``anthropic``, ``gemini``), :class:`HttpTurns` holds the conversation the
client built (its messages, tool results, the assistant turns so far) and turns it into one
streaming request per turn (:class:`TurnRequest`: the whole conversation, the session's
instructions and tools, through the canonical envelope and ``from_canonical``). The response
bytes go through a :class:`~maas_stream.StreamConverter` into the client's protocol, and
:class:`~maas_stream._session_output.ClientWriter` writes them. Text only: audio input, audio
output and a ``response.cancel`` are refused (or reported with ``drop_params``). One turn at a
time; a failed or cut turn ends as the client's protocol ends one (for Realtime, the stream
encoder's failed ``response.done``).

It must not translate realtime upstream messages, decide the session configuration (it is
passed in) or do IO (the caller sends each :class:`TurnRequest`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._bodies import from_canonical
from ._client_model import (
    ActivityStart,
    AddMessages,
    AudioChunk,
    AudioCommit,
    AudioStreamEnd,
    CancelResponse,
    ClientMessage,
    ResponseRequest,
    SessionConfig,
    TextInput,
    ToolResults,
)
from ._convert import StreamConverter
from ._drops import DropLog, Dropped
from ._envelope import Envelope, FunctionTool, Unread
from ._exceptions import LocalProtocolError
from ._model import (
    Message,
    Response,
    ResponseStatus,
    Session,
    SessionEvent,
    StreamError,
    TextPart,
    ToolCallPart,
)
from ._models import model_caps
from ._request import _codec, _with_limit
from ._session_output import Translated

if TYPE_CHECKING:
    from ._session_output import ClientWriter

__all__ = ["HttpTurns", "TurnRequest"]


@dataclass(frozen=True)
class TurnRequest:
    """One turn of a session for an HTTP upstream (see :meth:`SessionBridge.turn_request`).

    Attributes:
        protocol: The upstream protocol the body is written for.
        body: The streaming request body.
        messages: The canonical conversation it holds (system instructions first).
        envelope: The canonical envelope (model, tools...).
        dropped: What of the conversation or envelope the upstream cannot carry.
    """

    protocol: str
    body: dict[str, Any]
    messages: list[Message]
    envelope: Envelope
    dropped: list[Dropped]


class HttpTurns:
    """The conversation and the turns of a session with an HTTP upstream (see the module doc).

    Args:
        client: The client's protocol.
        upstream: The HTTP upstream's protocol.
        model: The model each request names.
        writer: Writes to the client (refusals, the response events).
        calls: Call id → function name, shared with the bridge (filled with each turn's calls).

    Raises:
        LocalProtocolError: ``upstream`` has no HTTP request bodies.
    """

    def __init__(
        self, client: str, upstream: str, *, model: str, writer: ClientWriter, calls: dict[str, str]
    ) -> None:
        _codec(upstream)  # raises for a protocol without HTTP request bodies
        self.client = client
        self.upstream = upstream
        self.model = model
        self._writer = writer
        self._calls = calls
        self._history: list[Message] = []
        self._turns: list[Response] = []
        self._events: list[SessionEvent] = []
        self._http: StreamConverter | None = None
        self._overrides: ResponseRequest | None = None

    def session(self) -> Session:
        """The canonical session so far (the finished turns and the tool results)."""
        status: ResponseStatus = "in_progress" if self._http is not None else "completed"
        return Session(
            protocol=self.upstream,
            status=status,
            responses=list(self._turns),
            events=list(self._events),
            model=self.model,
        )

    def take(self, m: ClientMessage, config: SessionConfig, out: Translated) -> None:
        """Take one client message (not a configuration); set ``out.request`` when a turn starts."""
        w = self._writer
        respond = False
        match m:
            case AddMessages():
                self._history += [msg for msg in m.messages if msg.role not in ("system", "developer")]
                system = [msg for msg in m.messages if msg.role in ("system", "developer")]
                self._history += system
                respond = m.respond
            case ToolResults():
                message = Message(
                    role="tool", content=list(m.results), tool_call_id=m.results[0].tool_call_id
                )
                self._history.append(message)
                self._events.append(
                    SessionEvent(
                        kind="tool_result", type="tool_result", after=len(self._turns), message=message
                    )
                )
                respond = m.respond
            case TextInput():
                self._history.append(Message(role="user", content=[TextPart(text=m.text)]))
                respond = True
            case ResponseRequest():
                lost = list(m.unsupported)
                if m.modalities and "audio" in m.modalities:
                    lost.append("response.modalities")
                if m.output_format is not None or m.voice is not None:
                    lost += [f"response.{n}" for n in ("voice", "output_format") if getattr(m, n) is not None]
                if w.lost(out, lost, "an HTTP upstream answers in text only", m.event_id):
                    return
                self._overrides = m
                respond = True
            case AudioChunk() | AudioCommit() | AudioStreamEnd() | ActivityStart():
                w.lost(
                    out, ["input audio"], "an HTTP upstream takes text turns only", m.event_id, kind="media"
                )
                return
            case CancelResponse():
                w.lost(
                    out,
                    ["response.cancel"],
                    "an HTTP turn cannot be cancelled through the bridge",
                    m.event_id,
                    kind="session_frame",
                )
                return
            case _:
                name = type(m).__name__
                w.lost(
                    out,
                    [getattr(m, "name", name)],
                    "no counterpart for an HTTP upstream",
                    m.event_id,
                    kind="session_frame",
                )
                return
        if respond:
            if self._http is not None:
                w.client_fault(
                    out,
                    "a response is already in progress",
                    None,
                    m.event_id,
                    code="conversation_already_has_active_response",
                )
                return
            out.request = self.request(config)
            self._http = StreamConverter(self.client, protocol=self.upstream)

    def request(self, config: SessionConfig) -> TurnRequest:
        """The HTTP request of the next turn: the whole conversation so far, instructions and tools."""
        c = config
        o = self._overrides
        instructions = o.instructions if o is not None and o.instructions is not None else c.instructions
        tools = o.tools if o is not None and o.tools is not None else c.tools
        messages = list(self._history)
        if instructions:
            messages.insert(0, Message(role="system", content=instructions))
        env = Envelope(
            model=self.model,
            stream=True,
            max_tokens=(o.max_output_tokens if o is not None and o.max_output_tokens else None)
            or c.max_output_tokens,
            temperature=(o.temperature if o is not None and o.temperature is not None else c.temperature),
            tools=[FunctionTool(t.name, t.description, t.parameters) for t in tools or []],
            origin=self.client,
        )
        drops: list[Dropped] = []
        conversation = from_canonical(messages, self.upstream, lossy=drops, source=self.client)
        codec = _codec(self.upstream)
        lost: list[Unread] = []
        body = codec.build(conversation, _with_limit(env, codec, model_caps(self.model)), lost)
        log = DropLog(self.upstream, self.client)
        for u in lost:
            log.add("request_field", u.what, where=u.where)
        return TurnRequest(self.upstream, body, messages, env, drops + log.records)

    def feed(self, data: bytes, config: SessionConfig) -> Translated:
        """Feed the bytes of the turn in progress.

        Raises:
            LocalProtocolError: No turn is in progress.
            RemoteProtocolError: The bytes break the upstream protocol.
        """
        conv = self._http
        if conv is None:
            raise LocalProtocolError("no HTTP turn is in progress (send turn_request() first)")
        out = Translated()
        self._writer.lines(conv.feed(data), out, config)
        return out

    def end(self, config: SessionConfig, *, error: StreamError | None = None) -> Translated:
        """End the turn in progress (``error``: it failed or was cut); the client gets its end.

        Raises:
            LocalProtocolError: No turn is in progress.
        """
        conv = self._http
        if conv is None:
            raise LocalProtocolError("no HTTP turn is in progress")
        w = self._writer
        out = Translated()
        cut = StreamError(type="cut", message="the upstream stream ended early")
        data = conv.fail(error) if error is not None else conv.finish(cut=cut)
        w.lines(data, out, config)
        final = conv.response
        self._http = None
        self._overrides = None
        if final is not None:
            self._turns.append(final)
            self._history += [m for m in final.messages if m.role in ("assistant", "model")]
            for m in final.messages:
                for part in m.content if isinstance(m.content, list) else ():
                    if isinstance(part, ToolCallPart):
                        self._calls[part.id] = part.name
        w.report(out, conv.lossy)
        return out
