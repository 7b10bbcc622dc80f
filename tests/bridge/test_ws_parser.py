"""Letting a websocket connection's handshake go (``_ws_parser.drop_handshake``), on websockets' sans-I/O protocols.

Pinned here: what the rule relies on in ``websockets`` (the handshake's generator wraps
``Protocol.parse``, which waits in ``StreamReader.at_eof`` between frames), and that restarting
the frame parser loses no byte: between frames only, never mid-frame, never after a close.
"""

from __future__ import annotations

from types import GeneratorType
from typing import TYPE_CHECKING, Any

import pytest
from websockets.client import ClientProtocol
from websockets.frames import Close, Frame, Opcode
from websockets.http11 import Request, Response
from websockets.server import ServerProtocol
from websockets.streams import StreamReader
from websockets.uri import parse_uri

from maas_stream.bridge._ws_parser import drop_handshake, unlabelled

if TYPE_CHECKING:
    from websockets.protocol import Protocol


def chain(proto: Protocol) -> list[str]:
    """The parser's generators, outermost first, by their code's qualified name."""
    names = []
    step: Any = proto.parser
    while isinstance(step, GeneratorType):
        names.append(step.gi_code.co_qualname)
        step = step.gi_yieldfrom
    return names


def handshake(server: ServerProtocol, client: ClientProtocol) -> Response:
    """The opening handshake between the two: the request read, the answer sent and read."""
    client.send_request(client.connect())
    server.receive_data(b"".join(client.data_to_send()))
    (request,) = server.events_received()
    assert isinstance(request, Request)
    server.send_response(server.accept(request))
    client.receive_data(b"".join(server.data_to_send()))
    (response,) = client.events_received()
    assert isinstance(response, Response)
    return response


def server_open() -> ServerProtocol:
    """A server past its handshake (the request read, the answer sent)."""
    server = ServerProtocol()
    handshake(server, ClientProtocol(parse_uri("ws://127.0.0.1/ws")))
    return server


def client_open() -> ClientProtocol:
    """A client past its handshake (the upstream's 101 read)."""
    client = ClientProtocol(parse_uri("ws://127.0.0.1/ws"))
    handshake(ServerProtocol(), client)
    return client


def masked(text: str) -> bytes:
    return Frame(Opcode.TEXT, text.encode()).serialize(mask=True, extensions=[])


def unmasked(text: str) -> bytes:
    return Frame(Opcode.TEXT, text.encode()).serialize(mask=False, extensions=[])


def texts(proto: Protocol) -> list[str]:
    return [bytes(e.data).decode() for e in proto.events_received() if isinstance(e, Frame)]


def test_what_the_rule_relies_on_in_websockets() -> None:
    # The handshake's generator wraps the frame parser, which waits in at_eof between frames.
    assert chain(server_open()) == ["ServerProtocol.parse", "Protocol.parse", "StreamReader.at_eof"]
    assert chain(client_open()) == ["ClientProtocol.parse", "Protocol.parse", "StreamReader.at_eof"]
    assert StreamReader.at_eof.__code__.co_qualname == "StreamReader.at_eof"


@pytest.mark.parametrize(("make", "encode"), [(server_open, masked), (client_open, unmasked)])
def test_between_frames_the_handshake_goes_and_frames_still_parse(make: Any, encode: Any) -> None:
    proto = make()
    assert drop_handshake(proto)
    assert chain(proto) == ["Protocol.parse", "StreamReader.at_eof"]
    assert drop_handshake(proto)  # nothing more to let go: still True, the parser unchanged
    assert chain(proto) == ["Protocol.parse", "StreamReader.at_eof"]
    proto.receive_data(encode("one") + encode("two"))
    assert texts(proto) == ["one", "two"]


@pytest.mark.parametrize(("make", "encode"), [(server_open, masked), (client_open, unmasked)])
@pytest.mark.parametrize("cut", [1, 2, 3, 5, 7])
def test_mid_frame_nothing_is_restarted_until_the_frame_is_read(make: Any, encode: Any, cut: int) -> None:
    proto = make()
    data = encode("x" * 300)  # a 16-bit extended length: the header is read in two steps
    proto.receive_data(data[:cut])
    if cut == 2:  # the header's first two bytes taken, the length not come: nothing is buffered
        assert not proto.reader.buffer  # (why the buffer alone cannot tell a frame's boundary)
    assert not drop_handshake(proto)
    assert chain(proto)[0] in ("ServerProtocol.parse", "ClientProtocol.parse")  # (unchanged)
    proto.receive_data(data[cut:])
    assert texts(proto) == ["x" * 300]
    assert drop_handshake(proto)
    proto.receive_data(encode("after"))
    assert texts(proto) == ["after"]


def test_not_before_the_connection_is_open() -> None:
    server = ServerProtocol()
    assert not drop_handshake(server)
    client = ClientProtocol(parse_uri("ws://127.0.0.1/ws"))
    client.send_request(client.connect())
    server.receive_data(b"".join(client.data_to_send()))
    assert not drop_handshake(server)  # the request read, not answered yet
    assert chain(server)[0] == "ServerProtocol.parse"


def test_not_after_a_close() -> None:
    server = server_open()
    server.receive_data(Frame(Opcode.CLOSE, Close(1000, "").serialize()).serialize(mask=True, extensions=[]))
    assert not drop_handshake(server)


def test_unlabelled_protocols_lose_their_id_and_still_talk() -> None:
    # What it relies on: each protocol keeps a uuid4 of its own as ``id``.
    assert "id" in vars(ServerProtocol())
    server = unlabelled(ServerProtocol())
    client = unlabelled(ClientProtocol(parse_uri("ws://127.0.0.1/ws")))
    assert "id" not in vars(server)
    assert "id" not in vars(client)
    assert unlabelled(server) is server  # (again: nothing to drop, no error)
    # The whole life of a connection without it: handshake, messages both ways, close.
    assert handshake(server, client).status_code == 101
    client.send_text(b"up")
    server.receive_data(b"".join(client.data_to_send()))
    server.send_text(b"down")
    client.receive_data(b"".join(server.data_to_send()))
    assert texts(server) == ["up"]
    assert texts(client) == ["down"]
    client.send_close(1000, "bye")
    server.receive_data(b"".join(client.data_to_send()))
    client.receive_data(b"".join(server.data_to_send()))
    assert server.close_rcvd is not None
    assert server.close_rcvd.code == 1000
    assert client.close_rcvd is not None
    assert client.close_rcvd.code == 1000
