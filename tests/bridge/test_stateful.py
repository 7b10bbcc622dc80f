"""Stored Responses through the bridge, driven by the official openai SDK, on SQLite and Redis.

The upstreams are fakes (``httpx.MockTransport``) that speak Anthropic Messages or Gemini and
record the requests they get: a three-turn conversation chained with ``previous_response_id``
(a tool call, its output, a follow-up) must reach them as the whole conversation in their own
protocol. Retrieval, deletion, input items, ``store: false``, isolation between bridge keys, a
background response cut mid-stream and resumed on a SECOND app sharing the store, cancellation,
the byte cap and native state on a Responses upstream are checked against the SDK's own types.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import httpx2
import openai
import pytest

import maas_stream as ms
from maas_stream.bridge import BridgeApp, HTTPUpstream, create_app
from maas_stream.bridge._store import owner_of
from tests.bridge._stores import KINDS, make_store, redis_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, MutableMapping

    from maas_stream.bridge._store import Store

__all__ = ["make_store", "redis_url"]  # fixtures

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("make_store", KINDS, indirect=True)]

TOOLS: Any = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


# ------------------------------------------------------------------------- fake upstreams


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> list[bytes]:
    return [
        (f"event: {e}\n" if e else "").encode() + b"data: " + json.dumps(d).encode() + b"\n\n"
        for e, d in events
    ]


def anthropic_stream(*, call: bool = False, texts: tuple[str, ...] = ("ok",)) -> list[bytes]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_up",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    if call:
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": t} for t in texts]
    return _sse(
        [
            ("message_start", start),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            *(
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
                for d in deltas
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def gemini_stream(*, call: bool = False, texts: tuple[str, ...] = ("ok",)) -> list[bytes]:
    def chunk(parts: list[Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-x", "responseId": "g_up"}
        if finish:
            out["usageMetadata"] = {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}
        return out

    if call:
        return _sse(
            [(None, chunk([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}], "STOP"))]
        )
    *head, last = texts
    return _sse([*((None, chunk([{"text": t}])) for t in head), (None, chunk([{"text": last}], "STOP"))])


STREAMS = {"anthropic": anthropic_stream, "gemini": gemini_stream}
URLS = {
    "anthropic": "https://upstream.test/v1/messages",
    "gemini": "https://upstream.test/v1beta/models/{model}:streamGenerateContent?alt=sse",
}


class Gated(httpx.AsyncByteStream):
    """A response body that stops halfway until ``gate`` opens; closing it ends it (as a socket)."""

    def __init__(self, frames: list[bytes], gate: anyio.Event | None) -> None:
        self.frames = frames
        self.gate = gate
        self.closed = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i, frame in enumerate(self.frames):
            if self.gate is not None and i == len(self.frames) // 2:
                async with anyio.create_task_group() as tg:
                    for event in (self.gate, self.closed):
                        tg.start_soon(_until, event, tg.cancel_scope)
            if self.closed.is_set():
                raise httpx.ReadError("the connection was closed")
            yield frame

    async def aclose(self) -> None:
        self.closed.set()


async def _until(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


class Fake:
    """A fake upstream: answers from a script of streams and keeps the request bodies."""

    def __init__(self, protocol: str, script: list[list[bytes]], gate: anyio.Event | None = None) -> None:
        self.protocol = protocol
        self.script = script
        self.bodies: list[Any] = []
        self.gate = gate
        """When set, the first stream stops after half of its frames until the gate opens."""

    async def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert ms.validate(body, self.protocol) == []  # the upstream would accept it
        self.bodies.append(body)
        frames = self.script[min(len(self.bodies), len(self.script)) - 1]
        gate = self.gate if len(self.bodies) == 1 else None
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Gated(frames, gate))

    def upstream(self) -> HTTPUpstream:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
        return HTTPUpstream(self.protocol, URLS.get(self.protocol), api_key="upstream-secret", client=client)


def sdk(app: BridgeApp, key: str = "key-a") -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))
    return openai.AsyncOpenAI(api_key=key, base_url="http://bridge/v1", http_client=http, max_retries=0)


@contextlib.asynccontextmanager
async def lifespan(app: BridgeApp) -> AsyncIterator[None]:
    """Run the app's ASGI lifespan (its background task group) around the block."""
    to_app, app_in = anyio.create_memory_object_stream[Any](4)
    app_out, from_app = anyio.create_memory_object_stream[Any](4)
    async with to_app, app_in, app_out, from_app, anyio.create_task_group() as tg:
        tg.start_soon(app, {"type": "lifespan"}, app_in.receive, app_out.send)
        await to_app.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        yield
        await to_app.send({"type": "lifespan.shutdown"})
        assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"


def texts(item: Any) -> str:
    """The text of an input message item as the SDK reads it."""
    return "".join(c.text for c in item.content if c.type == "input_text")


def events_of(data: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE byte string."""
    return [
        json.loads(line[6:])
        for block in data.split(b"\n\n")
        for line in block.split(b"\n")
        if line.startswith(b"data: ")
    ]


# ------------------------------------------------------------------------- conversations


@pytest.mark.parametrize("protocol", ["anthropic", "gemini"])
async def test_three_turns_with_a_tool_round_trip(make_store: Callable[..., Store], protocol: str) -> None:
    make = STREAMS[protocol]
    fake = Fake(protocol, [make(call=True), make(texts=("18C ", "and sunny")), make(texts=("bye",))])
    app = create_app(upstream=fake.upstream(), store=make_store())
    client = sdk(app)

    first = await client.responses.create(
        model="m", input="Weather in Paris?", instructions="Be brief.", tools=TOOLS
    )
    assert first.id.startswith("resp_")
    assert first.status == "completed"
    (call,) = [o for o in first.output if o.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})

    async with client.responses.stream(
        model="m",
        previous_response_id=first.id,
        tools=TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18C, sunny"}],
    ) as stream:
        second = await stream.get_final_response()
    assert second.output_text == "18C and sunny"
    assert second.id.startswith("resp_")
    assert second.id != first.id

    third = await client.responses.create(
        model="m", previous_response_id=second.id, input="Thanks!", tools=TOOLS
    )
    assert third.output_text == "bye"

    # The upstream got the whole conversation each time, in its own protocol.
    assert len(fake.bodies) == 3
    if protocol == "anthropic":
        assert fake.bodies[0]["system"] == "Be brief."
        assert fake.bodies[1]["messages"] == [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call.call_id,
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.call_id, "content": "18C, sunny"}],
            },
        ]
        last = fake.bodies[2]["messages"]
        assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
        assert last[1]["content"][0]["id"] == last[2]["content"][0]["tool_use_id"] == call.call_id
        assert last[2]["content"][0]["content"] == "18C, sunny"
        assert last[3]["content"] == [{"type": "text", "text": "18C and sunny"}]
        assert last[4]["content"] == "Thanks!"
        assert "system" not in fake.bodies[2]  # instructions are not carried to the next turn
    else:
        last = fake.bodies[2]["contents"]
        assert [c["role"] for c in last] == ["user", "model", "user", "model", "user"]
        assert last[1]["parts"][0]["functionCall"]["name"] == "get_weather"
        response = last[2]["parts"][0]["functionResponse"]
        assert response["name"] == "get_weather"
        assert "18C, sunny" in json.dumps(response["response"])
        assert last[3]["parts"] == [{"text": "18C and sunny"}]
        assert last[4]["parts"] == [{"text": "Thanks!"}]
        assert fake.bodies[0]["systemInstruction"]["parts"] == [{"text": "Be brief."}]
        assert "systemInstruction" not in fake.bodies[2]

    got = await client.responses.retrieve(third.id)
    assert (got.id, got.status, got.output_text, got.previous_response_id) == (
        third.id,
        "completed",
        "bye",
        second.id,
    )
    items = await client.responses.input_items.list(second.id)
    assert [(i.type, getattr(i, "call_id", None)) for i in items.data] == [
        ("function_call_output", call.call_id)
    ]
    items = await client.responses.input_items.list(first.id)
    assert [(i.type, i.role, texts(i)) for i in items.data if i.type == "message"] == [
        ("message", "user", "Weather in Paris?")
    ]

    await client.responses.delete(second.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(second.id)
    with pytest.raises(openai.NotFoundError):  # the chain is broken: said, not half-expanded
        await client.responses.create(model="m", previous_response_id=third.id, input="more")
    assert len(fake.bodies) == 3


async def test_input_items_pages(make_store: Callable[..., Store]) -> None:
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream(), store=make_store())
    client = sdk(app)
    words = [f"w{i}" for i in range(5)]
    made = await client.responses.create(model="m", input=[{"role": "user", "content": w} for w in words])
    page = await client.responses.input_items.list(made.id, order="asc", limit=2)
    assert [texts(i) for i in page.data] == ["w0", "w1"]
    assert page.has_more
    seen = [texts(i) async for i in client.responses.input_items.list(made.id, limit=2)]
    assert seen == words[::-1]  # the SDK follows `after` through every page; desc by default
    raw = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://bridge")
    auth = {"authorization": "Bearer key-a"}
    listed = (await raw.get(f"/v1/responses/{made.id}/input_items?order=asc&limit=2", headers=auth)).json()
    assert listed["object"] == "list"
    assert (listed["first_id"], listed["last_id"]) == (page.data[0].id, page.data[1].id)
    bad = await raw.get(f"/v1/responses/{made.id}/input_items?limit=500", headers=auth)
    assert bad.status_code == 400
    deleted = await raw.delete(f"/v1/responses/{made.id}", headers=auth)
    assert deleted.json() == {"id": made.id, "object": "response.deleted", "deleted": True}
    assert (await raw.get(f"/v1/responses/{made.id}", headers=auth)).status_code == 404


async def test_store_false_leaves_no_row(make_store: Callable[..., Store]) -> None:
    store = make_store()
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream(), store=store)
    client = sdk(app)
    made = await client.responses.create(model="m", input="hi", store=False)
    async with client.responses.stream(model="m", input="hi", store=False) as stream:
        streamed = await stream.get_final_response()
    assert made.output_text == streamed.output_text == "ok"
    assert await store.usage(owner_of("key-a")) == 0
    assert await store.get(made.id, owner_of("key-a")) is None
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(streamed.id)
    kept = await client.responses.create(model="m", input="hi")
    assert await store.usage(owner_of("key-a")) > 0
    assert (await client.responses.retrieve(kept.id)).output_text == "ok"
    assert "store" not in fake.bodies[0]  # nothing asked of the upstream


async def test_another_keys_response_is_not_found(make_store: Callable[..., Store]) -> None:
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream(), store=make_store())
    mine, theirs = sdk(app, "key-a"), sdk(app, "key-b")
    made = await mine.responses.create(model="m", input="secret")
    with pytest.raises(openai.NotFoundError) as missing:
        await theirs.responses.retrieve("resp_" + "0" * 48)
    with pytest.raises(openai.NotFoundError) as other:
        await theirs.responses.retrieve(made.id)
    assert str(other.value).replace(made.id, "X") == str(missing.value).replace("resp_" + "0" * 48, "X")
    with pytest.raises(openai.NotFoundError):
        await theirs.responses.input_items.list(made.id)
    with pytest.raises(openai.NotFoundError):
        await theirs.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        await theirs.responses.create(model="m", previous_response_id=made.id, input="tell me")
    assert len(fake.bodies) == 1
    assert (await mine.responses.retrieve(made.id)).output_text == "ok"


async def test_the_byte_cap_refuses_new_stored_responses(make_store: Callable[..., Store]) -> None:
    fake = Fake("anthropic", [anthropic_stream()])
    measure = make_store()
    await sdk(create_app(upstream=fake.upstream(), store=measure)).responses.create(model="m", input="hi")
    size = await measure.usage(owner_of("key-a"))  # what one such turn takes
    app = create_app(upstream=fake.upstream(), store=make_store(max_bytes=size + 5))
    client = sdk(app, "key-c")
    await client.responses.create(model="m", input="hi")
    with pytest.raises(openai.APIStatusError) as full:
        await client.responses.create(model="m", input="hi")
    assert full.value.status_code == 413
    unstored = await client.responses.create(model="m", input="hi", store=False)
    assert unstored.output_text == "ok"
    await sdk(app, "key-b").responses.create(model="m", input="hi")  # another key has its room


async def test_a_streamed_response_is_stored_event_by_event(make_store: Callable[..., Store]) -> None:
    store = make_store()
    fake = Fake("anthropic", [anthropic_stream(texts=("a", "b", "c"))])
    app = create_app(upstream=fake.upstream(), store=store)
    client = sdk(app)
    seen: list[Any] = []
    async with client.responses.stream(model="m", input="hi") as stream:
        seen = [event async for event in stream]
    rid = seen[0].response.id
    assert {getattr(e, "response", None) and e.response.id for e in seen} - {None} == {rid}
    stored = await store.events(rid)
    assert [p["sequence_number"] for _, data in stored for p in events_of(data)] == [
        e.sequence_number for e in seen
    ]
    replay = await client.responses.retrieve(rid, stream=True, starting_after=2)
    again = [event async for event in replay]
    assert [e.sequence_number for e in again] == [e.sequence_number for e in seen][3:]
    assert [e.type for e in again] == [e.type for e in seen][3:]


# ------------------------------------------------------------------------- background


async def asgi_post(app: BridgeApp, body: Any, cut: anyio.Event, got: list[bytes]) -> None:
    """POST /v1/responses over raw ASGI, the client hanging up once ``cut`` is set."""
    data = json.dumps(body).encode()
    sent = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await cut.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body":
            got.append(message.get("body", b""))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/responses",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"authorization", b"Bearer key-a")],
        "client": ("127.0.0.1", 5555),
    }
    await app(scope, receive, send)


async def test_a_background_stream_cut_resumes_on_a_second_app(make_store: Callable[..., Store]) -> None:
    gate = anyio.Event()
    texts = tuple(f"t{i} " for i in range(8))
    fake = Fake("anthropic", [anthropic_stream(texts=texts)], gate=gate)
    first = create_app(upstream=fake.upstream(), store=make_store())
    second = create_app(upstream=Fake("anthropic", []).upstream(), store=make_store())
    got: list[bytes] = []
    cut = anyio.Event()
    with anyio.fail_after(20):
        async with lifespan(first):
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    asgi_post,
                    first,
                    {"model": "m", "input": "count", "background": True, "stream": True},
                    cut,
                    got,
                )
                while len(events_of(b"".join(got))) < 4:  # noqa: ASYNC110 (bytes arrive, no event to wait on)
                    await anyio.sleep(0.01)
                cut.set()  # the client's connection drops mid-stream
            before = events_of(b"".join(got))
            rid = before[0]["response"]["id"]
            last = before[-1]["sequence_number"]
            assert [e["sequence_number"] for e in before] == list(range(last + 1))
            gate.set()  # the upstream goes on; the first app's background task keeps writing
            resumed = await sdk(second).responses.retrieve(rid, stream=True, starting_after=last)
            after = [event async for event in resumed]
    numbers = [e.sequence_number for e in after]
    assert numbers == list(range(last + 1, last + 1 + len(numbers)))  # exactly the rest, no gap
    assert after[-1].type == "response.completed"
    text = "".join(e["delta"] for e in before if e["type"] == "response.output_text.delta")
    text += "".join(e.delta for e in after if e.type == "response.output_text.delta")
    assert text == "".join(texts)
    done = await sdk(second).responses.retrieve(rid)
    assert (done.status, done.output_text, done.background) == ("completed", "".join(texts), True)


async def test_a_background_response_is_queued_then_completed(make_store: Callable[..., Store]) -> None:
    gate = anyio.Event()
    fake = Fake("gemini", [gemini_stream(texts=("x", "y"))], gate=gate)
    app = create_app(upstream=fake.upstream(), store=make_store())
    client = sdk(app)
    with anyio.fail_after(20):
        async with lifespan(app):
            made = await client.responses.create(model="m", input="hi", background=True)
            assert made.status in ("queued", "in_progress")
            assert made.background
            got = await client.responses.retrieve(made.id)
            assert got.status in ("queued", "in_progress")
            gate.set()
            while got.status not in ("completed", "failed"):
                await anyio.sleep(0.01)
                got = await client.responses.retrieve(made.id)
    assert (got.status, got.output_text) == ("completed", "xy")
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model="m", input="hi", background=True, store=False)


async def test_a_background_response_is_cancelled(make_store: Callable[..., Store]) -> None:
    gate = anyio.Event()
    fake = Fake("anthropic", [anthropic_stream(texts=("a", "b", "c", "d"))], gate=gate)
    app = create_app(upstream=fake.upstream(), store=make_store())
    client = sdk(app)
    with anyio.fail_after(20):
        async with lifespan(app):
            made = await client.responses.create(model="m", input="hi", background=True)
            while not fake.bodies:  # noqa: ASYNC110 (the upstream is called in another task)
                await anyio.sleep(0.01)
            cancelled = await client.responses.cancel(made.id)
            assert cancelled.status == "cancelled"
            gate.set()
    assert (await client.responses.retrieve(made.id)).status == "cancelled"
    plain = await client.responses.create(model="m", input="hi")
    with pytest.raises(openai.BadRequestError):
        await client.responses.cancel(plain.id)


# ------------------------------------------------------------------------- native state


async def test_a_responses_upstream_keeps_its_own_state(make_store: Callable[..., Store]) -> None:
    recording = ms.convert(b"".join(anthropic_stream(texts=("hello",))), to="openai-responses")
    bodies: list[Any] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=recording)

    up = HTTPUpstream(
        "openai-responses",
        None,
        api_key="upstream-secret",
        client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    upstream_id = events_of(recording)[0]["response"]["id"]
    store = make_store()
    native = sdk(create_app(upstream=up, store=store))
    first = await native.responses.create(model="m", input="hi")
    assert first.id != upstream_id  # the client sees the store's id
    await native.responses.create(model="m", input="again", previous_response_id=first.id)
    assert bodies[1]["previous_response_id"] == upstream_id  # passed on, not expanded
    assert bodies[1]["input"] == "again"
    assert bodies[1].get("store", True) is True

    expanding = sdk(create_app(upstream=up, store=store, native_state=False))
    await expanding.responses.create(model="m", input="third", previous_response_id=first.id)
    assert "previous_response_id" not in bodies[2]
    assert bodies[2]["store"] is False
    assert [i.get("content") for i in bodies[2]["input"] if i.get("role") == "user"] == ["hi", "third"]
