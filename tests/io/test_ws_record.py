"""Recording websocket sessions (Live, Realtime) over a loopback ``websockets`` server, then replaying them.

The server (``maas_stream.testing.serve_websocket_recording``) plays a recorded session's server
side: it waits for each recorded client message and answers with the recorded server messages.
The client drives the same script through ``ms.io.arecord_websocket``'s wrapper, with three fake
API keys on the way out (URL query, header, a credential field of the first client message), and
aggregates the session live from the recorded lines. Oracles: what the server really sent and
received, the original recording's aggregate (model output), and the keys' absence from every
file written. ``websockets`` is asyncio only.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from websockets.asyncio.client import connect

import maas_stream as ms
from maas_stream.io import REDACTED, Recording
from maas_stream.testing import serve_websocket_recording
from tests.conftest import corpus, params, recordings

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from pathlib import Path

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

LIVE = "google-live"
REALTIME = "openai-realtime"
LIMIT = 5.0
URL_KEY = "AIzaFAKEurlKEY0123456789"
HEADER_KEY = "sk-FAKEheaderKEY0123456789"
MESSAGE_KEY = "FAKEmessageKEY0123456789"
KEYS = (URL_KEY, HEADER_KEY, MESSAGE_KEY)


def sessions(protocol: str) -> list[Any]:
    """Recorded sessions in which the client speaks (ours and the corpus, read in place)."""
    paths = recordings(protocol) + corpus(protocol)
    return params([p for p in paths if any(d == "client" for d, _ in Recording.load(p).messages())])


def with_key(protocol: str, msg: dict[str, Any]) -> dict[str, Any]:
    """The message with a credential field carrying a fake key (Live: inside ``setup``-like bodies)."""
    msg = json.loads(json.dumps(msg))
    body = next(iter(msg.values())) if protocol == LIVE and len(msg) == 1 else None
    (body if isinstance(body, dict) else msg)["api_key"] = MESSAGE_KEY
    return msg


def auth(protocol: str) -> dict[str, str]:
    return {"x-goog-api-key": HEADER_KEY} if protocol == LIVE else {"authorization": f"Bearer {HEADER_KEY}"}


def frames_of(path: Path) -> list[tuple[str, Any]]:
    return [(d, json.loads(m)) for d, m in Recording.load(path).messages()]


async def drive(
    rec: ms.io.WebSocketRecording, script: list[tuple[str, Any]], protocol: str
) -> tuple[ms.Response, list[str], list[bytes]]:
    """Play the client side of ``script`` through ``rec``; aggregate the session live from its lines."""
    agg = ms.StreamAggregator(protocol)
    seen: list[bytes] = []
    sent: list[str] = []
    lines = rec.lines()

    async def next_server_message() -> None:
        while True:
            line = await anext(lines)
            seen.append(line)
            agg.feed(line)
            if line.startswith(b'{"dir":"server"'):
                return

    for direction, msg in script:
        if direction == "client":
            text = json.dumps(msg, ensure_ascii=False)
            await rec.send(text)
            sent.append(text)
        else:
            await next_server_message()
    async for line in lines:  # the client lines still queued, then the server's close
        seen.append(line)
        agg.feed(line)
    return agg.finish(), sent, seen


def data(path: Path) -> bytes:
    return path.read_bytes()


def written_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def assert_no_secret(folder: Path) -> None:
    files = written_files(folder)
    assert len(files) == 2, sorted(files)
    for name, data in files.items():
        for key in KEYS:
            assert key.encode() not in data, f"{key} leaked into {name}"


async def record_session(
    path: Path, protocol: str, out: Path
) -> tuple[ms.Response, list[str], Any, list[bytes], str]:
    original = frames_of(path)
    first = next(i for i, (d, _) in enumerate(original) if d == "client")
    script = [(d, with_key(protocol, m) if i == first else m) for i, (d, m) in enumerate(original)]
    async with serve_websocket_recording(path) as server:
        async with connect(
            f"{server.url}/v1/session?model=m&key={URL_KEY}", additional_headers=auth(protocol)
        ) as ws:
            with anyio.fail_after(LIMIT):
                async with ms.io.arecord_websocket(ws, out, protocol=protocol) as rec:
                    live, sent, seen = await drive(rec, script, protocol)
    return live, sent, server.received, seen, server.url


@pytest.mark.parametrize(
    ("protocol", "path"),
    [pytest.param(LIVE, p.values[0], id=p.id) for p in sessions(LIVE)]
    + [pytest.param(REALTIME, p.values[0], id=p.id) for p in sessions(REALTIME)],
)
async def test_record_a_session_then_replay(protocol: str, path: Path, tmp_path: Path) -> None:
    out = tmp_path / f"{path.stem}.jsonl"
    live, sent, received, seen, url = await record_session(path, protocol, out)

    # the server got exactly what the client sent, the real key included (redaction is for files)
    assert [m if isinstance(m, str) else m.decode() for m in received[0]] == sent
    assert MESSAGE_KEY in sent[0]

    # the file holds the exchanged messages in order, with their directions; the key redacted
    server_sent = [m for d, m in frames_of(path) if d == "server"]
    expected = []
    clients = iter(sent)
    for direction, msg in frames_of(path):
        if direction == "client":
            exchanged = json.loads(next(clients))
            expected.append(("client", json.loads(json.dumps(exchanged).replace(MESSAGE_KEY, REDACTED))))
        else:
            expected.append(("server", msg))
    assert [m for d, m in expected if d == "server"] == server_sent
    lines = out.read_bytes().splitlines(keepends=True)
    assert [(f["dir"], f["msg"]) for f in map(json.loads, lines)] == expected
    assert lines == seen  # the live aggregate was fed exactly the written lines
    assert_no_secret(tmp_path)

    meta = Recording.load(out).meta
    assert meta is not None
    assert meta.request is not None
    assert (meta.transport, meta.protocol, meta.complete) == ("websocket", protocol, True)
    assert meta.request.url == f"{url}/v1/session?model=m&key={REDACTED}"
    secret_header = "x-goog-api-key" if protocol == LIVE else "authorization"
    assert meta.request.headers[secret_header] == REDACTED
    assert meta.chunks == [len(line) for line in lines]
    assert len(meta.times) == len(lines)
    assert meta.times == sorted(meta.times)

    # replay: the file aggregates to the live Response, line by line as well as whole
    assert ms.aggregate(out.read_bytes()) == live
    assert ms.aggregate(ms.io.replay(out)) == live
    assert [chunk async for chunk in ms.io.areplay(out)] == lines
    # the model's side is the original session's (the fake key only touched a client message)
    reference = ms.aggregate(data(path), protocol=protocol)
    assert live.messages == reference.messages
    assert (live.status, live.usage, live.finish_reason) == (
        reference.status,
        reference.usage,
        reference.finish_reason,
    )


async def test_replay_keeps_the_recorded_timing(tmp_path: Path) -> None:
    path = next(p for p in recordings(LIVE) if p.name == "text_thought_parallel_tools.jsonl")
    out = tmp_path / "timed.jsonl"
    script = frames_of(path)
    async with serve_websocket_recording(path, pause=0.01) as server:
        async with connect(server.url) as ws, ms.io.arecord_websocket(ws, out, protocol=LIVE) as rec:
            with anyio.fail_after(LIMIT):
                await drive(rec, script, LIVE)
    meta = Recording.load(out).meta
    assert meta is not None
    span = meta.times[-1] - meta.times[0]
    assert span >= 0.01 * (sum(d == "server" for d, _ in script) - 1)
    start = time.perf_counter()
    fast = [c async for c in ms.io.areplay(out, speed=4.0)]
    elapsed = time.perf_counter() - start
    assert fast == out.read_bytes().splitlines(keepends=True)
    assert span / 4.0 * 0.8 <= elapsed < span / 4.0 + 1.0
    start = time.perf_counter()
    assert list(ms.io.replay(out, speed=0)) == fast
    assert time.perf_counter() - start < span / 4.0


async def aggregate_recorded(gen: AsyncGenerator[bytes, None], protocol: str) -> ms.Response:
    return await ms.aaggregate(gen, protocol=protocol)


@pytest.mark.parametrize("path", params(recordings(REALTIME)[:2] + recordings(LIVE)[:1]))
async def test_arecord_a_websocket_records_the_server_side(path: Path, tmp_path: Path) -> None:
    """``ms.io.arecord(ws, ...)``: the server's messages, aggregated live, the websocket closed at the end."""
    protocol = path.parent.name
    out = tmp_path / "plain.jsonl"
    async with serve_websocket_recording(path, await_client=False) as server:
        async with connect(f"{server.url}/?api_key={URL_KEY}", additional_headers=auth(protocol)) as ws:
            with anyio.fail_after(LIMIT):
                live = await aggregate_recorded(ms.io.arecord(ws, out, protocol=protocol), protocol)
            assert ws.state.name == "CLOSED"
    server_only = b"".join(line + b"\n" for line in data(path).splitlines() if b'"dir":"server"' in line)
    assert [json.loads(x) for x in out.read_bytes().splitlines()] == [
        json.loads(x) for x in server_only.splitlines()
    ]
    assert live == ms.aggregate(server_only, protocol=protocol) == ms.aggregate(out.read_bytes())
    assert_no_secret(tmp_path)


async def test_secret_echoed_by_the_server_is_scrubbed(tmp_path: Path) -> None:
    """A key the server sends back (an echoed setup) is scrubbed from the server line too."""
    setup = {"setup": {"model": "models/m", "api_key": MESSAGE_KEY}}
    frames: list[tuple[str, bytes | str]] = [
        ("client", json.dumps(setup)),
        ("server", json.dumps({"setupComplete": {"echo": f"{URL_KEY} and {MESSAGE_KEY}"}})),
    ]
    out = tmp_path / "echo.jsonl"
    async with serve_websocket_recording(frames) as server:
        async with connect(f"{server.url}/?key={URL_KEY}") as ws, ms.io.arecord_websocket(ws, out) as rec:
            await rec.send(json.dumps(setup))
            echoed = json.loads(await rec.recv())["setupComplete"]["echo"]
    assert echoed.startswith(URL_KEY)  # what the client gets is untouched
    assert_no_secret(tmp_path)
    lines = [json.loads(x) for x in out.read_bytes().splitlines()]
    assert lines == [
        {"dir": "client", "msg": {"setup": {"model": "models/m", "api_key": REDACTED}}},
        {"dir": "server", "msg": {"setupComplete": {"echo": f"{REDACTED} and {REDACTED}"}}},
    ]
    meta = Recording.load(out).meta
    assert meta is not None
    assert meta.scrubbed
    assert meta.chunks == [len(x) + 1 for x in out.read_bytes().splitlines()]
