"""Whole requests across protocols: conversation + envelope, the model's limits, the drop policy.

:func:`convert_request` is the one place where a request body of one protocol becomes a body of
another: the conversation goes through the history codecs (:func:`convert_history`), the
envelope through the protocols' envelope codecs (``spec.envelope``), the target model's
capabilities (``_models``) decide which sampling parameters survive and the default limit, and
the drop policy decides what happens to what cannot be carried:

* a field whose loss changes what the model does (:data:`~maas_stream._envelope.AFFECTS_OUTPUT`
  and each protocol's own such fields: tool choice, output schema, ``strict``, stop sequences,
  reasoning settings, ``n`` > 1...) is refused with :class:`UnsupportedParamsError` naming the
  client's own field, unless the caller passed ``drop_params=True``;
* anything else (sampling the target model refuses, seed, metadata, usage switches...) is dropped
  and reported.

Every loss is a :class:`~maas_stream.Dropped` record of kind ``request_field``, logged once as a
warning on the ``maas_stream`` logger (as :func:`convert_history` logs its own). A request to the
SAME protocol is forwarded as it is (only the model, the streaming switch and what the model
refuses are changed), so nothing a conversion could lose is touched.

It must not know any wire protocol (the specs' codecs do) or do IO.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from ._bodies import convert_history
from ._drops import DropLog, Dropped
from ._envelope import Envelope, EnvelopeCodec, Unread
from ._exceptions import LocalProtocolError, ValidationError
from ._models import ModelCaps, model_caps
from ._registry import get_protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ConvertedRequest",
    "LostField",
    "UnsupportedParamsError",
    "convert_request",
    "estimate_input_tokens",
    "read_envelope",
]

log = logging.getLogger("maas_stream")


class UnsupportedParamsError(ValidationError):
    """A request field that changes what the model does cannot be carried to the target.

    Pass ``drop_params=True`` (``--drop-params``) to drop and report it instead.

    Attributes:
        fields: The client's own field paths that cannot be carried.
        protocol: The target protocol.
    """

    def __init__(self, protocol: str, source: str, lost: list[Unread], fields: list[str]) -> None:
        self.fields = fields
        faults = [
            f"{u.what}{f' at {u.where}' if u.where else ''} cannot be carried to {protocol}"
            " (pass drop_params to drop it)"
            for u in lost
        ]
        super().__init__(source, faults)
        self.target = protocol


@dataclass(frozen=True)
class ConvertedRequest:
    """A request converted for another protocol."""

    body: dict[str, Any]
    """The target request body."""
    envelope: Envelope
    """The client request's envelope, in canonical terms (``stream``, ``include_usage``...)."""
    dropped: list[Dropped] = field(default_factory=list)
    """What of the client's request the target does not get (request envelope and
    conversation)."""
    lost_fields: list[LostField] = field(default_factory=list)
    """The client's request fields the target does not get (wholly or in part), by path."""


@dataclass(frozen=True)
class LostField:
    """A client request field (its own path) that the target does not get, wholly or in part."""

    path: str
    """The client's field path (``"tool_choice"``, ``"generationConfig.thinkingConfig"``,
    ``"tools"`` for something inside a tool declaration)."""
    affects_output: bool
    """Whether its loss changes what the model does."""
    what: str
    """The drop, for humans."""


def read_envelope(
    body: Mapping[str, Any], protocol: str, *, model: str | None = None, stream: bool | None = None
) -> Envelope:
    """The canonical envelope of a ``protocol`` request body.

    Args:
        body: The request body.
        protocol: Its protocol.
        model: The model named by the request path (Gemini), winning over the body's.
        stream: Whether the path asks for a stream; the body's switch when ``None``.

    Raises:
        LocalProtocolError: The protocol has no request envelope codec.
    """
    return _codec(protocol).read(body, model=model, stream=stream)


def convert_request(
    body: Any,
    *,
    protocol: str,
    to: str,
    model: str | None = None,
    path_model: str | None = None,
    stream: bool | None = None,
    drop_params: bool = False,
    caps: dict[str, ModelCaps] | None = None,
) -> ConvertedRequest:
    """Convert a whole request body of ``protocol`` into ``to``'s terms.

    Args:
        body: The client's request body (a JSON object; check it with
            :func:`maas_stream.validate` first for faults named in the client's terms).
        protocol: The client's protocol.
        to: The target protocol.
        model: Send this model instead of the one the client named.
        path_model: The model the client's request path names (Gemini).
        stream: Ask the target for a stream (``True``) or not (``False``); the client's own
            choice when ``None``.
        drop_params: Drop (and report) fields that change what the model does instead of
            refusing them.
        caps: Model capabilities by glob pattern, tried before the built-in table.

    Returns:
        The target body, the canonical envelope and every drop.

    Raises:
        UnsupportedParamsError: A field that changes what the model does cannot be carried,
            and ``drop_params`` is false.
        ValidationError: The conversation cannot be read.
        LocalProtocolError: A protocol is unknown or has no request envelope codec.
    """
    if not isinstance(body, dict):
        raise ValidationError(protocol, ["the request body must be a JSON object"])
    source, target = _codec(protocol), _codec(to)
    env = source.read(body, model=path_model, stream=None)
    client_stream = env.stream
    if model is not None:
        env.model = model
    # What the reader could not read is lost only across protocols (the same protocol gets the
    # client's body as it is).
    lost: list[Unread] = list(env.dropped) if protocol != to else []
    found = model_caps(env.model, caps)
    _fit_model(env, found, lost)
    history: list[Dropped] = []
    if protocol == to:
        out = _same_protocol(body, env, target)
    else:
        conversation = convert_history(body, to=to, protocol=protocol, lossy=history)
        fitted = _with_limit(env, target, found)
        out = target.build(conversation, fitted, lost)
    streaming = client_stream if stream is None else stream
    if target.stream_field is not None:
        if streaming or stream is not None or (source.stream_field or "") in body:
            out[target.stream_field] = streaming
        else:  # the client left it out: so does the target (not streaming is the default)
            out.pop(target.stream_field, None)
    if not streaming:  # the fixed fields are streaming options (Chat's stream_options)
        for key in target.fixed:
            if protocol != to or key not in body:
                out.pop(key, None)
    refused = [u for u in lost if u.affects_output and not _harmless(u, env)]
    if refused and not drop_params:
        raise UnsupportedParamsError(to, protocol, refused, [_client_path(u, env) for u in refused])
    drops = DropLog(to, protocol)
    for u in lost:
        drops.add("request_field", u.what, where=u.where)
    records = drops.records
    for rec in records:
        log.warning("%s -> %s request: dropped %s", protocol, to, rec)
    fields = [LostField(_client_path(u, env), u.affects_output, u.what) for u in lost]
    return ConvertedRequest(out, env, records + history, fields)


def _client_path(u: Unread, env: Envelope) -> str:
    """The client's own field path of a loss (``tools.strict`` → ``tools``, canonical → source)."""
    if u.field is None:
        return u.what
    if u.native:
        return u.field
    head = u.field.split(".", 1)[0]
    for name in (head, *_SAME_FIELD.get(head, ())):
        if name in env.sources:
            return env.sources[name]
    return u.field


_SAME_FIELD = {"native_tools": ("tools",)}
"""Canonical fields that sit in another's client field when a reader recorded no own source
(built-in tools are declared in the client's ``tools`` list)."""


def estimate_input_tokens(body: Mapping[str, Any]) -> int:
    """A rough count of a request's input tokens, for a provider with no count endpoint.

    One token per four characters of the request's JSON (OpenAI's rule of thumb for English
    text), model and streaming switches included: an estimate, to be marked as one.
    """
    text = msgspec.json.encode(body)
    return max(1, -(-len(text) // 4))


def _codec(protocol: str) -> EnvelopeCodec:
    codec: EnvelopeCodec | None = get_protocol(protocol).envelope
    if codec is None:
        raise LocalProtocolError(f"{protocol} has no request envelope codec (no HTTP request body)")
    return codec


def _harmless(u: Unread, env: Envelope) -> bool:
    # n == 1 is the default everywhere: losing it changes nothing.
    return u.field == "n" and env.n == 1


_CAP_FIELDS = ("temperature", "top_p", "top_k", "seed", "presence_penalty", "frequency_penalty")


def _fit_model(env: Envelope, caps: ModelCaps, lost: list[Unread]) -> None:
    """Remove what the target model refuses (reported, never refused: the model would 400)."""
    why = f"(model {env.model} does not accept it)"
    for name in _CAP_FIELDS:
        if getattr(env, name) is not None and name not in caps.sampling:
            lost.append(Unread(f"request field {env.source(name)} {why}", field=name))
            setattr(env, name, None)
    if env.reasoning is not None and not caps.reasoning:
        lost.append(Unread(f"request field {env.source('reasoning')} {why}", field="reasoning"))
        env.reasoning = None
    if caps.one_of_temperature_top_p and env.temperature is not None and env.top_p is not None:
        why = f"(model {env.model} takes temperature or top_p, not both)"
        lost.append(Unread(f"request field {env.source('top_p')} {why}", field="top_p"))
        env.top_p = None


def _with_limit(env: Envelope, target: EnvelopeCodec, caps: ModelCaps) -> Envelope:
    if env.max_tokens is None and target.default_max_tokens is not None and caps.max_output is not None:
        fitted = copy.copy(env)
        fitted.max_tokens = caps.max_output
        return fitted
    return env


def _same_protocol(body: dict[str, Any], env: Envelope, codec: EnvelopeCodec) -> dict[str, Any]:
    """The client's body as it is, but for the model, fixed fields and what the model refuses."""
    out = copy.deepcopy(body)
    for name in (*_CAP_FIELDS, "reasoning"):
        path = env.sources.get(name)
        if getattr(env, name) is None and path is not None:
            _delete(out, path)
    if codec.writes_model and env.model is not None:
        out[codec.model_field] = env.model
    for key, value in codec.fixed.items():  # merged into the client's own object, if it sent one
        mine = out.get(key)
        out[key] = (
            {**mine, **value} if isinstance(mine, dict) and isinstance(value, dict) else copy.deepcopy(value)
        )
    return out


def _delete(obj: dict[str, Any], path: str) -> None:
    head, _, rest = path.partition(".")
    if not rest:
        obj.pop(head, None)
    elif isinstance(obj.get(head), dict):
        _delete(obj[head], rest)
