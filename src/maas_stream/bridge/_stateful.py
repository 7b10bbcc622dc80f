"""Stored Responses on any upstream: ``store``, ``previous_response_id``, retrieval, resumption, background.

:class:`Stateful` is what the app calls for the Responses API's state (the client protocol is
the one serving ``POST /v1/responses``, found through the registry):

* ``POST /v1/responses``: :meth:`Stateful.begin` reads ``store`` (default true, as OpenAI
  documents), ``background`` and ``previous_response_id``. The previous response's stored
  history (each earlier turn's input messages and canonical answer, canonical) plus the new
  input goes to the upstream in its own protocol: :meth:`Turn.convert` replaces the converted
  request's conversation with ``from_canonical(instructions + history + input)``. A
  same-protocol upstream keeps its native state instead (``native_state``): the upstream's own
  id of the previous response is passed on, nothing expanded. The client sees the store's ids
  (the stream encoder's ``response_id`` option, :func:`encoder_options`; :func:`identified`
  for a JSON answer). ``store: false`` writes nothing.
* ``background: true``: answered at once (``queued``; a streaming request gets the stored
  events as they are written), the upstream exchange runs in a task of the app's lifespan that
  writes every event to the store, so that any process sharing the store can serve
  ``GET /v1/responses/{id}?stream=true&starting_after=N``. That part (runs, replay, cancel)
  is :class:`~maas_stream.bridge._background.Background`, a base of :class:`Stateful`.
* ``GET /v1/responses/{id}`` (``include``), ``DELETE``, ``GET .../input_items`` (OpenAI's list
  shape: ``after``, ``limit``, ``order``), ``POST .../cancel``: :meth:`Stateful.serve`, which
  finds the record for its owner; the bodies are rendered by ``_stored_bodies``.

Interactions (``POST /v1beta/interactions``) use the same machinery (:data:`_INTERACTIONS`):
``store`` (default true, as Google documents), ``previous_interaction_id`` expanded (or passed on
as the upstream's own id to an Interactions upstream), ids of Google's shape (``v1_...``),
``GET /v1beta/interactions/{id}`` (``include_input``; ``?stream=true`` replays the stored
events) and ``DELETE``. ``background`` is not the store's there: it stays a native field.

This module owns: the per-API description (:class:`Api`, ids, paths, encoder options), the
:class:`Turn` (a create request's stateful fields, history expansion, its record, the tee and
save of its answer) and who may see a record: a record is visible only to the bridge key that
made it; another key's id is answered 404, as a missing one is. It must not convert streams
itself (``aconvert`` and the protocol specs do), run background responses (``_background``) or
shape a stored record's body (``_stored_bodies``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl

import msgspec

from .._bodies import from_canonical, to_canonical, validate
from .._exceptions import MaasStreamError
from .._registry import get_protocol, match_endpoint
from ._asgi import send_json
from ._background import Background, sse_events
from ._request import Rejected
from ._store import Store, StoredRequest, StoredResponse, StoreFullError, new_id
from ._stored_bodies import input_items, interaction_body, response_body, whole_number

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    import anyio

    from .._model import Message, Response
    from .._registry import ProtocolSpec
    from ._request import UpstreamRequest

    Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
    Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

__all__ = ["Api", "Resource", "Stateful", "Turn", "encoder_options", "identified"]

log = logging.getLogger("maas_stream")

_RESOURCE: Final = re.compile(
    r"(?:/v1)?/responses/(?P<id>[A-Za-z0-9_-]{1,200})(?P<sub>/input_items|/cancel)?/?"
)
_INTERACTION: Final = re.compile(r"/(?:v1beta|v1alpha|v1)/interactions/(?P<id>[A-Za-z0-9_-]{1,200})/?")
_MAX_TURNS: Final = 10_000
"""The longest chain of ``previous_response_id`` followed (a loop guard)."""

_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("maas_stream_turn", default=None)


def _interaction_id() -> str:
    """An unguessable id of Google's interaction shape: ``v1_`` and 64 URL-safe characters (384 bits)."""
    return "v1_" + secrets.token_urlsafe(48)


@dataclass(frozen=True)
class Api:
    """One stateful client API: where its records live and how its request names them."""

    kind: str
    """The records' :attr:`~maas_stream.bridge._store.StoredResponse.kind`."""
    endpoint: str
    """A path of its create endpoint (finds the protocol spec in the registry)."""
    previous: str
    """The request field naming the previous stored record."""
    instructions: str
    """The request field of the system instructions (not carried to the next turn)."""
    id_option: str
    """The stream encoder's option that sets the answer's id."""
    resource: re.Pattern[str]
    """The path of one stored record (``id``; ``sub`` for its sub-resources)."""
    new_id: Callable[[], str]
    background: bool = True
    """Whether the store runs ``background: true`` requests (else the field stays native)."""
    strip_ids: bool = True
    """Whether the re-rendered history drops item ids (Responses: upstream ids may repeat)."""


_RESPONSES: Final = Api(
    "response", "/v1/responses", "previous_response_id", "instructions", "response_id", _RESOURCE, new_id
)
# A function_call's id is its call id (its result names it): kept. Background stays native.
_INTERACTIONS: Final = Api(
    "interaction",
    "/v1beta/interactions",
    "previous_interaction_id",
    "system_instruction",
    "interaction_id",
    _INTERACTION,
    _interaction_id,
    background=False,
    strip_ids=False,
)


def encoder_options() -> dict[str, Any]:
    """The client stream encoder's options for the current stored turn (its id)."""
    turn = _TURN.get()
    return {} if turn is None or not turn.store else {turn.api.id_option: turn.id}


def identified(response: Response) -> Response:
    """``response`` with the current stored turn's id (unchanged outside one)."""
    turn = _TURN.get()
    if turn is None or not turn.store:
        return response
    return msgspec.structs.replace(response, id=turn.id)


@dataclass
class Turn:
    """One create request (``POST /v1/responses``, ``/v1beta/interactions``) with the store in play."""

    id: str
    owner: str
    body: dict[str, Any]
    """The client body to convert (stateful fields removed or rewritten)."""
    upstream: str
    store: bool
    background: bool
    stream: bool
    previous: StoredResponse | None
    instructions: list[Message]
    input: list[Message]
    history: list[Message] | None
    """The stored conversation before this turn, when it is expanded (``None``: not)."""
    api: Api = _RESPONSES
    frames: list[bytes] = field(default_factory=list)
    request: UpstreamRequest | None = None

    def convert(self, request: UpstreamRequest) -> None:
        """Put the stored history into the converted request (the upstream's own protocol).

        Raises:
            Rejected: The expanded conversation would be refused by the upstream (400).
        """
        self.request = request
        if self.history is None:
            return
        target = get_protocol(self.upstream)
        fields = target.envelope.conversation if target.envelope is not None else frozenset()
        conversation = from_canonical(
            [*self.instructions, *self.history, *self.input], self.upstream, lossy=request.dropped
        )
        for name in fields:
            request.body.pop(name, None)
        request.body.update(conversation)
        faults = validate(request.body, self.upstream)
        if faults:
            raise Rejected(400, "the stored conversation cannot be sent upstream: " + "; ".join(faults))

    def record(self, status: str, expires: float | None) -> StoredResponse:
        """The record of this turn (no answer yet)."""
        assert self.request is not None
        previous = self.previous.id if self.previous is not None else None
        ancestors = [*self.previous.ancestors, self.previous.id] if self.previous is not None else []
        return StoredResponse(
            id=self.id,
            ancestors=ancestors,
            owner=self.owner,
            created_at=time.time(),
            expires_at=expires,
            status=status,
            kind=self.api.kind,
            background=self.background,
            previous_id=previous,
            upstream=self.upstream,
            request=StoredRequest(
                protocol=self.body_protocol,
                envelope=self.request.envelope,
                instructions=self.instructions,
                input=self.input,
            ),
        )

    body_protocol: str = ""


def _history(chain: list[StoredResponse]) -> list[Message]:
    """The conversation the chain of stored responses holds: each one's input, then its answer."""
    out: list[Message] = []
    for record in chain:
        out += record.request.input
        if record.response is not None:
            out += record.response.messages
    return out


def _items(messages: list[Message], protocol: str, *, strip_ids: bool = True) -> list[Any]:
    """Messages as the client protocol's input items, for its checks (ids left out if asked).

    The upstreams' item ids need not be unique across turns (two answers may reuse one);
    the client's rules check that ids are not reused, which is not what is asked here.
    """
    items: list[Any] = from_canonical(messages, protocol, lossy=[]).get("input", [])
    if not strip_ids:
        return items
    return [
        {k: v for k, v in item.items() if k != "id"} if isinstance(item, dict) else item for item in items
    ]


class Stateful(Background):
    """The Responses state on a :class:`~maas_stream.bridge._store.Store` (see the module doc).

    Args:
        store: Where responses are kept.
        native_state: With an upstream of the client's own protocol, pass
            ``previous_response_id`` on (as the upstream's id) instead of expanding the history.
    """

    def __init__(self, store: Store, *, native_state: bool = True) -> None:
        self.store = store
        self.native_state = native_state
        self.apis: dict[str, Api] = {}
        """Each stateful client protocol's API, by protocol name."""
        for api in (_RESPONSES, _INTERACTIONS):
            found = match_endpoint(api.endpoint)
            assert found is not None  # a registered protocol serves it
            self.apis[found.spec.name] = api
        self.spec: ProtocolSpec = get_protocol(self._name(_RESPONSES))
        """The Responses spec (background responses are written in its protocol)."""
        self._tasks: anyio.abc.TaskGroup | None = None
        self._running: dict[str, anyio.CancelScope] = {}

    def _name(self, api: Api) -> str:
        return next(name for name, found in self.apis.items() if found is api)

    def resource(self, path: str) -> Resource | None:
        """The stored-record resource a path names, if any."""
        for name, api in self.apis.items():
            found = api.resource.fullmatch(path)
            if found is not None:
                return Resource(api, get_protocol(name), found["id"], found.groupdict().get("sub"))
        return None

    # ------------------------------------------------------------------ POST /v1/responses

    async def begin(self, spec: ProtocolSpec, body: Any, owner: str, upstream: str) -> Turn | None:
        """Read the stateful fields of a create request; ``None`` for another protocol.

        Raises:
            Rejected: A malformed stateful field (400), or an unknown previous response (404).
        """
        api = self.apis.get(spec.name)
        if api is None or not isinstance(body, dict):
            return None
        if not api.background and body.get("background") is True:
            return None  # not the store's: the field stays native (refused across protocols)
        store, background = body.get("store", True) is not False, body.get("background") is True
        prev_id = body.get(api.previous)
        if prev_id is not None and not isinstance(prev_id, str):
            raise Rejected(400, f"{api.previous} must be a string")
        if background and not store:
            raise Rejected(400, f"a background {api.kind} must be stored: store cannot be false")
        chain = await self._chain(api, prev_id, owner) if prev_id else None
        previous = chain[-1] if chain else None
        native = self.native_state and upstream == spec.name
        out = {k: v for k, v in body.items() if k not in ("background", api.previous)}
        history: list[Message] | None = None
        if previous is not None and native and previous.upstream_id is not None:
            out[api.previous] = previous.upstream_id
        elif chain:
            history = _history(chain)
        if not native:
            # The bridge keeps the state: an upstream of the same protocol stores nothing.
            out.pop("store", None)
            if upstream == spec.name:
                out["store"] = False
        try:
            instructions = to_canonical(
                {"input": [], api.instructions: body.get(api.instructions)}, spec.name
            )
            new_input = to_canonical({"input": body.get("input")}, spec.name)
        except MaasStreamError as exc:
            raise Rejected(400, f"invalid {spec.name} request: {exc}") from None
        if history:
            # The client's own rules are checked on the whole conversation (a tool output
            # answers a call of an earlier turn); the upstream gets the history straight from
            # the canonical messages (Turn.convert), not through this rendering.
            out["input"] = _items(history, spec.name, strip_ids=api.strip_ids) + _items(
                new_input, spec.name, strip_ids=api.strip_ids
            )
        return Turn(
            api=api,
            id=api.new_id(),
            owner=owner,
            body=out,
            upstream=upstream,
            store=store,
            background=background,
            stream=body.get("stream") is True,
            previous=previous,
            instructions=instructions,
            input=new_input,
            history=history,
            body_protocol=spec.name,
        )

    async def _get(self, api: Api, rid: str, owner: str) -> StoredResponse:
        record = await self.store.get(rid, owner)
        if record is None or record.kind != api.kind:
            raise Rejected(404, f"no {api.kind} with id {rid!r}")
        return record

    async def _chain(self, api: Api, rid: str, owner: str) -> list[StoredResponse]:
        """The previous record and every earlier one of its conversation, oldest first."""
        found = await self.store.chain(rid, owner)
        if found is None or found[-1] is None or found[-1].kind != api.kind:
            raise Rejected(404, f"no previous {api.kind} with id {rid!r}")
        last = found[-1]
        if len(last.ancestors) >= _MAX_TURNS:
            raise Rejected(400, f"the conversation is longer than {_MAX_TURNS} stored {api.kind}s")
        out: list[StoredResponse] = []
        for ancestor, record in zip(last.ancestors, found, strict=False):
            if record is None:
                raise Rejected(404, f"no earlier {api.kind} in the conversation with id {ancestor!r}")
            out.append(record)
        return [*out, last]

    @contextlib.contextmanager
    def current(self, turn: Turn | None) -> Any:
        """Make ``turn`` the current one (for :func:`encoder_options` and :func:`identified`)."""
        token = _TURN.set(turn)
        try:
            yield
        finally:
            _TURN.reset(token)

    async def check_room(self, owner: str, need: int) -> None:
        """Refuse a new stored response when the key has no room left for ``need`` bytes (413).

        ``need`` is the request's size, less than what its record will take: an answer that
        then passes the cap is still given, but not stored (and logged).
        """
        cap = self.store.max_bytes
        if cap is not None and await self.store.usage(owner) + need > cap:
            raise Rejected(413, f"this key's stored responses reached the store's cap ({cap} bytes)")

    def tee(self, turn: Turn, send: Send) -> Send:
        """``send``, keeping a copy of a streamed 200 answer's frames for the store."""
        ok = False

        async def teed(message: MutableMapping[str, Any]) -> None:
            nonlocal ok
            if message["type"] == "http.response.start":
                # Only a stream's frames are events (a JSON answer is the record's response).
                ok = message["status"] == 200 and (b"content-type", b"application/json") not in message.get(
                    "headers", ()
                )
            elif ok and message.get("body"):
                turn.frames.append(message["body"])
            await send(message)

        return teed

    async def save(self, turn: Turn, response: Response | None, *, status: str | None = None) -> None:
        """Write a finished turn: its record, its canonical answer, its events (when stored)."""
        if not turn.store:
            return
        record = turn.record("in_progress", self.store.expiry())
        if response is not None:
            record.upstream_id = response.id
            record.response = msgspec.structs.replace(response, id=turn.id)
            record.status = response.status if response.status != "in_progress" else "failed"
        record.status = status or record.status
        try:
            await self.store.put(record, sse_events(turn.frames))
        except StoreFullError as exc:
            log.warning("bridge: response %s not stored: %s", turn.id, exc)

    # ------------------------------------------------------------------ the resource

    async def serve(
        self, method: str, found: Resource, query: bytes, owner: str, receive: Receive, send: Send
    ) -> None:
        """Answer ``GET``/``DELETE`` of a stored record and the Responses sub-resources.

        Responses: ``GET``/``DELETE /v1/responses/{id}``, ``.../input_items``, ``POST
        .../cancel``; Interactions: ``GET``/``DELETE /v1beta/interactions/{id}``.

        Raises:
            Rejected: Missing, expired or another key's (404), a bad parameter (400), a wrong
                method (405).
        """
        api, rid, sub = found.api, found.id, found.sub
        params = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
        allowed = "POST" if sub == "/cancel" else "GET" if sub else "GET, DELETE"
        if method not in allowed.split(", "):
            raise Rejected(405, f"this endpoint takes {allowed}, not {method}", {"allow": allowed})
        record = await self._get(api, rid, owner)
        if api is _INTERACTIONS:
            await self._serve_interaction(method, record, dict(params), receive, send)
        elif sub == "/input_items":
            await send_json(send, 200, input_items(record, params, self.spec.name))
        elif sub == "/cancel":
            await send_json(send, 200, await self._cancel(record))
        elif method == "DELETE":
            await self.store.delete(rid, owner)
            await send_json(send, 200, {"id": rid, "object": "response.deleted", "deleted": True})
        elif dict(params).get("stream") == "true":
            after = whole_number(dict(params).get("starting_after", "-1"), "starting_after")
            await self._replay(rid, owner, after, receive, send)
        else:
            include = [v for k, v in params if k in ("include", "include[]")]
            await send_json(send, 200, response_body(record, include, self.spec.name))

    async def _serve_interaction(
        self, method: str, record: StoredResponse, query: dict[str, str], receive: Receive, send: Send
    ) -> None:
        if method == "DELETE":
            await self.store.delete(record.id, record.owner)
            await send_json(send, 200, {})  # Google answers an empty object
        elif query.get("stream") == "true":
            if "last_event_id" in query:
                raise Rejected(400, "last_event_id is not supported: the stored stream is replayed whole")
            await self._replay(record.id, record.owner, -1, receive, send)
        else:
            await send_json(send, 200, interaction_body(record, query.get("include_input") == "true"))


@dataclass(frozen=True)
class Resource:
    """A stored record's path: its API, the client protocol, the id, a sub-resource."""

    api: Api
    spec: ProtocolSpec
    """The client protocol (its credential header, its error shape)."""
    id: str
    sub: str | None
