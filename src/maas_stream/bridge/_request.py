"""The bridge's request side: a client request → the upstream's request body; error bodies.

Everything protocol-specific comes from the protocols' specs: the client's envelope codec reads
the fields around the conversation (model, streaming, limit, sampling, function tools), the
conversation goes through :func:`maas_stream.convert_history` and is checked with
:func:`maas_stream.validate`, and the upstream's envelope codec writes the request. What goes
nowhere becomes a ``request_field`` drop. Error bodies are written by the client protocol's
spec (OpenAI's shape when no protocol is known).

It must not contain protocol logic (no protocol names, no field names: the specs hold them),
convert conversations or streams itself, or do IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._bodies import convert_history, validate
from .._drops import DropLog, Dropped
from .._exceptions import MaasStreamError, ValidationError
from .._request import UnsupportedParamsError, convert_request
from ..protocols._errors import openai_error_body as _default_error_body

if TYPE_CHECKING:
    from .._envelope import Envelope, EnvelopeCodec
    from .._models import ModelCaps
    from .._registry import EndpointMatch, ProtocolSpec

__all__ = ["Rejected", "UpstreamRequest", "envelope_codec", "error_body", "upstream_request"]


class Rejected(Exception):
    """A request answered with an error before any stream byte (status, message, headers)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def error_body(spec: ProtocolSpec | None, status: int, message: str) -> dict[str, Any]:
    """An error body shaped the way ``spec``'s SDK reads it (OpenAI's shape for ``None``)."""
    write = spec.error_body if spec is not None and spec.error_body is not None else _default_error_body
    return write(status, message)


def envelope_codec(spec: ProtocolSpec, role: str) -> EnvelopeCodec:
    """The envelope codec of a protocol the bridge serves or calls.

    Args:
        spec: The protocol.
        role: ``"client"`` or ``"upstream"``, for the error message.

    Raises:
        Rejected: The protocol has no envelope codec (websocket and stateful protocols): it
            cannot be served over HTTP (501).
    """
    codec: EnvelopeCodec | None = spec.envelope
    if codec is None:
        raise Rejected(
            501, f"{spec.name} cannot be served as an HTTP {role} protocol: it has no request envelope codec"
        )
    return codec


@dataclass
class UpstreamRequest:
    """A client request converted for the upstream."""

    body: dict[str, Any]
    """The upstream request body (always a streaming request); emptied once it was handed to the
    upstream, so that a long stream does not hold it (a fallback converts the request anew)."""
    envelope: Envelope
    """The client's envelope (``stream`` says whether the client wants a stream)."""
    dropped: list[Dropped]
    """What of the client's request goes nowhere: the envelope's ``request_field`` records and
    the history conversion's records."""
    unlogged: list[Dropped]
    """The records among :attr:`dropped` that the library has not logged already."""


def upstream_request(
    match: EndpointMatch,
    body: Any,
    target: ProtocolSpec,
    *,
    drop_params: bool = False,
    caps: dict[str, ModelCaps] | None = None,
) -> UpstreamRequest:
    """Read a client request (of ``match``'s protocol) and write it for ``target``.

    The whole request is converted by :func:`maas_stream.convert_request` (conversation,
    envelope, the target model's limits, the drop policy). An upstream without an envelope
    codec (a recording of a websocket protocol) gets the converted conversation only, and the
    envelope is reported as not forwarded.

    Raises:
        Rejected: The body is not a JSON object, breaks the client protocol, holds a field that
            changes what the model does and cannot be carried (unless ``drop_params``), or
            would be rejected by the upstream (400); the client protocol cannot be served (501).
    """
    client = match.spec
    codec = envelope_codec(client, "client")
    if not isinstance(body, dict):
        raise Rejected(400, "the request body must be a JSON object")
    # The client's own rules first: a fault is named in the client's terms (its own fields),
    # and content of the wrong type is refused, never converted into nothing.
    faults = validate(body, client.name)
    if faults:
        raise Rejected(400, f"invalid {client.name} request: " + "; ".join(faults))
    history: list[Dropped] = []
    fields = DropLog(target.name, client.name)
    try:
        if target.envelope is not None:
            converted = convert_request(
                body,
                protocol=client.name,
                to=target.name,
                path_model=match.model,
                stream=True,
                drop_params=drop_params,
                caps=caps,
            )
            upstream_body, env = converted.body, converted.envelope
            records, history = converted.dropped, []
        else:
            env = codec.read(body, model=match.model, stream=match.endpoint.stream)
            upstream_body = convert_history(body, to=target.name, protocol=client.name, lossy=history)
            fields.add("request_field", f"request envelope ({target.name} has no request envelope codec)")
            records = []
    except UnsupportedParamsError as exc:
        raise Rejected(
            400, f"unsupported {client.name} request for a {target.name} upstream: " + "; ".join(exc.faults)
        ) from None
    except ValidationError as exc:
        raise Rejected(400, f"invalid {client.name} request: " + "; ".join(exc.faults)) from None
    except MaasStreamError as exc:
        raise Rejected(400, f"invalid {client.name} request: {exc}") from None
    if match.endpoint.stream is not None:
        env.stream = match.endpoint.stream
    faults = validate(upstream_body, target.name)
    if faults:
        raise Rejected(400, f"the {target.name} upstream would reject this request: " + "; ".join(faults))
    # convert_request and convert_history logged their own records; the rest are the bridge's.
    own = fields.records
    return UpstreamRequest(upstream_body, env, records + own + history, own)
