"""Stored Interactions through the bridge, driven by google-genai's Interactions client, on SQLite and Redis.

The upstreams are the fakes of ``test_stateful`` (``httpx.MockTransport``, recording each request
body): two turns chained with ``previous_interaction_id`` (a function call, then its result) must
reach an Anthropic upstream as the whole conversation; the interaction is then read back
(``interactions.get``, its stored stream replayed), deleted, hidden from another bridge key, and
``store: false`` keeps nothing. An Interactions upstream keeps its native state: it gets its own
id of the previous interaction, not the expanded history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from google import genai
from google.genai import _interactions_errors as interactions_errors
from google.genai import types as genai_types

from maas_stream.bridge import BridgeApp, create_app
from maas_stream.bridge._store import owner_of
from tests.bridge._stores import KINDS, make_store, redis_url
from tests.bridge.test_stateful import Fake, anthropic_stream, events_of
from tests.conftest import RECORDINGS

if TYPE_CHECKING:
    from collections.abc import Callable

    from maas_stream.bridge._store import Store

__all__ = ["make_store", "redis_url"]  # fixtures

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("make_store", KINDS, indirect=True)]

INTERACTIONS = RECORDINGS / "google-interactions/parallel_calls_thought_summary.sse"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def client_of(app: BridgeApp, key: str = "key-a") -> Any:
    """google-genai's async Interactions client against the bridge, with bridge key ``key``."""
    client = genai.Client(
        api_key=key,
        http_options=genai_types.HttpOptions(
            base_url="http://bridge/",
            api_version="v1beta",
            httpx_async_client=httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)),
        ),
    )
    return client.aio.interactions


def raw_client(app: BridgeApp) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://bridge")


def text_of(interaction: Any) -> str:
    return "".join(
        c.text
        for step in interaction.steps or []
        if step.type == "model_output"
        for c in step.content or []
        if c.type == "text"
    )


async def test_two_turns_on_an_anthropic_upstream(make_store: Callable[..., Store]) -> None:
    store = make_store()
    fake = Fake("anthropic", [anthropic_stream(call=True), anthropic_stream(texts=("18C ", "and sunny"))])
    app = create_app(upstream=fake.upstream(), store=store)
    client = client_of(app)

    first = await client.create(
        model="m", input="Weather in Paris?", system_instruction="Be brief.", tools=[WEATHER]
    )
    assert first.id.startswith("v1_")
    assert len(first.id) > 40  # unguessable, Google's shape
    assert first.status == "requires_action"
    (call,) = [s for s in first.steps if s.type == "function_call"]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})

    stream = await client.create(
        model="m",
        previous_interaction_id=first.id,
        tools=[WEATHER],
        input=[{"type": "function_result", "call_id": call.id, "name": "get_weather", "result": "18C"}],
        stream=True,
    )
    seen = [event async for event in stream]
    final = next(e.interaction for e in seen if e.event_type == "interaction.completed")
    text = "".join(e.delta.text for e in seen if e.event_type == "step.delta" and e.delta.type == "text")
    assert text == "18C and sunny"
    second_id = final.id
    assert second_id.startswith("v1_")
    assert second_id != first.id
    assert {e.interaction.id for e in seen if hasattr(e, "interaction")} == {second_id}

    # The upstream got the whole conversation, in its own protocol.
    assert len(fake.bodies) == 2
    assert fake.bodies[0]["system"] == "Be brief."
    messages = fake.bodies[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert (
        messages[0]["content"] == [{"type": "text", "text": "Weather in Paris?"}]
        or messages[0]["content"] == "Weather in Paris?"
    )
    assert messages[1]["content"][0]["type"] == "tool_use"
    assert messages[1]["content"][0]["id"] == messages[2]["content"][0]["tool_use_id"] == call.id
    assert "system" not in fake.bodies[1]  # instructions are not carried to the next turn
    assert "previous_interaction_id" not in fake.bodies[1]

    got = await client.get(second_id)
    assert (got.id, got.status, text_of(got), got.previous_interaction_id) == (
        second_id,
        "completed",
        "18C and sunny",
        first.id,
    )
    with_input = await client.get(first.id, include_input=True)
    assert with_input.previous_interaction_id is None
    assert with_input.input[0].content[0].text == "Weather in Paris?"

    # The stored stream, replayed: the same events as the live one.
    replay = [event async for event in await client.get(second_id, stream=True)]
    assert [e.event_type for e in replay] == [e.event_type for e in seen]
    stored = await store.events(second_id)
    assert [p["event_type"] for _, data in stored for p in events_of(data)] == [e.event_type for e in seen]

    await client.delete(first.id)
    with pytest.raises(interactions_errors.NotFoundError):
        await client.get(first.id)
    with pytest.raises(interactions_errors.NotFoundError):  # the chain is broken: said, not half-expanded
        await client.create(model="m", previous_interaction_id=second_id, input="more")
    assert len(fake.bodies) == 2


async def test_another_keys_interaction_is_not_found(make_store: Callable[..., Store]) -> None:
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream(), store=make_store())
    mine, theirs = client_of(app, "key-a"), client_of(app, "key-b")
    made = await mine.create(model="m", input="secret")
    missing_id = "v1_" + "A" * 64
    with pytest.raises(interactions_errors.NotFoundError) as missing:
        await theirs.get(missing_id)
    with pytest.raises(interactions_errors.NotFoundError) as other:
        await theirs.get(made.id)
    assert str(other.value).replace(made.id, "X") == str(missing.value).replace(missing_id, "X")
    with pytest.raises(interactions_errors.NotFoundError):
        await theirs.delete(made.id)
    with pytest.raises(interactions_errors.NotFoundError):
        await theirs.create(model="m", previous_interaction_id=made.id, input="tell me")
    assert len(fake.bodies) == 1
    assert text_of(await mine.get(made.id)) == "ok"


async def test_store_false_leaves_no_row(make_store: Callable[..., Store]) -> None:
    store = make_store()
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream(), store=store)
    client = client_of(app)
    made = await client.create(model="m", input="hi", store=False)
    streamed = [e async for e in await client.create(model="m", input="hi", store=False, stream=True)]
    assert text_of(made) == "ok"
    assert any(e.event_type == "interaction.completed" for e in streamed)
    assert await store.usage(owner_of("key-a")) == 0
    assert not made.id.startswith("v1_")  # no stored id: the upstream's own
    kept = await client.create(model="m", input="hi")
    assert await store.usage(owner_of("key-a")) > 0
    assert text_of(await client.get(kept.id)) == "ok"
    assert all("store" not in body for body in fake.bodies)  # nothing asked of the upstream


async def test_a_responses_id_is_no_interaction(make_store: Callable[..., Store]) -> None:
    """The two APIs share the store, not their ids: each sees only its own kind of record."""
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream(), store=make_store())
    client = client_of(app)
    made = await client.create(model="m", input="hi")
    raw = raw_client(app)
    auth = {"authorization": "Bearer key-a"}
    assert (await raw.get(f"/v1/responses/{made.id}", headers=auth)).status_code == 404
    answer = await raw.post("/v1/responses", json={"model": "m", "input": "hi"}, headers=auth)
    rid = answer.json()["id"]
    goog = {"x-goog-api-key": "key-a"}
    assert (await raw.get(f"/v1beta/interactions/{rid}", headers=goog)).status_code == 404
    refused = await raw.post(
        "/v1beta/interactions",
        json={"model": "m", "input": "more", "previous_interaction_id": rid},
        headers=goog,
    )
    assert refused.status_code == 404
    assert (await raw.delete(f"/v1beta/interactions/{made.id}", headers=goog)).json() == {}
    assert (await raw.get(f"/v1beta/interactions/{made.id}", headers=goog)).status_code == 404


async def test_an_interactions_upstream_keeps_its_native_state(make_store: Callable[..., Store]) -> None:
    recording = INTERACTIONS.read_bytes()
    upstream_id = next(
        p["interaction"]["id"]
        for p in events_of(recording)
        if "interaction" in p and "id" in p["interaction"]
    )
    fake = Fake("google-interactions", [[recording]])
    app = create_app(upstream=fake.upstream(), store=make_store())
    client = client_of(app)
    first = await client.create(model="gemini-3-flash-preview", input="weather?", stream=False)
    assert first.id.startswith("v1_")
    assert first.id != upstream_id
    await client.create(model="gemini-3-flash-preview", input="and Oslo?", previous_interaction_id=first.id)
    assert fake.bodies[1]["previous_interaction_id"] == upstream_id  # the upstream's own id, passed on
    assert fake.bodies[1]["input"] == "and Oslo?"  # nothing expanded
    expanding = Fake("google-interactions", [[recording]])
    app = create_app(upstream=expanding.upstream(), store=make_store(), native_state=False)
    client = client_of(app)
    first = await client.create(model="gemini-3-flash-preview", input="weather?")
    await client.create(model="gemini-3-flash-preview", input="and Oslo?", previous_interaction_id=first.id)
    sent = expanding.bodies[1]
    assert "previous_interaction_id" not in sent
    assert sent["store"] is False  # the bridge keeps the state, the upstream nothing
    assert sent["input"][0] == {"type": "user_input", "content": [{"type": "text", "text": "weather?"}]}
    assert len(sent["input"]) > 2


async def test_without_a_store_the_field_is_still_refused(make_store: Callable[..., Store]) -> None:
    fake = Fake("anthropic", [anthropic_stream()])
    app = create_app(upstream=fake.upstream())
    with pytest.raises(interactions_errors.BadRequestError) as info:
        await client_of(app).create(model="m", input="more", previous_interaction_id="v1_prev")
    assert "previous_interaction_id" in str(info.value)
    assert fake.bodies == []
